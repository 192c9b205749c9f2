
-- ---------------------------------------------------------------------------
-- Quality views: the BI contract (docs/filters.md, "Quality views", documents every
-- column).  Long format, typed columns, no JSON to unpack, so that Grafana,
-- Metabase or Superset chart them as they are.  What needs no model, corpus
-- or lexicon is a view (security_invoker: each role sees the rows corpq's
-- row-level security shows it); what needs one is a set-returning function
-- that takes it as an argument -- explicit in the query, several models
-- side by side in one query, no session state -- and a corpus as a SELECT,
-- as corpq's other functions do.
-- ---------------------------------------------------------------------------

-- Training curves: one row per (job, update, split, label).
CREATE VIEW corpq.train_curve WITH (security_invoker = true) AS
SELECT l.job, j.args ->> 'model' AS model, l.step, l.epoch, 'train'::text AS split, 'all'::text AS label,
       l.train_nll AS loss, pg_catalog.exp(l.train_nll) AS ppl, l.tokens, l.at
  FROM corpq.train_log l JOIN corpq.jobs j ON j.id = l.job
 WHERE l.train_nll IS NOT NULL
UNION ALL
SELECT l.job, j.args ->> 'model', l.step, l.epoch, 'dev', 'all',
       l.dev_loss, l.dev_ppl, NULL::bigint, l.at
  FROM corpq.train_log l JOIN corpq.jobs j ON j.id = l.job
 WHERE l.dev_loss IS NOT NULL
UNION ALL
SELECT l.job, j.args ->> 'model', l.step, l.epoch, 'dev', d.key,
       (d.value ->> 'loss')::float8, (d.value ->> 'ppl')::float8, (d.value ->> 'tokens')::bigint, l.at
  FROM corpq.train_log l JOIN corpq.jobs j ON j.id = l.job
 CROSS JOIN LATERAL pg_catalog.jsonb_each(l.dev) d
 WHERE l.dev IS NOT NULL AND pg_catalog.jsonb_typeof(l.dev) = 'object';
COMMENT ON VIEW corpq.train_curve IS
    'training curves of train() jobs: per update, the training nll per target token (split train) and on validation updates the dev nll per token overall (label all) and per corpus label, with perplexity exp(loss)';
GRANT SELECT ON corpq.train_curve TO PUBLIC;

-- Job timelines: one row per job.
CREATE VIEW corpq.job_timeline WITH (security_invoker = true) AS
SELECT j.id AS job, j.kind, j.owner::text AS owner, j.state,
       coalesce(j.args ->> 'model', j.args ->> 'name') AS target,
       j.created, j.started, j.finished,
       pg_catalog.date_part('epoch', coalesce(j.started, pg_catalog.now()) - j.created)::float8 AS queued_seconds,
       CASE WHEN j.started IS NOT NULL
            THEN pg_catalog.date_part('epoch', coalesce(j.finished, pg_catalog.now()) - j.started)::float8 END AS run_seconds,
       j.attempts, j.error
  FROM corpq.jobs j;
COMMENT ON VIEW corpq.job_timeline IS
    'every job: kind, owner, state, the model or lexicon it works on, when it was created, started and finished, seconds queued and running (up to now while unfinished), attempts and error';
GRANT SELECT ON corpq.job_timeline TO PUBLIC;

-- The words whose translation a lexicon is least sure of.
CREATE VIEW corpq.lexicon_uncertain_words WITH (security_invoker = true) AS
SELECT e.lexicon, e.src AS word, e.links, e.entropy,
       pg_catalog.rank() OVER (PARTITION BY e.lexicon ORDER BY e.entropy DESC, e.links DESC, e.src) AS rank
  FROM corpq.lexicon_entropy e;
COMMENT ON VIEW corpq.lexicon_uncertain_words IS
    'source words of each lexicon by translation entropy H(y|x) in nats (UncSamp, thesis Eq. 6.4), most uncertain first (rank 1), with their number of symmetrised links';
GRANT SELECT ON corpq.lexicon_uncertain_words TO PUBLIC;

-- Score histograms: scores is a SELECT returning (domain, score), read once.
-- The bin edges are computed first (one array), and a score's bin is the
-- number of lower edges at or below it, so every score lies within the edges
-- printed for its bin, whatever the spacing.
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
CREATE FUNCTION corpq.score_histogram(scores text, bins int DEFAULT 20,
                                      lo float8 DEFAULT NULL, hi float8 DEFAULT NULL)
    RETURNS TABLE (domain text, bin int, bin_lo float8, bin_hi float8, pairs bigint, share float8)
    LANGUAGE sql STABLE PARALLEL UNSAFE
    AS $$ SELECT * FROM corpq.score_histogram(scores, 'linear', bins, lo, hi) $$;
COMMENT ON FUNCTION corpq.score_histogram(text, int, float8, float8) IS
    'score_histogram with linear spacing: bins bins of equal width over [lo, hi] (default: the finite scores'' range)';

-- Per-domain quality of a corpus, a SELECT returning (src, tgt, domain).
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
