-- corpq 0.1.0 -> 0.2.0 (ALTER EXTENSION corpq UPDATE).  Every change to the
-- catalog made by extension/sql/*.sql since 0.1.0 is appended here, in the
-- commit that makes it; `make update-check` (part of `make test`) fails,
-- naming the objects, when the result differs from a fresh install of 0.2.0
-- (docs/architecture.md, "A change to the catalog").  One group per change,
-- each under a comment naming the parts it follows; a new function that
-- 99_costs.sql names needs its ALTER FUNCTION ... COST here too.
\echo Use "ALTER EXTENSION corpq UPDATE" to load this file. \quit

-- Before anything: the extension's schema must be owned by the extension's
-- owner, grant CREATE to nobody else, and hold only the extension's own
-- functions, operators, types and tables.  Otherwise a role that controls it
-- could have planted an object this script would bind to (a function in a
-- CHECK, an operator) and run as the updating superuser (CVE-2022-2625's
-- class; docs/security.md).  Everything below runs with search_path
-- pg_catalog, pg_temp.
SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
DO $corpq_schema_check$
DECLARE
    ext pg_catalog.oid;
    ext_owner pg_catalog.oid;
    nsp pg_catalog.oid;
    nsp_owner pg_catalog.oid;
    stranger pg_catalog.text;
BEGIN
    SELECT e.oid, e.extowner, e.extnamespace INTO ext, ext_owner, nsp
      FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'corpq';
    nsp_owner := (SELECT n.nspowner FROM pg_catalog.pg_namespace n WHERE n.oid OPERATOR(pg_catalog.=) nsp);
    IF nsp_owner OPERATOR(pg_catalog.<>) ext_owner THEN
        RAISE EXCEPTION 'schema % of extension corpq is owned by role %, not by the extension''s owner %',
                        nsp::pg_catalog.regnamespace, nsp_owner::pg_catalog.regrole, ext_owner::pg_catalog.regrole
              USING ERRCODE = 'insufficient_privilege',
                    HINT = 'Another role controls the schema corpq was installed into: check that it holds only corpq''s objects, make the extension''s owner own it (ALTER SCHEMA ... OWNER TO), then update (docs/security.md).';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_namespace n, pg_catalog.aclexplode(n.nspacl) a
               WHERE n.oid OPERATOR(pg_catalog.=) nsp AND a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'
                 AND a.grantee OPERATOR(pg_catalog.<>) n.nspowner) THEN
        RAISE EXCEPTION 'schema % of extension corpq grants CREATE to a role other than its owner', nsp::pg_catalog.regnamespace
              USING ERRCODE = 'insufficient_privilege',
                    HINT = 'REVOKE CREATE ON SCHEMA ... FROM those roles and drop what they created in it, then update (docs/security.md).';
    END IF;
    SELECT o.what INTO stranger FROM (
        SELECT 'pg_proc'::pg_catalog.regclass AS cat, p.oid, p.oid::pg_catalog.regprocedure::pg_catalog.text AS what
          FROM pg_catalog.pg_proc p WHERE p.pronamespace OPERATOR(pg_catalog.=) nsp
        UNION ALL
        SELECT 'pg_operator'::pg_catalog.regclass, o.oid, o.oid::pg_catalog.regoperator::pg_catalog.text
          FROM pg_catalog.pg_operator o WHERE o.oprnamespace OPERATOR(pg_catalog.=) nsp
        UNION ALL
        SELECT 'pg_type'::pg_catalog.regclass, t.oid, t.oid::pg_catalog.regtype::pg_catalog.text
          FROM pg_catalog.pg_type t WHERE t.typnamespace OPERATOR(pg_catalog.=) nsp
           AND t.typtype OPERATOR(pg_catalog.<>) 'c' AND t.typcategory OPERATOR(pg_catalog.<>) 'A'
        UNION ALL
        SELECT 'pg_class'::pg_catalog.regclass, c.oid, c.oid::pg_catalog.regclass::pg_catalog.text
          FROM pg_catalog.pg_class c WHERE c.relnamespace OPERATOR(pg_catalog.=) nsp
           AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,v,m,f}'::pg_catalog."char"[])) o
     WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                        WHERE d.classid OPERATOR(pg_catalog.=) o.cat AND d.objid OPERATOR(pg_catalog.=) o.oid
                          AND d.refclassid OPERATOR(pg_catalog.=) 'pg_extension'::pg_catalog.regclass
                          AND d.refobjid OPERATOR(pg_catalog.=) ext AND d.deptype OPERATOR(pg_catalog.=) 'e')
     LIMIT 1;
    IF stranger IS NOT NULL THEN
        RAISE EXCEPTION 'schema % of extension corpq holds %, which is not part of the extension', nsp::pg_catalog.regnamespace, stranger
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    HINT = 'Only corpq''s own objects may be in its schema: inspect and drop that object, then update (docs/security.md).';
    END IF;
END
$corpq_schema_check$;

-- corpq.version() (extension/sql/05_version.sql)
CREATE FUNCTION corpq.version(OUT extension text, OUT library text, OUT build text,
                              OUT inference_kernel text, OUT int8_kernel text,
                              OUT blas_core text)
    RETURNS record
    AS 'MODULE_PATHNAME', 'corpq_version'
    LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.version() IS
    'the version of corpq''s catalog in this database, the version and build (git describe, or the release) of the loaded library, and the CPU paths this process picks: the float and int8 inference kernels and the OpenBLAS core (loaded if needed)';

-- filter_defaults(): alpha_ratio counts letters among the non-space
-- characters, at least 0.5 (extension/sql/94_filters.sql)
CREATE OR REPLACE FUNCTION corpq.filter_defaults() RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '[{"name": "length_ratio", "args": {"unit": "word"}, "threshold": 3},
             {"name": "alpha_ratio", "args": {"exclude_whitespace": true}, "threshold": 0.5},
             {"name": "terminal_punct", "threshold": -2},
             {"name": "numerals_match", "threshold": 0.5},
             {"name": "repetition", "threshold": 2},
             {"name": "html_tags"}]'::jsonb;
COMMENT ON FUNCTION corpq.filter_defaults() IS
    'the default filter spec: OpusFilter''s language-independent rule filters at its default thresholds, except alpha_ratio (letters among the non-space characters, at least 0.5: measured on real corpora, docs/filters.md); add char_script_ratio and langid with your scripts and languages';

-- score_histogram(): a spacing (linear, log, quantile) in a second form; the
-- 0.1.0 form stays, linear, for the views that call it (extension/sql/95_quality.sql)
-- The spacing comes second, so that this form and 0.1.0's (scores, bins,
-- lo, hi), kept for the views built on it, never match one call together:
-- score_histogram(q, 'log') or (q, spacing => 'log', bins => 40).
CREATE FUNCTION corpq.score_histogram(scores text, spacing text, bins int DEFAULT 20,
                                      lo float8 DEFAULT NULL, hi float8 DEFAULT NULL)
    RETURNS TABLE (domain text, bin int, bin_lo float8, bin_hi float8, pairs bigint, share float8)
    LANGUAGE plpgsql STABLE PARALLEL UNSAFE
    AS $$
BEGIN
    IF bins IS NULL OR bins < 1 OR bins > 1000 THEN
        RAISE EXCEPTION 'bins must be from 1 to 1000' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = pg_catalog.format('It is %s.', bins);
    END IF;
    IF spacing IS NULL OR spacing NOT IN ('linear', 'log', 'quantile') THEN
        RAISE EXCEPTION 'histogram spacing must be linear, log or quantile' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = pg_catalog.format('It is %s.', coalesce('"' || spacing || '"', 'NULL')),
            HINT = 'linear: bins of equal width; log: of equal ratio (positive scores); quantile: of equal counts.';
    END IF;
    IF (lo IS NOT NULL AND NOT lo BETWEEN -1e300 AND 1e300)
       OR (hi IS NOT NULL AND NOT hi BETWEEN -1e300 AND 1e300) OR lo >= hi THEN
        RAISE EXCEPTION 'histogram bounds must be finite with lo < hi' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF spacing = 'log' AND (lo <= 0 OR hi <= 0) THEN
        RAISE EXCEPTION 'log-spaced bins need positive bounds' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = pg_catalog.format('lo is %s, hi %s.', coalesce(lo::text, 'not given'), coalesce(hi::text, 'not given')),
            HINT = 'Leave lo out: it defaults to the smallest positive score (scores at or below 0 go to bin 0).';
    END IF;
    -- $1 lo, $2 hi, $3 bins, $4 spacing
    RETURN QUERY EXECUTE pg_catalog.format($q$
        WITH s AS MATERIALIZED (
            SELECT s.domain::text AS domain, s.score::float8 AS score
              FROM (%s
) AS s(domain, score)
             WHERE s.score IS NOT NULL AND s.score <> float8 'NaN'),
        -- default bounds: the range of the finite scores (positive ones for log)
        given AS (
            SELECT coalesce($1, pg_catalog.min(s.score), CASE WHEN $4 = 'log' THEN 1 ELSE 0 END) AS lo,
                   coalesce($2, pg_catalog.max(s.score), 1) AS hi
              FROM s WHERE s.score BETWEEN float8 '-1e300' AND float8 '1e300' AND ($4 <> 'log' OR s.score > 0)),
        -- one value (or none): one bin around it
        r AS (
            SELECT CASE WHEN g.lo < g.hi THEN g.lo WHEN $4 = 'log' THEN g.lo / 2 ELSE g.lo - 0.5 END AS lo,
                   CASE WHEN g.lo < g.hi THEN g.hi WHEN $4 = 'log' THEN g.lo * 2 ELSE g.lo - 0.5 + 1 END AS hi
              FROM given g),
        -- quantile: the inner edges, percentile_cont of the scores in [lo, hi] of all domains
        q AS (
            SELECT pg_catalog.percentile_cont(ARRAY(SELECT k::float8 / $3 FROM pg_catalog.generate_series(1, $3 - 1) k))
                   WITHIN GROUP (ORDER BY s.score) AS inner_edges
              FROM s, r WHERE $4 = 'quantile' AND s.score BETWEEN r.lo AND r.hi),
        e AS (
            SELECT r.lo, r.hi, ARRAY(
                     SELECT CASE WHEN k = 0 THEN r.lo WHEN k = $3 THEN r.hi
                                 WHEN $4 = 'log' THEN pg_catalog.power(r.lo, 1 - k::float8 / $3) * pg_catalog.power(r.hi, k::float8 / $3)
                                 WHEN $4 = 'quantile' AND q.inner_edges IS NOT NULL THEN q.inner_edges[k]
                                 ELSE r.lo + (r.hi - r.lo) * k / $3 END AS edge
                       FROM pg_catalog.generate_series(0, $3) k ORDER BY edge) AS edges
              FROM r, q),
        counted AS (
            SELECT s.domain,
                   CASE WHEN s.score < e.lo THEN 0 WHEN s.score > e.hi THEN $3 + 1
                        ELSE pg_catalog.width_bucket(s.score, e.edges[1:$3]) END AS bin,
                   pg_catalog.count(*) AS pairs
              FROM s, e GROUP BY 1, 2),
        domains AS (SELECT c.domain, pg_catalog.sum(c.pairs) AS total FROM counted c GROUP BY 1),
        grid AS (
            SELECT d.domain, d.total, g.bin FROM domains d CROSS JOIN pg_catalog.generate_series(1, $3) AS g(bin)
            UNION
            SELECT c.domain, d.total, c.bin FROM counted c JOIN domains d USING (domain)
             WHERE c.bin = 0 OR c.bin > $3)
        SELECT g.domain, g.bin,
               CASE WHEN g.bin = 0 THEN float8 '-Infinity' ELSE e.edges[g.bin] END,
               CASE WHEN g.bin > $3 THEN float8 'Infinity' ELSE e.edges[g.bin + 1] END,
               coalesce(c.pairs, 0)::bigint,
               coalesce(c.pairs, 0)::float8 / g.total::float8
          FROM grid g CROSS JOIN e
          LEFT JOIN counted c ON c.domain IS NOT DISTINCT FROM g.domain AND c.bin = g.bin
         ORDER BY g.domain, g.bin$q$, scores)
        USING lo, hi, bins, spacing;
END
$$;
COMMENT ON FUNCTION corpq.score_histogram(text, text, int, float8, float8) IS
    'histogram per domain of scores, a SELECT returning (domain, score), read once: bins bins over [lo, hi] (default: the finite scores'' range, positive ones for log), spaced linear (equal widths), log (equal ratios: lo > 0) or quantile (edges at the quantiles of all domains'' scores: equal counts overall, empty bins where scores tie); a score is in bin k when edge k <= score < edge k + 1 (the top edge in the last bin); every bin listed (pairs 0 included), bin 0 and bins + 1 for scores below lo and above hi when there are some; share = pairs / the domain''s scores; NULL and NaN scores are left out';
-- 0.1.0's form: linear bins.
CREATE OR REPLACE FUNCTION corpq.score_histogram(scores text, bins int DEFAULT 20,
                                      lo float8 DEFAULT NULL, hi float8 DEFAULT NULL)
    RETURNS TABLE (domain text, bin int, bin_lo float8, bin_hi float8, pairs bigint, share float8)
    LANGUAGE sql STABLE PARALLEL UNSAFE
    AS $$ SELECT * FROM corpq.score_histogram(scores, 'linear', bins, lo, hi) $$;
COMMENT ON FUNCTION corpq.score_histogram(text, int, float8, float8) IS
    'score_histogram with linear spacing: bins bins of equal width over [lo, hi] (default: the finite scores'' range)';


-- Scoring: a pair longer than the model accepts scores NULL (no rows for
-- token_scores and token_hits), where 0.1.0 raised an ERROR; each function
-- gets an overload with a last argument on_too_long ('null' or 'error'),
-- on the same C function (extension/sql/75_scoring.sql, 76_token_hits.sql).
-- 0.1.0's signatures stay as they are: views and expression indexes call
-- them, and a DROP would stop the update.  The overloads of uncertainty and
-- score take every argument (no parameter without a DEFAULT may follow one
-- with).
CREATE FUNCTION corpq.sent_prob(model text, src text, tgt text, on_too_long text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_sent_prob'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.sent_prob(model corpq.pinned_model, src text, tgt text, on_too_long text)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_sent_prob_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.sent_prob(text, text, text) IS
    'exp of the mean log-probability of the target tokens and </s> given the source, dropout off (data rejuvenation''s sentence probability); NULL for a side longer than the model accepts';
COMMENT ON FUNCTION corpq.sent_prob(text, text, text, text) IS
    'sent_prob; a side longer than the model accepts scores NULL (on_too_long ''null'') or is an ERROR (''error'')';
COMMENT ON FUNCTION corpq.sent_prob(corpq.pinned_model, text, text, text) IS
    'sent_prob with a pinned model version name@N and on_too_long (''null'' or ''error'')';

CREATE FUNCTION corpq.sent_logprob(model text, src text, tgt text, on_too_long text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_sent_logprob'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.sent_logprob(model corpq.pinned_model, src text, tgt text, on_too_long text)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_sent_logprob_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.sent_logprob(text, text, text) IS
    'sum of the log-probabilities (nats) of the target tokens and </s> given the source, dropout off; NULL for a side longer than the model accepts';
COMMENT ON FUNCTION corpq.sent_logprob(text, text, text, text) IS
    'sent_logprob; a side longer than the model accepts scores NULL (on_too_long ''null'') or is an ERROR (''error'')';
COMMENT ON FUNCTION corpq.sent_logprob(corpq.pinned_model, text, text, text) IS
    'sent_logprob with a pinned model version name@N and on_too_long (''null'' or ''error'')';

CREATE FUNCTION corpq.token_scores(model text, src text, tgt text, on_too_long text)
    RETURNS TABLE (pos int, token text, logprob float8, pred_token text,
                   pred_prob float8, entropy float8)
    AS 'MODULE_PATHNAME', 'corpq_token_scores'
    LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 30;
CREATE FUNCTION corpq.token_scores(model corpq.pinned_model, src text, tgt text, on_too_long text)
    RETURNS TABLE (pos int, token text, logprob float8, pred_token text,
                   pred_prob float8, entropy float8)
    AS 'MODULE_PATHNAME', 'corpq_token_scores_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 30;
COMMENT ON FUNCTION corpq.token_scores(text, text, text) IS
    'per target position (1-based, the last is </s>): the target subword, its log-probability, the most probable token, its probability and the entropy (nats) of the prediction, dropout off; no rows for a side longer than the model accepts';
COMMENT ON FUNCTION corpq.token_scores(text, text, text, text) IS
    'token_scores; a side longer than the model accepts gives no rows (on_too_long ''null'') or an ERROR (''error'')';
COMMENT ON FUNCTION corpq.token_scores(corpq.pinned_model, text, text, text) IS
    'token_scores with a pinned model version name@N and on_too_long (''null'' or ''error'')';

CREATE FUNCTION corpq.uncertainty(model text, src text, tgt text, measure text, passes int,
                                  seed bigint, on_too_long text)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_uncertainty'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.uncertainty(model corpq.pinned_model, src text, tgt text, measure text,
                                  passes int, seed bigint, on_too_long text)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_uncertainty_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.uncertainty(text, text, text, text, int, bigint) IS
    'MultiUAT model uncertainty of a pair: the measure (pretp, exptp, vartp, comev, entsent, enteos, exptp_geo, vartp_log, comev_log) averaged over passes Monte Carlo dropout forward passes; the masks depend only on seed, the pass and the pair, so the value is reproducible in every backend and worker; NULL for a side longer than the model accepts';
COMMENT ON FUNCTION corpq.uncertainty(text, text, text, text, int, bigint, text) IS
    'uncertainty with every argument given; a side longer than the model accepts scores NULL (on_too_long ''null'') or is an ERROR (''error'')';
COMMENT ON FUNCTION corpq.uncertainty(corpq.pinned_model, text, text, text, int, bigint, text) IS
    'uncertainty with a pinned model version name@N, every argument given and on_too_long (''null'' or ''error'')';

CREATE FUNCTION corpq.dual_xent(forward text, backward text, src text, tgt text, on_too_long text)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_dual_xent'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.dual_xent(forward corpq.pinned_model, backward corpq.pinned_model,
                                src text, tgt text, on_too_long text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_dual_xent_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.dual_xent(text, text, text, text) IS
    'dual conditional cross-entropy score of a pair (Junczys-Dowmunt, WMT 2018): exp(-(|H_f - H_b| + (H_f + H_b) / 2)) in (0, 1], H_f = -ln sent_prob(forward, src, tgt), H_b = -ln sent_prob(backward, tgt, src): high when both directions find the pair probable and agree; NULL for a side longer than a model accepts';
COMMENT ON FUNCTION corpq.dual_xent(text, text, text, text, text) IS
    'dual_xent; a side longer than a model accepts scores NULL (on_too_long ''null'') or is an ERROR (''error'')';
COMMENT ON FUNCTION corpq.dual_xent(corpq.pinned_model, corpq.pinned_model, text, text, text) IS
    'dual_xent with pinned model versions name@N and on_too_long (''null'' or ''error'')';

CREATE FUNCTION corpq.dual_xent_scores(forward text, backward text, corpus text, on_too_long text)
    RETURNS TABLE (id bigint, score float8)
    AS 'MODULE_PATHNAME', 'corpq_dual_xent_scores'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.dual_xent_scores(text, text, text) IS
    'dual_xent of every row of corpus, a SELECT returning (id, src, tgt), in batches (each direction''s pairs in length order, cut to corpq.max_batch_mb), with the models'' versions of the call''s start; the values equal dual_xent()''s; NULL src or tgt gives a NULL score, so does a side longer than a model accepts (a NOTICE counts them); a NULL argument is an error';
COMMENT ON FUNCTION corpq.dual_xent_scores(text, text, text, text) IS
    'dual_xent_scores; a side longer than a model accepts scores NULL, counted in a NOTICE (on_too_long ''null''), or stops with an ERROR (''error'')';

CREATE FUNCTION corpq.score(model text, corpus text, what text, batch_size int, measure text,
                            passes int, seed bigint, on_too_long text)
    RETURNS TABLE (id bigint, score float8)
    AS 'MODULE_PATHNAME', 'corpq_score'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.score(text, text, text, int, text, int, bigint) IS
    'score every row of corpus, a SELECT returning (id, src, tgt), in batches of batch_size pairs: what = sent_prob, sent_logprob or uncertainty (with measure, passes, seed); the values equal the per-row functions''; NULL src or tgt gives a NULL score, so does a side longer than the model accepts (a NOTICE counts them); a NULL argument is an error';
COMMENT ON FUNCTION corpq.score(text, text, text, int, text, int, bigint, text) IS
    'score with every argument given; a side longer than the model accepts scores NULL, counted in a NOTICE (on_too_long ''null''), or stops with an ERROR (''error'')';

CREATE FUNCTION corpq.token_hits(model text, src text, tgt text, on_too_long text)
    RETURNS TABLE (pos int, token text, hit boolean)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE ROWS 30
    BEGIN ATOMIC
        SELECT s.pos, s.token, s.pred_token = s.token
        FROM corpq.token_scores(model, src, tgt, on_too_long) s;
    END;
CREATE FUNCTION corpq.token_hits(model corpq.pinned_model, src text, tgt text, on_too_long text)
    RETURNS TABLE (pos int, token text, hit boolean)
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE ROWS 30
    BEGIN ATOMIC
        SELECT s.pos, s.token, s.pred_token = s.token
        FROM corpq.token_scores(model, src, tgt, on_too_long) s;
    END;
COMMENT ON FUNCTION corpq.token_hits(text, text, text) IS
    'per target position (1-based; the last is </s>): the gold subword and whether the model''s argmax under teacher forcing equals it, dropout off; no rows for a side longer than the model accepts';
COMMENT ON FUNCTION corpq.token_hits(text, text, text, text) IS
    'token_hits; a side longer than the model accepts gives no rows (on_too_long ''null'') or an ERROR (''error'')';
COMMENT ON FUNCTION corpq.token_hits(corpq.pinned_model, text, text, text) IS
    'token_hits with a pinned model version name@N and on_too_long (''null'' or ''error'')';

-- Version identity: corpq.issued_versions, the last version number each name
-- of a catalog with versions issued, kept after a drop
-- (extension/sql/70_models.sql).  It starts with the names this database
-- has, at their highest stored version: numbers issued under 0.1.0 and gone
-- since (dropped with their model) cannot be known.
CREATE TABLE corpq.issued_versions (
    catalog      text NOT NULL CHECK (catalog OPERATOR(pg_catalog.=) ANY (ARRAY['corpq.model_catalog', 'corpq.antap_models', 'corpq.classifier_catalog']::pg_catalog.text[])),
    name         text NOT NULL CHECK (name OPERATOR(pg_catalog.<>) '' AND pg_catalog.strpos(name, '@') OPERATOR(pg_catalog.=) 0),
    last_version int NOT NULL CHECK (last_version OPERATOR(pg_catalog.>=) 1),
    PRIMARY KEY (catalog, name)
);
COMMENT ON TABLE corpq.issued_versions IS
    'every name used in this database by a catalog with versions (models, ANTAP models, classifiers) and the last version number it issued; kept after the drop, so that a version number is never given to other weights';
SELECT pg_catalog.pg_extension_config_dump('corpq.issued_versions', '');
ALTER TABLE corpq.issued_versions ENABLE ROW LEVEL SECURITY;
CREATE POLICY issued_versions_read ON corpq.issued_versions FOR SELECT USING (true);
GRANT SELECT ON corpq.issued_versions TO PUBLIC;
INSERT INTO corpq.issued_versions (catalog, name, last_version)
SELECT 'corpq.model_catalog', c.name, pg_catalog.max(v.version)
  FROM corpq.model_catalog c JOIN corpq.model_versions v ON v.model OPERATOR(pg_catalog.=) c.id
 GROUP BY c.name
UNION ALL
SELECT 'corpq.antap_models', a.name, pg_catalog.max(v.version)
  FROM corpq.antap_models a JOIN corpq.antap_versions v ON v.model OPERATOR(pg_catalog.=) a.id
 GROUP BY a.name;

-- Jobs: how often recovery requeued a job after a crash-restart
-- (extension/sql/40_jobs.sql; 0 for the jobs already there).
ALTER TABLE corpq.jobs ADD COLUMN crash_requeues int NOT NULL DEFAULT 0;

-- Planner costs of the per-row functions (extension/sql/99_costs.sql sets
-- them by name; here by signature, the overloads created above included).
-- rule filters and duplicate keys
ALTER FUNCTION corpq.html_tags(text) COST 3;
ALTER FUNCTION corpq.text_length(text, text) COST 5;
ALTER FUNCTION corpq.alpha_ratio(text, boolean) COST 10;
ALTER FUNCTION corpq.numerals_match(text, text) COST 15;
ALTER FUNCTION corpq.dedup_key(text, text, text, text) COST 20;
ALTER FUNCTION corpq.length_ratio(text, text, text) COST 20;
ALTER FUNCTION corpq.terminal_punct_score(text, text) COST 20;
ALTER FUNCTION corpq.char_script_ratio(text, text) COST 30;
ALTER FUNCTION corpq.repetition(text, int, int, int) COST 100;
-- language identification
ALTER FUNCTION corpq.langid(text) COST 1500;
ALTER FUNCTION corpq.lang_is(text, text, float8) COST 1500;
-- filter specs
ALTER FUNCTION corpq.filter_keeps(text, text, jsonb) COST 1000;
ALTER FUNCTION corpq.filter_rejects(text, text, jsonb) COST 1000;
ALTER FUNCTION corpq.filter_stats_trans(internal, text, text, jsonb) COST 1000;
ALTER FUNCTION corpq.filter_stats_trans(internal, text, text, jsonb, int) COST 1000;
-- subwords and vocabularies
ALTER FUNCTION corpq.vocab_encode(text, text) COST 50;
ALTER FUNCTION corpq.bpe_apply(text, text) COST 80;
ALTER FUNCTION corpq.bpe_tokens(text, text) COST 100;
-- sentence metrics and the aggregates' transitions
ALTER FUNCTION corpq.bleu_tokenize(text, jsonb) COST 50;
ALTER FUNCTION corpq.bleu_trans(bigint[], text, text) COST 200;
ALTER FUNCTION corpq.bleu_trans(bigint[], text, text, jsonb) COST 200;
ALTER FUNCTION corpq.sentence_bleu(text, text, jsonb) COST 250;
ALTER FUNCTION corpq.chrf_trans(bigint[], text, text) COST 300;
ALTER FUNCTION corpq.chrf_trans(bigint[], text, text, jsonb) COST 300;
ALTER FUNCTION corpq.sentence_chrf(text, text, jsonb) COST 300;
-- lexicons
ALTER FUNCTION corpq.mono_uncertainty(text, text) COST 50;
ALTER FUNCTION corpq.word_rarity(text, text) COST 50;
ALTER FUNCTION corpq.align(text, text, text) COST 4000;
ALTER FUNCTION corpq.align_score(text, text, text) COST 4000;
ALTER FUNCTION corpq.coverage(text, text, text) COST 4000;
-- CAV counts of a pair; ANTAP's prediction of a token
ALTER FUNCTION corpq.cav_accumulate_trans(corpq.cav, text, text) COST 3000;
ALTER FUNCTION corpq.cav_accumulate_trans(corpq.cav, text, text, int) COST 3000;
ALTER FUNCTION corpq.cav_accumulate_trans(corpq.cav, text, text, int, text[]) COST 3000;
ALTER FUNCTION corpq.cav_accumulate_trans(corpq.cav, text, text, int, text[], text) COST 3000;
ALTER FUNCTION corpq.antap_predict(text, corpq.cav, text, text) COST 2500;
-- a model's forward pass (dual_xent two, uncertainty 30: its default passes)
ALTER FUNCTION corpq.sent_prob(text, text, text) COST 100000;
ALTER FUNCTION corpq.sent_prob(text, text, text, text) COST 100000;
ALTER FUNCTION corpq.sent_prob(corpq.pinned_model, text, text) COST 100000;
ALTER FUNCTION corpq.sent_prob(corpq.pinned_model, text, text, text) COST 100000;
ALTER FUNCTION corpq.sent_logprob(text, text, text) COST 100000;
ALTER FUNCTION corpq.sent_logprob(text, text, text, text) COST 100000;
ALTER FUNCTION corpq.sent_logprob(corpq.pinned_model, text, text) COST 100000;
ALTER FUNCTION corpq.sent_logprob(corpq.pinned_model, text, text, text) COST 100000;
ALTER FUNCTION corpq.dual_xent(text, text, text, text) COST 200000;
ALTER FUNCTION corpq.dual_xent(text, text, text, text, text) COST 200000;
ALTER FUNCTION corpq.dual_xent(corpq.pinned_model, corpq.pinned_model, text, text) COST 200000;
ALTER FUNCTION corpq.dual_xent(corpq.pinned_model, corpq.pinned_model, text, text, text) COST 200000;
ALTER FUNCTION corpq.uncertainty(text, text, text, text, int, bigint) COST 2500000;
ALTER FUNCTION corpq.uncertainty(text, text, text, text, int, bigint, text) COST 2500000;
ALTER FUNCTION corpq.uncertainty(corpq.pinned_model, text, text, text, int, bigint) COST 2500000;
ALTER FUNCTION corpq.uncertainty(corpq.pinned_model, text, text, text, int, bigint, text) COST 2500000;
-- beam search
ALTER FUNCTION corpq.translate(text, text, jsonb) COST 10000000;
ALTER FUNCTION corpq.translate(corpq.pinned_model, text, jsonb) COST 10000000;

-- ---- corpq.jobs.threads: a job's threads, resolved once at submission and
-- set by the worker before the kind's function runs (extension/sql/40_jobs.sql)
ALTER TABLE corpq.jobs ADD COLUMN threads int NOT NULL DEFAULT 1 CHECK (threads OPERATOR(pg_catalog.>=) 1);

-- ---- corpq.score_job(): scoring a table as a row job (extension/sql/75_scoring.sql)
CREATE FUNCTION corpq.score_job(model text, corpus text, target_table regclass,
                                options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_score_job'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.score_job(text, text, regclass, jsonb) IS
    'score every row of corpus, a SELECT returning (id, src, tgt) in a stable order, as a background job that inserts (id, score) into target_table (id bigint and one double precision column per score: score, or the names of option columns) in committed chunks of chunk_rows rows; returns the job id at once; options: what (sent_prob, sent_logprob, uncertainty with measure, passes, seed, dual_xent with backward; several separated by commas), columns, batch_size, chunk_rows, threads, skip_existing (only ids not yet in the target), on_too_long (null or error); the values equal the per-row functions''';

-- ---- WordPiece segmenters (extension/sql/25_wordpiece.sql; a bpe_models version)
ALTER TABLE corpq.bpe_models DROP CONSTRAINT bpe_models_version_check;
ALTER TABLE corpq.bpe_models ADD CONSTRAINT bpe_models_version_check
    CHECK (version OPERATOR(pg_catalog.=) ANY (ARRAY['0.1', '0.2', 'sentencepiece', 'wordpiece']::pg_catalog.text[]));
-- ---------------------------------------------------------------------------
-- WordPiece segmenters (the vocab.txt of BERT / LaBSE checkpoints,
-- docs/text.md): a segmenter of the BPE catalog, a corpq.bpe_models row with
-- version 'wordpiece' (n_merges: its tokens) and its tokens and resolved
-- options here.  Same sharing rules as BPE models: all read, owners drop
-- (corpq.bpe_drop), corpq's functions write.
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.wordpiece_models (
    model    text PRIMARY KEY REFERENCES corpq.bpe_models (name) ON DELETE CASCADE,
    options  jsonb NOT NULL,
    tokens   text[] NOT NULL CHECK (pg_catalog.cardinality(tokens) OPERATOR(pg_catalog.>=) 1)
);
COMMENT ON TABLE corpq.wordpiece_models IS
    'the tokens (id = array position - 1, the line of vocab.txt) and resolved options of each segmenter whose corpq.bpe_models version is ''wordpiece''';
SELECT pg_catalog.pg_extension_config_dump('corpq.wordpiece_models', '');

ALTER TABLE corpq.wordpiece_models ENABLE ROW LEVEL SECURITY;
CREATE POLICY wordpiece_models_read ON corpq.wordpiece_models FOR SELECT USING (true);
GRANT SELECT ON corpq.wordpiece_models TO PUBLIC;

CREATE FUNCTION corpq.wordpiece_import(name text, vocab text, options jsonb DEFAULT '{}')
    RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_wordpiece_import'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.wordpiece_import(text, text, jsonb) IS
    'store a BERT vocab.txt (one token per line, "##" before continuations) with tokenizer options (do_lower_case, strip_accents, tokenize_chinese_chars, max_input_chars_per_word, unk/sep/pad/cls/mask_token, variant) as WordPiece segmenter name, usable wherever a BPE name is; returns its number of tokens';

-- catalog_fingerprint(): WordPiece models' tokens and options count too
-- (extension/sql/90_scale.sql)
CREATE OR REPLACE FUNCTION corpq.catalog_fingerprint()
    RETURNS TABLE (kind text, name text, version int, fingerprint text)
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT 'extension', e.extname::text, NULL::int, e.extversion
  FROM pg_extension e WHERE e.extname = 'corpq'
UNION ALL
SELECT 'bpe', b.name, NULL,
       md5(b.version || E'\n' || coalesce((SELECT string_agg(m.left_symbol || ' ' || m.right_symbol,
                                                             E'\n' ORDER BY m.rank)
                                             FROM corpq.bpe_merges m WHERE m.model = b.name), '')
           || coalesce((SELECT md5(p.proto) FROM corpq.spm_models p WHERE p.model = b.name), '')
           || coalesce((SELECT md5(w.options::text || E'\n' || w.tokens::text)
                          FROM corpq.wordpiece_models w WHERE w.model = b.name), ''))
  FROM corpq.bpe_models b
UNION ALL
SELECT 'vocabulary', v.name, NULL,
       md5(coalesce(v.bpe, '') || E'\n' || v.size || E'\n' ||
           coalesce((SELECT string_agg(t.id || ' ' || t.token, E'\n' ORDER BY t.id)
                       FROM corpq.vocabulary_tokens t WHERE t.vocabulary = v.name), ''))
  FROM corpq.vocabularies v
UNION ALL
-- the stored checksum is the image's CRC-32 trailer, verified on import
SELECT 'model', c.name, w.version,
       md5(c.config::text || E'\n' || c.src_vocab || E'\n' || c.tgt_vocab || E'\n' ||
           w.bytes || E'\n' || w.checksum)
  FROM corpq.model_catalog c JOIN corpq.model_versions w ON w.model = c.id
UNION ALL
SELECT 'lexicon', l.name, NULL,
       md5(l.options::text || E'\n' || md5(m.model) || E'\n' ||
           md5(m.src_tokens::text || E'\n' || m.tgt_tokens::text || E'\n' ||
               m.src_counts::text || E'\n' || m.src_links::text || E'\n' || m.src_entropy::text))
  FROM corpq.lexicons l JOIN corpq.lexicon_models m ON m.lexicon = l.name
UNION ALL
-- the stored checksums are the weight files' CRC-32 trailers
SELECT 'antap', a.name, v.version,
       md5(v.config::text || E'\n' || v.checksum_i || E'\n' || v.checksum_ii)
  FROM corpq.antap_models a JOIN corpq.antap_versions v ON v.model = a.id
$$;
COMMENT ON FUNCTION corpq.catalog_fingerprint() IS
    'one row per catalog object that scoring depends on: the extension version, BPE models (merges), SentencePiece models (their bytes) and WordPiece models (tokens and options), vocabularies (segmentation, tokens by id), model versions (configuration, vocabularies, size, CRC-32 of the weights), lexicons (options, serialised models), ANTAP versions (architecture, CRC-32 of both states); equal fingerprints on two servers mean equal results';

-- ---- mining over vectors (extension/sql/89_embed.sql)
-- Runs caller-supplied queries through SPI: not in parallel workers.
CREATE FUNCTION corpq.mine_vectors(src_query text, tgt_query text, options jsonb DEFAULT '{}')
    RETURNS TABLE (src_id bigint, tgt_id bigint, cosine float8, margin float8)
    AS 'MODULE_PATHNAME', 'corpq_mine_vectors'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.mine_vectors(text, text, jsonb) IS
    'margin-based mining: src_query and tgt_query return (id, embedding real[]) of one dimension (normalised here; rows with a NULL id or embedding skipped); for each source, its k nearest targets by cosine (exact search), the one of largest ratio margin cos / ((r(src) + r(tgt)) / 2), r the mean cosine to the k nearest neighbours on the other side; options k (4), mutual (false: with true only pairs that are each other''s best), min_margin, block_rows, block_cols; ties go to the smaller id; memory bounded by work_mem; threads: corpq.threads';

CREATE FUNCTION corpq.margin(cosine float8, src_knn_mean float8, tgt_knn_mean float8) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_margin'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.margin(float8, float8, float8) IS
    'the ratio margin of Artetxe & Schwenk (2019): cosine / ((src_knn_mean + tgt_knn_mean) / 2); NULL when src_knn_mean + tgt_knn_mean is not positive';

CREATE FUNCTION corpq.knn_mean(cosines float8[], k int DEFAULT 4) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_knn_mean'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.knn_mean(float8[], int) IS
    'a sentence''s mean cosine to its k nearest neighbours, from its cosines to candidates: the mean of the k largest (all of them when there are fewer), NULL elements skipped, NULL when none is left';

-- ---- Citus: score_job_distributed, worker_job_progress and model_pin
-- (extension/sql/90_scale.sql)
-- The pinned name@N of a model spec (a name: its latest version here), or ERROR.
CREATE FUNCTION corpq.model_pin(spec text)
    RETURNS text
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    pinned text;
    named  boolean := spec !~ '^[^@]+@[1-9][0-9]*$';
BEGIN
    IF named AND strpos(spec, '@') > 0 THEN
        RAISE EXCEPTION 'invalid model version in "%"', spec
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Write a model name for its latest version or name@N for version N >= 1.';
    END IF;
    SELECT format('%s@%s', c.name, v.version) INTO pinned
      FROM corpq.model_catalog c JOIN corpq.model_versions v ON v.model = c.id
     WHERE c.name = CASE WHEN named THEN spec ELSE regexp_replace(spec, '@[0-9]+$', '') END
       AND (named OR v.version = substring(spec FROM '@([0-9]+)$')::int)
     ORDER BY v.version DESC LIMIT 1;
    IF pinned IS NULL THEN
        RAISE EXCEPTION 'model "%" does not exist', spec USING ERRCODE = 'undefined_object';
    END IF;
    RETURN pinned;
END
$$;
COMMENT ON FUNCTION corpq.model_pin(text) IS
    'the version a model name means now, as name@N (name@N itself when that version exists); ERROR for a model or version that does not exist';

CREATE FUNCTION corpq.score_job_distributed(model text, corpus regclass, target_table regclass,
                                            options jsonb DEFAULT NULL)
    RETURNS TABLE (node text, job bigint)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    opts     jsonb := coalesce(options, '{}');
    pins     text[];
    keys     text[];
    t        record;
    w        record;
    names    text[];
    ports    int[];
    queries  text[];
    fp       jsonb;
    done_n   text[] := '{}';
    done_p   int[] := '{}';
    done_j   bigint[] := '{}';
    failure  text;
BEGIN
    IF model IS NULL OR corpus IS NULL OR target_table IS NULL THEN
        RAISE EXCEPTION 'model, corpus and target_table must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF to_regproc('pg_catalog.master_run_on_worker') IS NULL THEN
        RAISE EXCEPTION 'corpq.score_job_distributed() scores the shards of a Citus table on their nodes, and Citus is not installed in this database'
            USING ERRCODE = 'undefined_function', HINT = 'On one server, use corpq.score_job().';
    END IF;
    -- both distributed by hash of id, in one co-location group
    FOR t IN SELECT rel, p.partmethod, p.colocationid,
                    CASE WHEN p.partmethod = 'h' THEN column_to_column_name(p.logicalrelid, p.partkey) END AS col
               FROM unnest(ARRAY[corpus, target_table]) rel
               LEFT JOIN pg_dist_partition p ON p.logicalrelid = rel
    LOOP
        IF t.partmethod IS DISTINCT FROM 'h' OR t.col IS DISTINCT FROM 'id' THEN
            RAISE EXCEPTION 'table % is not a Citus table distributed by column id', t.rel
                USING ERRCODE = 'wrong_object_type',
                      HINT = format('SELECT create_distributed_table(%L, ''id''%s);', t.rel,
                                    CASE WHEN t.rel = target_table THEN format(', colocate_with => %L', corpus) END);
        END IF;
    END LOOP;
    IF (SELECT count(DISTINCT p.colocationid) FROM pg_dist_partition p
         WHERE p.logicalrelid IN (corpus, target_table)) <> 1 THEN
        RAISE EXCEPTION 'target table % is not co-located with %', target_table, corpus
            USING ERRCODE = 'wrong_object_type',
                  DETAIL = 'Each node writes the scores of its shards into its own shards of the target.',
                  HINT = format('SELECT alter_distributed_table(%L, colocate_with => %L);', target_table, corpus);
    END IF;
    -- the versions of now, the same on every node
    pins := ARRAY[corpq.model_pin(model)];
    IF opts ? 'backward' AND jsonb_typeof(opts -> 'backward') = 'string' THEN
        pins := pins || corpq.model_pin(opts ->> 'backward');
        opts := jsonb_set(opts, '{backward}', to_jsonb(pins[2]));
    END IF;
    -- what the scores depend on: the corpq version, the model versions,
    -- their vocabularies and the vocabularies' segmenters
    SELECT array_agg(k) INTO keys FROM (
        SELECT 'extension|corpq|' AS k
        UNION SELECT format('model|%s|%s', c.name, v.version)
          FROM corpq.model_catalog c JOIN corpq.model_versions v ON v.model = c.id
         WHERE format('%s@%s', c.name, v.version) = ANY (pins)
        UNION SELECT format('vocabulary|%s|', x.name)
          FROM corpq.model_catalog c, unnest(ARRAY[c.src_vocab, c.tgt_vocab]) x (name)
         WHERE c.name = ANY (SELECT regexp_replace(p, '@[0-9]+$', '') FROM unnest(pins) p)
        UNION SELECT format('bpe|%s|', b.bpe)
          FROM corpq.vocabularies b JOIN corpq.model_catalog c ON b.name IN (c.src_vocab, c.tgt_vocab)
         WHERE c.name = ANY (SELECT regexp_replace(p, '@[0-9]+$', '') FROM unnest(pins) p) AND b.bpe IS NOT NULL
    ) s;
    -- per node, the query over its shards (one placement per shard)
    SELECT array_agg(q.nodename ORDER BY q.nodename, q.nodeport), array_agg(q.nodeport ORDER BY q.nodename, q.nodeport),
           array_agg(q.query ORDER BY q.nodename, q.nodeport)
      INTO names, ports, queries
      FROM (SELECT n.nodename, n.nodeport,
                   format(E'SELECT id, src, tgt FROM (\n%s\n) AS shards ORDER BY id',
                          string_agg(format('SELECT id, src, tgt FROM %s%s',
                                            -- Citus leaves the schema out for public
                                            CASE WHEN c.relnamespace = 'public'::regnamespace THEN 'public.' END,
                                            shard_name(corpus, s.shardid)),
                                     E'\nUNION ALL\n' ORDER BY s.shardid)) AS query
              FROM (SELECT DISTINCT ON (d.shardid) d.shardid, pl.groupid
                      FROM pg_dist_shard d JOIN pg_dist_placement pl ON pl.shardid = d.shardid
                     WHERE d.logicalrelid = corpus ORDER BY d.shardid, pl.groupid) s
              JOIN pg_dist_node n ON n.groupid = s.groupid AND n.noderole = 'primary'
              JOIN pg_class c ON c.oid = corpus
             GROUP BY n.nodename, n.nodeport) q;
    -- every node has this server's fingerprints for keys (the rest of its
    -- catalog is not compared: this server's stands in for it)
    FOR w IN SELECT * FROM master_run_on_worker(names, ports,
                 array_fill('SELECT coalesce(pg_catalog.json_agg(f), ''[]''::json) FROM corpq.catalog_fingerprints f'::text,
                            ARRAY[cardinality(names)]), true)
    LOOP
        IF NOT w.success THEN
            RAISE EXCEPTION 'could not read the corpq catalog of node "%:%"', w.node_name, w.node_port
                USING ERRCODE = 'connection_failure', DETAIL = w.result;
        END IF;
        SELECT coalesce(jsonb_agg(f), '[]') INTO fp FROM (
            SELECT * FROM jsonb_to_recordset(w.result::jsonb) AS x (kind text, name text, version int, fingerprint text)
             WHERE format('%s|%s|%s', x.kind, x.name, x.version) = ANY (keys)
            UNION ALL
            SELECT * FROM corpq.catalog_fingerprint() h
             WHERE format('%s|%s|%s', h.kind, h.name, h.version) <> ALL (keys)) f;
        PERFORM corpq.catalog_check_node(format('node "%s:%s"', w.node_name, w.node_port), fp);
    END LOOP;
    -- submit everywhere; if a node refuses, cancel what the others started
    FOR w IN SELECT * FROM master_run_on_worker(names, ports,
                 ARRAY(SELECT format('SELECT corpq.score_job(%L, %L, %L::regclass, %L::jsonb)',
                                     pins[1], q, target_table::text, opts)
                         FROM unnest(queries) WITH ORDINALITY u (q, i) ORDER BY i), true)
    LOOP
        IF w.success THEN
            done_n := done_n || w.node_name;
            done_p := done_p || w.node_port;
            done_j := done_j || w.result::bigint;
            node := format('%s:%s', w.node_name, w.node_port);
            job := w.result::bigint;
            RETURN NEXT;
        ELSIF failure IS NULL THEN
            failure := format('node "%s:%s": %s', w.node_name, w.node_port, w.result);
        END IF;
    END LOOP;
    IF failure IS NOT NULL AND cardinality(done_j) = 0 THEN
        RAISE EXCEPTION 'could not submit the score job on %', failure USING ERRCODE = 'external_routine_exception';
    ELSIF failure IS NOT NULL THEN
        PERFORM * FROM master_run_on_worker(done_n, done_p,
            ARRAY(SELECT format('SELECT corpq.job_cancel(%s)', j) FROM unnest(done_j) WITH ORDINALITY u (j, i) ORDER BY i),
            true);
        RAISE EXCEPTION 'could not submit the score job on %', failure
            USING ERRCODE = 'external_routine_exception',
                  DETAIL = format('The jobs it started on the other nodes were cancelled: %s.',
                                  (SELECT string_agg(format('%s:%s job %s', n, p, j), ', ')
                                     FROM unnest(done_n, done_p, done_j) u (n, p, j)));
    END IF;
END
$$;
COMMENT ON FUNCTION corpq.score_job_distributed(text, regclass, regclass, jsonb) IS
    'on a Citus coordinator: one corpq.score_job per node holding shards of corpus (distributed by id), over that node''s shards, into target_table (co-located with corpus), with the model pinned here and checked on every node (its version, vocabularies and segmenters must have this server''s fingerprints); returns each node (host:port) and its job id there; if a node refuses the job, the others'' jobs are cancelled and the call fails naming it';

-- The calling role's queued and running jobs on every Citus worker
-- (corpq.job_progress there, read through run_command_on_workers): a worker
-- that cannot be read gives one row with its error and nothing else.
CREATE FUNCTION corpq.worker_job_progress()
    RETURNS TABLE (node text, id bigint, kind text, state text, phase text, done float8, total float8,
                   unit text, percent numeric, rate float8, eta interval, figures jsonb, error text)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    w record;
BEGIN
    IF to_regproc('pg_catalog.run_command_on_workers') IS NULL THEN
        RAISE EXCEPTION 'corpq.worker_job_progress() reads the jobs of the workers of a Citus coordinator, and Citus is not installed in this database'
            USING ERRCODE = 'undefined_function', HINT = 'On one server, read corpq.job_progress.';
    END IF;
    FOR w IN EXECUTE
        $q$SELECT nodename, nodeport, success, result
             FROM pg_catalog.run_command_on_workers(
                 'SELECT coalesce(pg_catalog.json_agg(p), ''[]''::json) FROM corpq.job_progress p')
            ORDER BY nodename, nodeport$q$
    LOOP
        node := format('%s:%s', w.nodename, w.nodeport);
        IF NOT w.success THEN
            error := w.result;
            RETURN NEXT;
            CONTINUE;
        END IF;
        RETURN QUERY
            SELECT node, p.id, p.kind, p.state, p.phase, p.done, p.total, p.unit, p.percent, p.rate,
                   p.eta, p.figures, NULL::text
              FROM json_to_recordset(w.result::json)
                   AS p (id bigint, kind text, state text, phase text, done float8, total float8,
                         unit text, percent numeric, rate float8, eta interval, figures jsonb)
             ORDER BY p.id;
    END LOOP;
END
$$;
COMMENT ON FUNCTION corpq.worker_job_progress() IS
    'on a Citus coordinator: corpq.job_progress of every active worker (the calling role''s queued and running jobs there), one row per job with its node (host:port); a worker that cannot be read gives one row with only node and error';

-- ---- sentence vectors from encoder models (extension/sql/89_embed.sql)
CREATE FUNCTION corpq.embed(model text, sentence text, on_too_long text DEFAULT 'null')
    RETURNS real[]
    AS 'MODULE_PATHNAME', 'corpq_embed'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.embed(model corpq.pinned_model, sentence text, on_too_long text DEFAULT 'null')
    RETURNS real[]
    AS 'MODULE_PATHNAME', 'corpq_embed_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.embed(text, text, text) IS
    'the sentence''s vector from an encoder model: d_model values of unit length (pooled and L2-normalised), dropout off; a sentence longer than the model accepts (max_positions - 2 tokens) gives NULL (on_too_long ''null'') or an ERROR (''error'')';
COMMENT ON FUNCTION corpq.embed(corpq.pinned_model, text, text) IS
    'embed with a pinned model version name@N';
ALTER FUNCTION corpq.embed(text, text, text) COST 25000;
ALTER FUNCTION corpq.embed(corpq.pinned_model, text, text) COST 25000;

-- ---- corpq.embed_rows(): a query's vectors in one statement (extension/sql/89_embed.sql)
-- The vectors of a query's rows in one statement, batched as score() batches.
-- Runs the caller's query through SPI: not in parallel workers.
CREATE FUNCTION corpq.embed_rows(model text, corpus text, options jsonb DEFAULT '{}')
    RETURNS TABLE (id bigint, embedding real[])
    AS 'MODULE_PATHNAME', 'corpq_embed_rows_srf'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.embed_rows(text, text, jsonb) IS
    'embed every row of corpus, a SELECT returning (id, sentence), with an encoder model, in the query''s order: sentences ordered by length and embedded batch_size at a time (option batch_size, 64); each vector equals corpq.embed()''s; a NULL sentence gives a NULL vector, so does one longer than the model accepts (a NOTICE counts them; option on_too_long ''error'' stops instead); a NULL model or corpus is an error';

-- ---- corpq.embed_job(): embedding a table as a row job (extension/sql/89_embed.sql)
-- A chunk's vectors reach the job's INSERT as one array of these: PostgreSQL
-- has no arrays of arrays, but arrays of a domain over real[].
CREATE DOMAIN corpq.real_vector AS real[];
COMMENT ON DOMAIN corpq.real_vector IS
    'a real[] vector as an element of an array: how an embedding job passes a chunk''s vectors to its INSERT';

CREATE FUNCTION corpq.embed_job(model text, corpus text, target_table regclass,
                                options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_embed_job'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.embed_job(text, text, regclass, jsonb) IS
    'embed every row of corpus, a SELECT returning (id, sentence) in a stable order, with an encoder model (pinned at submission) as a background job that inserts (id, embedding) into target_table (id bigint and a real[] column, or a column of a type real[] casts to on assignment, as pgvector''s vector of the model''s dimension) in committed chunks of chunk_rows rows; returns the job id at once; options: column (embedding), batch_size, chunk_rows, threads, skip_existing (only ids not yet in the target), on_too_long (null or error); a NULL sentence, and one too long for the model, gets a NULL vector; each vector equals corpq.embed(model@N, sentence)';

-- ---- mining on sentences, the embedding_cosine score (extension/sql/89_embed.sql)
CREATE FUNCTION corpq.mine_pairs(model text, src_query text, tgt_query text, options jsonb DEFAULT '{}')
    RETURNS TABLE (src_id bigint, tgt_id bigint, cosine float8, margin float8)
    AS 'MODULE_PATHNAME', 'corpq_mine_pairs'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.mine_pairs(text, text, text, jsonb) IS
    'margin-based mining on sentences: src_query and tgt_query return (id, sentence text) (rows with a NULL id or sentence skipped), each sentence embedded with the encoder model (its latest version when the call starts, or name@N), in batches as the rows are read; then as mine_vectors over those vectors, with the same result; options those of mine_vectors (k 4, mutual, min_margin, block_rows, block_cols) and batch_size (64), on_too_long (null: a sentence longer than the model accepts is left out, counted in a NOTICE; error); memory: the vectors bounded by work_mem, the embedding by corpq.max_batch_mb; threads: corpq.threads';
CREATE FUNCTION corpq.embedding_cosine(model text, src text, tgt text, on_too_long text DEFAULT 'null')
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_embedding_cosine'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION corpq.embedding_cosine(model corpq.pinned_model, src text, tgt text,
                                       on_too_long text DEFAULT 'null')
    RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_embedding_cosine_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.embedding_cosine(text, text, text, text) IS
    'the cosine of src''s and tgt''s vectors from an encoder model (the dot product of embed(model, src) and embed(model, tgt), summed in double in order), in [-1, 1]; NULL when a side is longer than the model accepts (on_too_long ''null'') or an ERROR (''error''); the score of the embedding_cosine filter';
COMMENT ON FUNCTION corpq.embedding_cosine(corpq.pinned_model, text, text, text) IS
    'embedding_cosine with a pinned model version name@N';
ALTER FUNCTION corpq.embedding_cosine(text, text, text, text) COST 50000;
ALTER FUNCTION corpq.embedding_cosine(corpq.pinned_model, text, text, text) COST 50000;

-- ---- one chunk table for every row job (extension/sql/41_row_jobs.sql):
-- corpq.translate_chunks of 0.1.0 gives its rows, with their values, to
-- corpq.row_job_chunks and goes (its counters as the kind's jsonb object,
-- decode_seconds as seconds)
-- ---------------------------------------------------------------------------
-- Row jobs (kinds 'translate', 'score', 'embed': extension/pg/jobs/row_job.h)
-- write the rows of a query into the caller's table in committed chunks;
-- this table records each chunk of every row job, so that a job resumes
-- after a crash from its last chunk.  What a chunk's rows came to is the
-- kind's counters, summed over the job's rows so far: a jsonb object of
-- integers (translate: translated, tokens; score: scored, too_long, tokens;
-- embed: embedded, too_long, tokens).  Rows are visible to members of the
-- job owner's role.
-- ---------------------------------------------------------------------------
CREATE TABLE corpq.row_job_chunks (
    job            bigint NOT NULL REFERENCES corpq.jobs (id) ON DELETE CASCADE,
    chunk          int NOT NULL CHECK (chunk OPERATOR(pg_catalog.>=) 1),
    rows_done      bigint NOT NULL,
    counters       jsonb NOT NULL CHECK (pg_catalog.jsonb_typeof(counters) OPERATOR(pg_catalog.=) 'object'),
    rows_hash      bigint NOT NULL,
    seconds        float8 NOT NULL,
    owner          regrole NOT NULL DEFAULT current_user::regrole,
    committed      timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    PRIMARY KEY (job, chunk)
);
COMMENT ON TABLE corpq.row_job_chunks IS
    'one row per chunk a row job (translate_job, score_job, embed_job) committed: query rows done so far (in the query''s order), the kind''s counters over those rows (translated, tokens; scored, too_long, tokens; embedded, too_long, tokens), a hash of those rows (checked on resume), seconds the kind spent computing in the attempt';
SELECT pg_catalog.pg_extension_config_dump('corpq.row_job_chunks', '');
ALTER TABLE corpq.row_job_chunks ENABLE ROW LEVEL SECURITY;
CREATE POLICY row_job_chunks_owner ON corpq.row_job_chunks FOR SELECT
    USING (pg_catalog.pg_has_role(current_user, owner, 'MEMBER'));
GRANT SELECT ON corpq.row_job_chunks TO PUBLIC;
INSERT INTO corpq.row_job_chunks (job, chunk, rows_done, counters, rows_hash, seconds, owner, committed)
    SELECT job, chunk, rows_done,
           pg_catalog.jsonb_build_object('translated', translated, 'tokens', tokens),
           rows_hash, decode_seconds, owner, committed
      FROM corpq.translate_chunks;
-- out of the extension first: that also takes it out of the extension's
-- dump list (pg_extension.extconfig), which a plain DROP TABLE would leave
ALTER EXTENSION corpq DROP TABLE corpq.translate_chunks;
DROP TABLE corpq.translate_chunks;

-- corpq.job_progress never shows 100% before the end nor a negative ETA, and
-- no ETA without a total (extension/sql/40_jobs.sql)
CREATE OR REPLACE VIEW corpq.job_progress WITH (security_invoker = true) AS
SELECT j.id, j.kind, j.owner, j.state,
       p.doc ->> 'phase' AS phase,
       (p.doc ->> 'done')::float8 AS done,
       (p.doc ->> 'total')::float8 AS total,
       p.doc ->> 'unit' AS unit,
       -- the view lists only queued and running jobs: never 100% before the
       -- end, never a negative ETA (an estimate the run has passed), no ETA
       -- without a total
       LEAST(pg_catalog.round((100 * (p.doc ->> 'done')::float8
                               / NULLIF((p.doc ->> 'total')::float8, 0))::numeric, 1),
             99.9) AS percent,
       (p.doc ->> 'rate')::float8 AS rate,
       CASE WHEN (p.doc ->> 'rate')::float8 > 0 AND (p.doc ->> 'total')::float8 > 0
            THEN pg_catalog.make_interval(secs => GREATEST((p.doc ->> 'total')::float8
                                                           - (p.doc ->> 'done')::float8, 0)
                                                  / (p.doc ->> 'rate')::float8) END AS eta,
       p.doc -> 'figures' AS figures,
       j.started, now() - j.started AS elapsed, j.worker_pid
FROM corpq.jobs j
LEFT JOIN LATERAL (
    SELECT a.query::jsonb AS doc FROM pg_catalog.pg_stat_activity a
    WHERE a.pid = j.worker_pid AND a.backend_type = 'corpq job'
      AND a.query LIKE '{"job": %' AND (a.query::jsonb ->> 'job')::bigint = j.id
) p ON true
WHERE j.state IN ('queued', 'running');

-- ---- job_wait(id, timeout, raise): a failed or cancelled job can be an
-- ERROR (extension/sql/40_jobs.sql); a new parameter is a new signature
DROP FUNCTION corpq.job_wait(bigint, interval);
CREATE FUNCTION corpq.job_wait(id bigint, timeout interval DEFAULT NULL, raise boolean DEFAULT false) RETURNS text
    AS 'MODULE_PATHNAME', 'corpq_job_wait'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.job_wait(bigint, interval, boolean) IS
    'wait until the job ends (or the timeout passes) and return its state; with raise, a failed job is an ERROR (SQLSTATE 38000) carrying its error, a cancelled one an ERROR (57000), and a timeout still returns the state';

-- ---- vocab_build: max_size NULL (the default) means up to 32000; a
-- max_size given and not reached gets a NOTICE (extension/sql/30_vocab.sql)
CREATE OR REPLACE FUNCTION corpq.vocab_build(name text, corpus text, bpe text DEFAULT NULL,
                                             max_size int DEFAULT NULL, min_count int DEFAULT 1)
    RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_vocab_build'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.vocab_build(text, text, text, int, int) IS
    'count the tokens of corpus (a SELECT returning one text column) segmented with BPE model bpe (NULL or ''whitespace'' = whitespace) and store vocabulary name: the 4 reserved tokens, then the max_size - 4 most frequent tokens with count >= min_count (max_size NULL: up to 32000); returns its size, with a NOTICE saying why when it is smaller than a max_size given';

-- corpq.synthetic_noise (97_curate.sql): the curation core's synthetic noise
CREATE FUNCTION corpq.synthetic_noise(clean_query text, options jsonb DEFAULT '{}')
    RETURNS TABLE (src text, tgt text, label text)
    AS 'MODULE_PATHNAME', 'corpq_synthetic_noise'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.synthetic_noise(text, jsonb) IS
    'labelled negatives made from clean pairs, deterministic by seed: clean_query returns (src, tgt) (rows with a NULL side skipped); the result is every clean pair (label clean) in query order, then for each type round(share * pairs) noisy pairs labelled misaligned_neighbour, misaligned_random, truncated_tgt, truncated_src (30-70% of the words kept), appended_tgt, appended_src, untranslated, untranslated_edited, wrong_language (targets from other_language_query, one text column; none without it), markup (tags added to one side); options seed (1), one share per type (0..10; defaults 0.15, 0.15, 0.15, 0.15, 0.10, 0.05, 0.10, 0.10, 0.15, 0.05), other_language_query';

-- issue 52: classifier (extension/sql/97_curate.sql): the pair-quality
-- classifier's catalog, its training job and pair_quality
CREATE TABLE corpq.classifier_catalog (
    id      bigserial PRIMARY KEY,
    name    text NOT NULL UNIQUE CHECK (name OPERATOR(pg_catalog.<>) '' AND pg_catalog.strpos(name, '@') OPERATOR(pg_catalog.=) 0),
    owner   regrole NOT NULL,
    created timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE corpq.classifier_catalog IS
    'pair-quality classifiers: name (no @) and owner; versions are in corpq.classifier_versions';

CREATE TABLE corpq.classifier_versions (
    model      bigint NOT NULL REFERENCES corpq.classifier_catalog (id) ON DELETE CASCADE,
    version    int NOT NULL CHECK (version OPERATOR(pg_catalog.>=) 1),
    classifier bytea NOT NULL,
    checksum   bigint NOT NULL,
    kind       text NOT NULL CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['trees', 'logistic']::pg_catalog.text[])),
    features   text[] NOT NULL,
    models     jsonb NOT NULL,
    options    jsonb NOT NULL,
    report     jsonb NOT NULL,
    job        bigint,
    created    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (model, version)
);
COMMENT ON TABLE corpq.classifier_versions IS
    'immutable classifier versions: the serialised classifier (extension/curate/FORMAT.md) and its CRC-32 trailer, kind (trees or logistic), feature names in layout order, the pinned models of its model features ({"encoder": "enc@3", "forward": ..., "backward": ..., "lexicon": "lex@1", a lexicon with its corpq.lexicons.version}), resolved training options, the held-out report, the training job';

SELECT pg_catalog.pg_extension_config_dump('corpq.classifier_catalog', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.classifier_versions', '');
SELECT pg_catalog.pg_extension_config_dump('corpq.classifier_catalog_id_seq', '');

-- Everyone reads; only the classifier_train job and corpq.classifier_drop() write.
ALTER TABLE corpq.classifier_catalog ENABLE ROW LEVEL SECURITY;
CREATE POLICY classifier_catalog_read ON corpq.classifier_catalog FOR SELECT USING (true);
ALTER TABLE corpq.classifier_versions ENABLE ROW LEVEL SECURITY;
CREATE POLICY classifier_versions_read ON corpq.classifier_versions FOR SELECT USING (true);
GRANT SELECT ON corpq.classifier_catalog, corpq.classifier_versions TO PUBLIC;

CREATE VIEW corpq.classifiers WITH (security_invoker = true) AS
SELECT c.name,
       v.version AS latest_version,
       (SELECT pg_catalog.count(*) FROM corpq.classifier_versions w
         WHERE w.model OPERATOR(pg_catalog.=) c.id)::int AS versions,
       v.kind, v.features, v.models,
       (v.report -> 'heldout' ->> 'clean_kept')::float8 AS heldout_clean_kept,
       (v.report -> 'heldout' ->> 'min_auc')::float8 AS heldout_min_auc,
       (v.report -> 'heldout' ->> 'min_removed')::float8 AS heldout_min_removed,
       c.owner, c.created, c.updated
  FROM corpq.classifier_catalog c
  LEFT JOIN LATERAL (SELECT w.version, w.kind, w.features, w.models, w.report
                       FROM corpq.classifier_versions w
                      WHERE w.model OPERATOR(pg_catalog.=) c.id
                      ORDER BY w.version DESC LIMIT 1) v ON true;
COMMENT ON VIEW corpq.classifiers IS
    'one row per classifier: its latest version, version count, kind, features, pinned models, and from the latest version''s held-out report the share of clean pairs kept at 0.5, the smallest ROC AUC and the smallest share removed over the noise types; corpq.classifier_versions.report has the rest';
GRANT SELECT ON corpq.classifiers TO PUBLIC;

CREATE FUNCTION corpq.classifier_train(name text, clean_query text, options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_classifier_train'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.classifier_train(text, text, jsonb) IS
    'start a background job that trains the next version of pair-quality classifier name: clean_query is a SELECT of (src text, tgt text) run with the caller''s privileges; synthetic noise is made from its pairs, features computed, a classifier fitted and Platt-calibrated on a held-out split by pair; returns the job id. Options: src_lang, tgt_lang (CLD2 codes: language ID features), encoder, forward and backward (both or neither), lexicon, other_language_query, noise (shares by noise label), seed, max_pairs, holdout, classifier (trees or logistic), max_seconds, threads';

CREATE FUNCTION corpq.pair_quality(classifier text, src text, tgt text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_pair_quality'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.pair_quality(text, text, text) IS
    'the calibrated probability in [0, 1] that (src, tgt) is a clean mutual translation, by classifier name (its latest version, resolved once per query) or name@N; NULL when a model feature is NULL (a side too long for the encoder or translation models)';

CREATE FUNCTION corpq.pair_quality(classifier corpq.pinned_model, src text, tgt text) RETURNS float8
    AS 'MODULE_PATHNAME', 'corpq_pair_quality_pinned'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.pair_quality(corpq.pinned_model, text, text) IS
    'pair_quality with a pinned classifier version name@N (the corpq.pinned_model type serves classifiers too): a version and the model versions it pins never change, so the function is IMMUTABLE';

CREATE FUNCTION corpq.classifier_features(classifier text, src text, tgt text) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'corpq_classifier_features'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.classifier_features(text, text, text) IS
    'the feature vector classifier (name or name@N) computes for (src, tgt), as {feature: value} (corpq.classifier_versions.features has the layout order); model features are the SQL functions'' own values (embedding_cosine, dual_xent, align_score, coverage on the pinned models), null where such a function returns NULL';

CREATE FUNCTION corpq.classifier_drop(name text) RETURNS void
    AS 'MODULE_PATHNAME', 'corpq_classifier_drop'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.classifier_drop(text) IS
    'drop a classifier you own with all its versions; its version numbers are never issued again under the name';
-- the classifier functions' COSTs (extension/sql/99_costs.sql)
ALTER FUNCTION corpq.pair_quality(text, text, text) COST 400;
ALTER FUNCTION corpq.pair_quality(corpq.pinned_model, text, text) COST 400;
ALTER FUNCTION corpq.classifier_features(text, text, text) COST 400;
-- issue 52: curate()
-- ---------------------------------------------------------------------------
-- corpq.curate(): one call that curates a table, a row job (docs/curation.md,
-- "One call: curate()"): rules and language ID, copies, exact and near
-- duplicates over the whole corpus, then the classifier (pair_quality) on the
-- pairs left; (id, decision, probability, reasons) into the caller's table.
-- ---------------------------------------------------------------------------
CREATE DOMAIN corpq.reason_list AS text[];
COMMENT ON DOMAIN corpq.reason_list IS
    'text[] as curate() writes its reasons: the row jobs pass a chunk''s values as one array per column, and PostgreSQL has arrays of domains but no arrays of arrays';

CREATE FUNCTION corpq.curate(corpus regclass, target regclass, options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_curate'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.curate(regclass, regclass, jsonb) IS
    'curate the table corpus (columns id, src, tgt; options id_column, src_column, tgt_column) as a background row job that inserts (id, decision, probability, reasons) into target (id bigint, decision text, probability double precision, reasons text[]) in committed chunks; returns the job id at once.  Steps, cheap first: a NULL side (null:src, null:tgt), a side without a word (empty:src, empty:tgt), the rule filters of the option filters (default corpq.filter_defaults(); rule:<label>), language ID with src_lang / tgt_lang (langid:src, langid:tgt), a copy (copy); among the pairs kept, duplicates by dedup_key (option dedup: near (default, exact too), exact, none; the smallest id kept, the others duplicate_of:<id> or near_duplicate_of:<id>); then with a classifier (name or name@N) corpq.pair_quality, dropped below threshold (0.5; classifier:<p>).  Options also chunk_rows, threads, skip_existing, foreign_target';
-- the chunk table's comment names curate (extension/sql/41_row_jobs.sql)
COMMENT ON TABLE corpq.row_job_chunks IS
    'one row per chunk a row job (translate_job, score_job, embed_job, curate) committed: query rows done so far (in the query''s order), the kind''s counters over those rows (translated, tokens; scored, too_long, tokens; embedded, too_long, tokens; kept, dropped and curate''s reason kinds), a hash of those rows (checked on resume), seconds the kind spent computing in the attempt';
-- issue 53: chunked model storage (extension/sql/70_models.sql).  A
-- version's image moves from corpq.model_versions.weights into rows of
-- corpq.model_chunks, 16 MB each but the last (CORPQ_MODEL_CHUNK), with its
-- bits: each chunk is a slice of the stored bytea (uncompressed out of line,
-- so a slice reads only its pages), and bytes and checksum stay as they were.
CREATE TABLE corpq.model_chunks (
    model   bigint NOT NULL,
    version int NOT NULL,
    chunk   int NOT NULL CHECK (chunk OPERATOR(pg_catalog.>=) 0),
    data    bytea NOT NULL CHECK (pg_catalog.length(data) OPERATOR(pg_catalog.>) 0),
    PRIMARY KEY (model, version, chunk),
    FOREIGN KEY (model, version) REFERENCES corpq.model_versions (model, version) ON DELETE CASCADE
);
ALTER TABLE corpq.model_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
COMMENT ON TABLE corpq.model_chunks IS
    'the bytes of every model version''s weight image, in chunks numbered from 0 (16 MB each but the last); their CRC-32 is the version''s checksum';
SELECT pg_catalog.pg_extension_config_dump('corpq.model_chunks', '');
ALTER TABLE corpq.model_chunks ENABLE ROW LEVEL SECURITY;
CREATE POLICY model_chunks_read ON corpq.model_chunks FOR SELECT USING (true);
GRANT SELECT ON corpq.model_chunks TO PUBLIC;
DO $$
DECLARE
    v record;
BEGIN
    FOR v IN SELECT model, version FROM corpq.model_versions ORDER BY model, version LOOP
        INSERT INTO corpq.model_chunks (model, version, chunk, data)
        SELECT w.model, w.version, g.i,
               pg_catalog.substring(w.weights, g.i * 16777216 + 1, 16777216)
          FROM corpq.model_versions w,
               pg_catalog.generate_series(0, (pg_catalog.length(w.weights) - 1) / 16777216) g (i)
         WHERE w.model = v.model AND w.version = v.version;
    END LOOP;
    IF EXISTS (SELECT FROM corpq.model_versions w
                WHERE w.bytes <> pg_catalog.length(w.weights)
                   OR w.bytes <> (SELECT pg_catalog.sum(pg_catalog.length(k.data)) FROM corpq.model_chunks k
                                   WHERE k.model = w.model AND k.version = w.version)) THEN
        RAISE EXCEPTION 'corpq update: a model version''s chunks do not add up to its image';
    END IF;
END
$$;
ALTER TABLE corpq.model_versions DROP COLUMN weights;
COMMENT ON TABLE corpq.model_versions IS
    'immutable weight images (models/FORMAT.md) of every model version: length in bytes, checksum = the image''s CRC-32 trailer; the bytes are in corpq.model_chunks';
COMMENT ON TABLE corpq.model_catalog IS
    'transformer models: name (no @), owner, full configuration, parameter count, source and target vocabularies; weights are in corpq.model_versions and corpq.model_chunks';
COMMENT ON FUNCTION corpq.model_export(text) IS
    'the weight image of model name (latest version) or name@N, under 1 GB (a bytea''s limit; corpq.model_export_lo for any size)';
-- large objects, the way in and out for images of any size
CREATE FUNCTION corpq.model_import_lo(name text, image oid,
                                      src_vocab text DEFAULT NULL, tgt_vocab text DEFAULT NULL)
    RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_model_import_lo'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.model_import_lo(text, oid, text, text) IS
    'model_import from large object image (of any size; read with the caller''s privileges, in 16 MB pieces): the header and configuration are checked before anything is written, the length and CRC-32 over the whole stream before the version is committed, the tensors when the version first loads; returns the version written';

CREATE FUNCTION corpq.model_export_lo(model text) RETURNS oid
    AS 'MODULE_PATHNAME', 'corpq_model_export_lo'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.model_export_lo(text) IS
    'the weight image of model (latest version) or name@N, of any size, written in 16 MB pieces into a new large object owned by the caller; returns its OID';

-- issue 52: a lexicon's alignment with its directions and sides kept apart
-- (the pair-quality classifier's lexicon features)
CREATE FUNCTION corpq.align_stats(lexicon text, src text, tgt text,
                                  OUT fwd_score float8, OUT rev_score float8,
                                  OUT src_coverage float8, OUT tgt_coverage float8,
                                  OUT src_tail float8, OUT tgt_tail float8)
    AS 'MODULE_PATHNAME', 'corpq_lexicon_align_stats'
    LANGUAGE C STABLE STRICT PARALLEL SAFE COST 4000;
COMMENT ON FUNCTION corpq.align_stats(text, text, text) IS
    'one alignment, its parts kept apart: fwd_score (1/m) sum_j ln sum_i p(a_j = i) t(tgt_j | src_i) over the target tokens, rev_score the same over the source tokens, src_coverage and tgt_coverage the share of each side''s tokens with a link in the symmetrised alignment (align_score = (fwd_score + rev_score) / 2, coverage = src_coverage), tgt_tail the mean of fwd_score''s per-token terms over the target''s last ceil(m/3) tokens minus their mean over its other tokens (0 for one token), src_tail the same for rev_score''s terms over the source (well below 0 when a side''s end is explained worse than its start: a sentence appended to it, the other side cut short); NULL when a side is empty';
-- score_job scores pair_quality, a classifier's (issue 52)
COMMENT ON FUNCTION corpq.score_job(text, text, regclass, jsonb) IS
    'score every row of corpus, a SELECT returning (id, src, tgt) in a stable order, as a background job that inserts (id, score) into target_table (id bigint and one double precision column per score: score, or the names of option columns) in committed chunks of chunk_rows rows; returns the job id at once; options: what (sent_prob, sent_logprob, uncertainty with measure, passes, seed, dual_xent with backward, pair_quality with classifier (a pair-quality classifier, pinned at submission; model NULL when only pair_quality is scored); several separated by commas), columns, batch_size, chunk_rows, threads, skip_existing (only ids not yet in the target), on_too_long (null or error); the values equal the per-row functions''';

-- quality_by_domain gains classifier (issue 52): the share below 0.5 and the mean pair_quality per domain
DROP FUNCTION corpq.quality_by_domain(text, text, text, jsonb, float8, int);
CREATE FUNCTION corpq.quality_by_domain(corpus text, model text DEFAULT NULL, lexicon text DEFAULT NULL,
                                        filters jsonb DEFAULT corpq.filter_defaults(),
                                        inactive float8 DEFAULT 0.1, uncertainty_passes int DEFAULT 0,
                                        classifier text DEFAULT NULL)
    RETURNS TABLE (domain text, pairs bigint,
                   src_words_mean float8, tgt_words_mean float8,
                   src_words_p50 float8, tgt_words_p50 float8,
                   src_words_p95 float8, tgt_words_p95 float8,
                   length_ratio_mean float8, rejected_share float8,
                   sent_prob_p10 float8, sent_prob_p50 float8, sent_prob_p90 float8,
                   inactive_share float8, uncertainty_mean float8, lexicon_coverage_mean float8,
                   pair_quality_below_half float8, pair_quality_mean float8)
    LANGUAGE plpgsql STABLE PARALLEL UNSAFE
    AS $$
DECLARE
    reject_domains text[];
    reject_shares float8[];
BEGIN
    IF inactive IS NULL OR NOT (inactive > 0 AND inactive < 1) THEN
        RAISE EXCEPTION 'inactive must be in (0, 1)' USING ERRCODE = 'invalid_parameter_value',
            DETAIL = pg_catalog.format('It is %s.', inactive);
    END IF;
    IF uncertainty_passes IS NULL OR uncertainty_passes < 0 OR uncertainty_passes > 100 THEN
        RAISE EXCEPTION 'uncertainty_passes must be from 0 to 100' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF uncertainty_passes > 0 AND model IS NULL THEN
        RAISE EXCEPTION 'uncertainty_passes needs a model' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- the reject shares; the corpus query is checked here, before anything else runs
    SELECT pg_catalog.array_agg(r.domain), pg_catalog.array_agg(r.rejected_share)
      INTO reject_domains, reject_shares
      FROM corpq.filter_report_by_domain(corpus, filters, 0) r
     WHERE r.filter = 'all';
    RETURN QUERY EXECUTE pg_catalog.format($q$
        WITH c AS (
            SELECT c.src, c.tgt, c.domain::text AS domain
              FROM (%s
) AS c(src, tgt, domain)
             WHERE c.src IS NOT NULL AND c.tgt IS NOT NULL),
        scored AS (
            SELECT c.domain,
                   corpq.text_length(c.src)::float8 AS sw, corpq.text_length(c.tgt)::float8 AS tw,
                   corpq.length_ratio(c.src, c.tgt) AS lr,
                   CASE WHEN $1 IS NOT NULL THEN corpq.sent_prob($1, c.src, c.tgt) END AS p,
                   CASE WHEN $3 > 0 THEN corpq.uncertainty($1, c.src, c.tgt, 'enteos', $3) END AS u,
                   CASE WHEN $2 IS NOT NULL THEN corpq.coverage($2, c.src, c.tgt) END AS cov,
                   CASE WHEN $7 IS NOT NULL THEN corpq.pair_quality($7, c.src, c.tgt) END AS q
              FROM c),
        cut AS (SELECT pg_catalog.percentile_disc($4) WITHIN GROUP (ORDER BY s.p) AS p FROM scored s)
        SELECT s.domain, pg_catalog.count(*),
               pg_catalog.avg(s.sw), pg_catalog.avg(s.tw),
               pg_catalog.percentile_cont(0.5) WITHIN GROUP (ORDER BY s.sw),
               pg_catalog.percentile_cont(0.5) WITHIN GROUP (ORDER BY s.tw),
               pg_catalog.percentile_cont(0.95) WITHIN GROUP (ORDER BY s.sw),
               pg_catalog.percentile_cont(0.95) WITHIN GROUP (ORDER BY s.tw),
               pg_catalog.avg(s.lr) FILTER (WHERE s.lr < float8 'Infinity'),
               (SELECT r.share FROM ROWS FROM (pg_catalog.unnest($5), pg_catalog.unnest($6)) AS r(domain, share)
                 WHERE r.domain IS NOT DISTINCT FROM s.domain),
               pg_catalog.percentile_cont(0.1) WITHIN GROUP (ORDER BY s.p),
               pg_catalog.percentile_cont(0.5) WITHIN GROUP (ORDER BY s.p),
               pg_catalog.percentile_cont(0.9) WITHIN GROUP (ORDER BY s.p),
               CASE WHEN $1 IS NOT NULL THEN pg_catalog.avg((s.p <= cut.p)::int)::float8 END,
               pg_catalog.avg(s.u), pg_catalog.avg(s.cov),
               -- what the classifier filter rejects at 0.5: below it, or no probability
               CASE WHEN $7 IS NOT NULL THEN pg_catalog.avg((s.q IS NULL OR s.q < 0.5)::int)::float8 END,
               pg_catalog.avg(s.q)
          FROM scored s CROSS JOIN cut
         GROUP BY s.domain ORDER BY s.domain$q$, corpus)
        USING model, lexicon, uncertainty_passes, inactive, reject_domains, reject_shares, classifier;
END
$$;
COMMENT ON FUNCTION corpq.quality_by_domain(text, text, text, jsonb, float8, int, text) IS
    'per domain of corpus, a SELECT returning (src, tgt, domain): pairs, words per side (mean, median, 95th percentile), mean length ratio, share rejected by any filter of filters; with model: sent_prob quantiles, the share of the domain among the corpus-wide inactive fraction (lowest sent_prob), mean ENTEOS uncertainty over uncertainty_passes dropout passes (0: not computed); with lexicon: mean coverage; with classifier (a pair-quality classifier, name or name@N): the share of pairs whose pair_quality is below 0.5 or NULL (what the classifier filter rejects by default) and the mean pair_quality';
-- one copy of a loaded model per server: model_cache() shows shared copies and their attach counts
DROP FUNCTION corpq.model_cache();
CREATE FUNCTION corpq.model_cache(OUT model text, OUT version int, OUT bytes bigint,
                                  OUT uses bigint, OUT shared boolean, OUT attach_count bigint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'corpq_model_cache'
    LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.model_cache() IS
    'the models this backend uses, most recently used first: private copies (corpq.model_cache_mb) and shared copies it is attached to, then the server''s other shared copies of this database (corpq.shared_model_cache_mb, uses 0); attach_count: the backends attached to a shared copy';
-- model_import and model_import_lo take options: {"precision": "int8"}
-- quantizes while importing (issue 53, item 2)
DROP FUNCTION corpq.model_import(text, bytea, text, text);
CREATE FUNCTION corpq.model_import(name text, weights bytea,
                                   src_vocab text DEFAULT NULL, tgt_vocab text DEFAULT NULL,
                                   options jsonb DEFAULT '{}')
    RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_model_import'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.model_import(text, bytea, text, text, jsonb) IS
    'validate a weight image and store it as the next version of model name (same configuration required), or create the model when it does not exist (then src_vocab and tgt_vocab are required); options {"precision": "int8"} (with model_quantize''s weight_bits and embedding_precision) store the int8 image model_quantize would make of a float32 image instead, quantized as the image streams; returns the version written';
DROP FUNCTION corpq.model_import_lo(text, oid, text, text);
CREATE FUNCTION corpq.model_import_lo(name text, image oid,
                                      src_vocab text DEFAULT NULL, tgt_vocab text DEFAULT NULL,
                                      options jsonb DEFAULT '{}')
    RETURNS int
    AS 'MODULE_PATHNAME', 'corpq_model_import_lo'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.model_import_lo(text, oid, text, text, jsonb) IS
    'model_import from large object image (of any size; read with the caller''s privileges, in 16 MB pieces): the header and configuration are checked before anything is written, the length and CRC-32 over the whole stream before the version is committed, the tensors when the version first loads; options as model_import''s ({"precision": "int8"}: quantized chunk by chunk, the float32 image never whole in memory); returns the version written';
-- mine_pairs re-ranks each source's candidates with a pair-quality
-- classifier (options classifier, classifier_k, min_quality): the result
-- gains the column quality (issue 52, item 4)
DROP FUNCTION corpq.mine_pairs(text, text, text, jsonb);
CREATE FUNCTION corpq.mine_pairs(model text, src_query text, tgt_query text, options jsonb DEFAULT '{}')
    RETURNS TABLE (src_id bigint, tgt_id bigint, cosine float8, margin float8, quality float8)
    AS 'MODULE_PATHNAME', 'corpq_mine_pairs'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.mine_pairs(text, text, text, jsonb) IS
    'margin-based mining on sentences: src_query and tgt_query return (id, sentence text) (rows with a NULL id or sentence skipped), each sentence embedded with the encoder model (its latest version when the call starts, or name@N), in batches as the rows are read; then as mine_vectors over those vectors, with the same result (quality NULL); options those of mine_vectors (k 4, mutual, min_margin, block_rows, block_cols) and batch_size (64), on_too_long (null: a sentence longer than the model accepts is left out, counted in a NOTICE; error); classifier (a pair-quality classifier, name or name@N, pinned at the start): each source''s classifier_k (default k) best candidates by margin are judged by pair_quality, the largest probability wins (ties: the larger margin) and is the quality column, a source whose best is below min_quality (0.5) gives no pair; memory: the vectors bounded by work_mem, the embedding by corpq.max_batch_mb, with a classifier the sentences in temporary files; threads: corpq.threads';

-- issue 54, item 8: corpq.is_copy(), the one definition of a copy
-- (extension/sql/94_filters.sql): curate()'s copy step calls it, and the
-- embedding_cosine filter's reject_copies (default true) takes the same
-- decision in C; its COST (extension/sql/99_costs.sql)
CREATE FUNCTION corpq.is_copy(src text, tgt text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'corpq_is_copy'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION corpq.is_copy(text, text) IS
    'whether tgt is a copy of src: their dedup_key(..., ''near'', side) keys (letters only, lower case) are equal and src keeps a letter; curate()''s copy reason and the embedding_cosine filter''s reject_copies';
ALTER FUNCTION corpq.is_copy(text, text) COST 60;
-- one copy per server of a model's vocabularies' token tables (issue 53, item 4):
-- shared_vocab_cache() lists them
CREATE FUNCTION corpq.shared_vocab_cache(OUT vocabulary text, OUT tokens int, OUT bytes bigint,
                                         OUT attach_count bigint, OUT kind text)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'corpq_shared_vocab_cache'
    LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.shared_vocab_cache() IS
    'the vocabularies'' token tables (kind tokens) and WordPiece segmenters (kind wordpiece, vocabulary: the segmenter''s name) the server holds once in shared memory for the models of this database (corpq.shared_model_cache_mb, with corpq in shared_preload_libraries), most recently used first: tokens, bytes, attach_count (the backends, parallel workers and jobs reading it now)';
