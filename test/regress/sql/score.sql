-- Scoring with catalog models: sent_prob / sent_logprob / token_scores /
-- uncertainty, pinned versions, errors, parallel workers (batched score():
-- score_batch.sql).
SET client_min_messages = warning;

CREATE TABLE score_pairs AS
SELECT g::bigint AS id,
       'a' || (g % 7) || ' b' || (g % 5) || repeat(' c' || (g % 3), g % 4) AS src,
       CASE WHEN g % 11 = 0 THEN '' ELSE 'x' || (g % 5) || repeat(' y' || (g % 7), g % 5) END AS tgt
  FROM generate_series(1, 300) g;
INSERT INTO score_pairs VALUES (301, NULL, 'x1'), (302, 'a1', NULL), (303, '', 'x1 y2');
SELECT corpq.vocab_build('score_src', 'SELECT src FROM score_pairs');
SELECT corpq.vocab_build('score_tgt', 'SELECT tgt FROM score_pairs');
SELECT corpq.model_create('s1', '{"preset": "tiny", "max_positions": 12}', 'score_src', 'score_tgt', 7);
SELECT corpq.model_create('s1_alt', '{"preset": "tiny", "max_positions": 12}', 'score_src', 'score_tgt', 8);
SELECT corpq.model_create('s0', '{"preset": "tiny", "max_positions": 12, "dropout": 0,
  "attention_dropout": 0, "activation_dropout": 0}', 'score_src', 'score_tgt', 7);

-- sent_prob = exp(sent_logprob / (T + 1)), T target tokens, EOS included
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE p = exp(lp / (coalesce(array_length(corpq.vocab_encode('score_tgt', tgt), 1), 0) + 1))) AS exact,
       count(*) FILTER (WHERE p > 0 AND p < 1 AND lp < 0) AS in_range
  FROM (SELECT src, tgt, corpq.sent_prob('s1', src, tgt) p, corpq.sent_logprob('s1', src, tgt) lp
          FROM score_pairs WHERE src IS NOT NULL AND tgt IS NOT NULL) s;
-- dropout is off: the same value every time, and dropout rates do not matter
SELECT corpq.sent_prob('s1', 'a1 b2', 'x3 y4') = corpq.sent_prob('s1', 'a1 b2', 'x3 y4') AS stable,
       corpq.sent_prob('s1', 'a1 b2', 'x3 y4') = corpq.sent_prob('s0', 'a1 b2', 'x3 y4') AS dropout_off,
       corpq.sent_prob('s1', 'a1 b2', 'x3 y4') <> corpq.sent_prob('s1_alt', 'a1 b2', 'x3 y4') AS weights_matter,
       corpq.sent_prob('s1', 'a1 b2', 'x3 y4') <> corpq.sent_prob('s1', 'a2 b2', 'x3 y4') AS source_matters;

-- token_scores: one row per target token and </s>, consistent with sent_logprob
SELECT pos, token, pred_token IS NOT NULL AS has_pred,
       pred_prob >= exp(logprob) AS pred_ge_gold, entropy > 0 AND entropy <= ln(16) AS entropy_ok
  FROM corpq.token_scores('s1', 'a1 b2 c0', 'x3 y4 y4');
SELECT count(*) FILTER (WHERE abs(s - lp) <= 1e-12 * abs(lp)) AS sums_match, count(*) AS pairs
  FROM (SELECT corpq.sent_logprob('s1', src, tgt) lp,
               (SELECT sum(logprob) FROM corpq.token_scores('s1', src, tgt)) s
          FROM score_pairs WHERE src IS NOT NULL AND tgt IS NOT NULL) t;
-- empty target: only </s> is scored; empty source works too
SELECT pos, token FROM corpq.token_scores('s1', 'a1', '');
SELECT corpq.sent_prob('s1', 'a1', '') = exp(corpq.sent_logprob('s1', 'a1', '')) AS eos_only,
       corpq.sent_prob('s1', '', 'x1') > 0 AS empty_source;
-- unknown words are <unk>: any two unknown words score the same
SELECT corpq.sent_prob('s1', 'a1 qqq', 'x1 zzz') = corpq.sent_prob('s1', 'a1 rrr', 'x1 www') AS unk_same,
       (SELECT token FROM corpq.token_scores('s1', 'a1', 'zzz') WHERE pos = 1) AS unk_token;
-- NULL in, NULL out
SELECT corpq.sent_prob('s1', NULL, 'x') IS NULL AS a, corpq.sent_logprob(NULL, 'a', 'x') IS NULL AS b,
       corpq.uncertainty('s1', 'a', 'x', NULL) IS NULL AS c,
       (SELECT count(*) FROM corpq.token_scores('s1', 'a', NULL)) AS d;

-- pinned versions: IMMUTABLE, unaffected by new versions
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'corpq' AND p.proname IN ('sent_prob', 'sent_logprob', 'token_scores', 'uncertainty', 'score')
 ORDER BY p.oid;
CREATE TEMP TABLE v1 AS SELECT corpq.sent_prob('s1', 'a1 b2', 'x3 y4') AS p;
SELECT corpq.model_import('s1', corpq.model_export('s1_alt'));
SELECT corpq.sent_prob('s1', 'a1 b2', 'x3 y4') = corpq.sent_prob('s1_alt', 'a1 b2', 'x3 y4') AS latest_is_v2,
       corpq.sent_prob('s1@1', 'a1 b2', 'x3 y4') = (SELECT p FROM v1) AS text_v1_kept,
       corpq.sent_prob('s1@1'::corpq.pinned_model, 'a1 b2', 'x3 y4') = (SELECT p FROM v1) AS pinned_v1_kept,
       corpq.sent_logprob('s1@2'::corpq.pinned_model, 'a1 b2', 'x3 y4') = corpq.sent_logprob('s1', 'a1 b2', 'x3 y4') AS pinned_v2;
SELECT count(*) AS rows FROM corpq.token_scores('s1@1'::corpq.pinned_model, 'a1', 'x1 y1');
-- an index on a pinned model's score; the text overload is refused there
CREATE INDEX score_pairs_prob ON score_pairs (corpq.sent_prob('s1@1'::corpq.pinned_model, src, tgt));
CREATE INDEX score_pairs_bad ON score_pairs (corpq.sent_prob('s1', src, tgt));
ANALYZE score_pairs;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM score_pairs
 WHERE corpq.sent_prob('s1@1'::corpq.pinned_model, src, tgt) > 0.5;
SELECT (SELECT count(*) FROM score_pairs WHERE corpq.sent_prob('s1@1'::corpq.pinned_model, src, tgt) > 0.05) =
       (SELECT count(*) FROM score_pairs WHERE corpq.sent_prob('s1@1', src, tgt) > 0.05) AS index_agrees;
RESET enable_seqscan;
DROP INDEX score_pairs_prob;

-- uncertainty: reproducible for a seed, different across seeds and passes
SELECT corpq.uncertainty('s1', 'a1 b2', 'x3 y4', 'enteos', 5, 1) = corpq.uncertainty('s1', 'a1 b2', 'x3 y4', 'enteos', 5, 1) AS reproducible,
       corpq.uncertainty('s1', 'a1 b2', 'x3 y4', 'enteos', 5, 1) <> corpq.uncertainty('s1', 'a1 b2', 'x3 y4', 'enteos', 5, 2) AS seed_matters,
       corpq.uncertainty('s1', 'a1 b2', 'x3 y4', 'enteos', 5, 1) <> corpq.uncertainty('s1', 'a1 b2', 'x3 y4', 'enteos', 6, 1) AS passes_matter,
       corpq.uncertainty('s1', 'a1 b2', 'x3 y4', 'enteos', 1, 1) <>
         (SELECT entropy FROM corpq.token_scores('s1', 'a1 b2', 'x3 y4') ORDER BY pos DESC LIMIT 1) AS dropout_active;
-- every measure; with dropout 0 a single pass equals the deterministic outputs
SELECT m, corpq.uncertainty('s1', 'a1 b2', 'x3 y4', m, 3) IS NOT NULL AS defined
  FROM unnest('{pretp,exptp,vartp,comev,entsent,enteos,exptp_geo,vartp_log,comev_log}'::text[]) m;
SELECT corpq.uncertainty('s0', src, tgt, 'enteos', 1) = (SELECT entropy FROM corpq.token_scores('s0', src, tgt) ORDER BY pos DESC LIMIT 1) AS enteos,
       abs(corpq.uncertainty('s0', src, tgt, 'entsent', 1) - (SELECT avg(entropy) FROM corpq.token_scores('s0', src, tgt))) < 1e-6 AS entsent,
       abs(corpq.uncertainty('s0', src, tgt, 'exptp', 1) - (SELECT 1 - avg(pred_prob) FROM corpq.token_scores('s0', src, tgt))) < 1e-6 AS exptp,
       abs(corpq.uncertainty('s0', src, tgt, 'pretp', 1) - (SELECT 1 - exp(sum(ln(pred_prob))) FROM corpq.token_scores('s0', src, tgt))) < 1e-6 AS pretp,
       corpq.uncertainty('s0', src, tgt, 'vartp', 7, 3) = corpq.uncertainty('s0', src, tgt, 'vartp', 1) AS no_dropout_no_variation
  FROM (VALUES ('a1 b2 c0', 'x3 y4 y4')) v(src, tgt);

-- errors (the list of existing models in the detail is checked in model.sql;
-- tests running before this one may leave models of their own)
\set VERBOSITY terse
SELECT corpq.sent_prob('nope', 'a', 'x');
\set VERBOSITY default
SELECT corpq.sent_prob('s1@9', 'a', 'x');
SELECT corpq.sent_prob('s1@9'::corpq.pinned_model, 'a', 'x');
SELECT corpq.sent_prob('s1', 'a1 a1 a1 a1 a1 a1 a1 a1 a1 a1 a1 a1', 'x') IS NULL AS too_long_is_null;
SELECT corpq.sent_prob('s1', 'a1 a1 a1 a1 a1 a1 a1 a1 a1 a1 a1 a1', 'x', 'error');
SELECT corpq.sent_prob('s1', 'a1', 'x1 x1 x1 x1 x1 x1 x1 x1 x1 x1 x1 x1', 'error');
SELECT corpq.sent_prob('s1', 'a1 a1 a1 a1 a1 a1 a1 a1 a1 a1 a1', 'x1 x1 x1 x1 x1 x1 x1 x1 x1 x1 x1') > 0 AS at_limit;
SELECT corpq.uncertainty('s1', 'a', 'x', 'entropy');
SELECT corpq.uncertainty('s1', 'a', 'x', 'enteos', 0);

-- parallel workers compute the same values (the leader does not scan)
CREATE TEMP TABLE serial AS
SELECT id, corpq.sent_prob('s1', src, tgt) AS p, corpq.uncertainty('s1', src, tgt, 'entsent', 4, 9) AS u
  FROM score_pairs;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF)
SELECT id, corpq.sent_prob('s1', src, tgt), corpq.uncertainty('s1', src, tgt, 'entsent', 4, 9) FROM score_pairs;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE par.p IS NOT DISTINCT FROM s.p AND par.u IS NOT DISTINCT FROM s.u) AS equal
  FROM (SELECT id, corpq.sent_prob('s1', src, tgt) AS p, corpq.uncertainty('s1', src, tgt, 'entsent', 4, 9) AS u
          FROM score_pairs) par
  JOIN serial s USING (id);
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
RESET parallel_leader_participation;

-- leave the catalog as found (later tests list vocabularies)
SELECT corpq.model_drop(name) FROM corpq.models ORDER BY name;
SELECT corpq.vocab_drop('score_src'), corpq.vocab_drop('score_tgt');
DROP TABLE score_pairs;
