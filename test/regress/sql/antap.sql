-- ANTAP (CAV paper, Sec. 3.2): train, predict, evaluate, versions, errors.
--
-- A corpus where each target token's accuracy is a function of its context:
-- target token tJ always follows a source of 1 + J % 10 words, so its CAV
-- spreads over distances 1 .. 1 + J % 10, and its "accuracy" is
-- 0.05 + 0.09 (J % 10).  ANTAP has to read the distance profile of the pooled
-- CAV to predict it.  (The accuracies of a real model come from
-- corpq.token_hits; see README and test/bench/bench_antap_real.sh.)
SET client_min_messages = warning;
CREATE TABLE ap_pairs AS
SELECT j * 10 + r AS id, j,
       (SELECT string_agg('s' || ((j * 31 + r * 7 + k * 13) % 30), ' ')
          FROM generate_series(1, 1 + j % 10) k) AS src,
       't' || j || CASE WHEN r % 2 = 0 THEN ' x' ELSE '' END AS tgt
  FROM generate_series(0, 59) j, generate_series(0, 9) r;
CREATE TABLE ap_cav AS SELECT corpq.cav_accumulate(src, tgt, 16) AS c FROM ap_pairs;
CREATE TABLE ap_acc AS
SELECT 't' || j AS token, 0.05 + 0.09 * (j % 10) AS accuracy FROM generate_series(0, 59) j
UNION ALL VALUES ('nocav1', 0.5), ('nocav2', 0.5), ('t_null', NULL);

-- the input pipeline is cav_pool(..., layer_norm => true)
-- (pooled to the matrix's own size it is the normalised matrix: mean 0, variance 1)
SELECT array_dims(corpq.cav_pool(c, 't7', 8, 8, true)) AS dims,
       (SELECT abs(avg(v)) < 1e-5 AND abs(var_pop(v) - 1) < 1e-3
          FROM unnest(corpq.cav_pool(c, 't7', (s.source_tokens + s.target_tokens)::int, 16, true)) v)
           AS normalised
FROM ap_cav, corpq.cav_stats(c) s;

\set opts '{"pool_rows": 8, "pool_cols": 8, "seq_len": 4, "d_model": 8, "heads": 2, "ffn_dim": 16, "lr": 0.003, "patience": 40, "max_epochs": 400, "seed": 3}'
SELECT corpq.antap_train('ap', 'SELECT t.token, c.c FROM ap_cav c, corpq.cav_tokens(c.c) t',
                         'SELECT token, accuracy FROM ap_acc', :'opts') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error FROM corpq.jobs WHERE id = :job;
-- 60 tokens used, split 48/6/6; 4 counted, not used: x (no accuracy),
-- nocav1, nocav2 (no CAV), t_null (NULL accuracy and no CAV: in both counts)
SELECT result->'result'->'tokens' AS tokens,
       result->'result'->'skipped' AS skipped,
       result->'result'->'without_cav' AS without_cav,
       result->'result'->'without_accuracy' AS without_accuracy,
       result->'result'->'state_i'->'train'->'tokens' AS n_train,
       result->'result'->'state_i'->'valid'->'tokens' AS n_valid,
       result->'result'->'state_i'->'test'->'tokens' AS n_test,
       result->>'version' AS version
FROM corpq.jobs WHERE id = :job;
SELECT split, count(*) FROM corpq.antap_tokens GROUP BY split ORDER BY split;

-- it learned: State II fits the training tokens, State I generalises
SELECT split, state, r2 > 0.8 AS r2_above_08, rmse = sqrt(mse) AS rmse_is_sqrt_mse
FROM corpq.antap_eval('ap') WHERE split IN ('train', 'test') ORDER BY 1 DESC, 2;
-- antap_eval (SQL over corpq.antap_tokens) agrees with the job's own metrics (C)
SELECT bool_and(abs(e.mse - (v.result->('state_' || lower(e.state))->e.split->>'mse')::float8) < 1e-9
                AND abs(e.r2 - (v.result->('state_' || lower(e.state))->e.split->>'r2')::float8) < 1e-6)
           AS eval_matches_job
FROM corpq.antap_eval('ap') e, corpq.antap_versions v;
-- State I is the best validation epoch, State II the last
SELECT (result->>'best_epoch')::int <= (result->>'epochs')::int AS best_before_last,
       (result->>'early_stopped')::boolean = ((result->>'epochs')::int < 400) AS stop_reason_consistent,
       (SELECT mse FROM corpq.antap_eval('ap') WHERE split = 'valid' AND state = 'I')
         <= (SELECT mse FROM corpq.antap_eval('ap') WHERE split = 'valid' AND state = 'II') + 1e-12
           AS state_i_best_on_valid
FROM corpq.antap_versions;

-- antap_predict reproduces the stored predictions of both states
SELECT bool_and(abs(corpq.antap_predict('ap', c.c, t.token) - t.predicted_i) < 1e-6) AS state_i,
       bool_and(abs(corpq.antap_predict('ap', c.c, t.token, 'II') - t.predicted_ii) < 1e-6) AS state_ii,
       count(*) AS tokens
FROM corpq.antap_tokens t, ap_cav c;
SELECT corpq.antap_predict('ap', c, 'not_a_token') IS NULL AS no_matrix_is_null,
       corpq.antap_predict('ap', c, 'x') IS NOT NULL AS any_token_with_a_matrix
FROM ap_cav;

-- a second training with the same seed: version 2, the same weights
SELECT corpq.antap_train('ap', 'SELECT t.token, c.c FROM ap_cav c, corpq.cav_tokens(c.c) t',
                         'SELECT token, accuracy FROM ap_acc', :'opts') AS job2 \gset
SELECT corpq.job_wait(:job2, '600 s');
SELECT version, checksum_i = first_value(checksum_i) OVER (ORDER BY version) AS same_state_i,
       checksum_ii = first_value(checksum_ii) OVER (ORDER BY version) AS same_state_ii
FROM corpq.antap_versions ORDER BY version;
SELECT name, version FROM corpq.catalog_fingerprint() WHERE kind = 'antap' ORDER BY 2;
SELECT count(DISTINCT fingerprint) AS distinct_fingerprints
FROM corpq.catalog_fingerprint() WHERE kind = 'antap';
SELECT count(*) AS version_1_rows FROM corpq.antap_eval('ap@1');

-- ---- errors ----------------------------------------------------------------
-- at submission: options, names, queries
SELECT corpq.antap_train('ap', 'SELECT 1', 'SELECT 1', '{"pool_rows": 0}');
SELECT corpq.antap_train('ap', 'SELECT 1', 'SELECT 1', '{"pool_cols": -4}');
SELECT corpq.antap_train('ap', 'SELECT 1', 'SELECT 1', '{"d_model": 6, "heads": 4}');
SELECT corpq.antap_train('ap', 'SELECT 1', 'SELECT 1', '{"pool": 8}');
SELECT corpq.antap_train('a@b', 'SELECT 1', 'SELECT 1');
SELECT corpq.antap_train('', 'SELECT 1', 'SELECT 1');
SELECT corpq.antap_train('ap2', 'SELECT token FROM ap_acc', 'SELECT token, accuracy FROM ap_acc');
SELECT corpq.antap_train('ap2', 'SELECT t.token, c.c FROM ap_cav c, corpq.cav_tokens(c.c) t',
                         'SELECT token, token FROM ap_acc');
SELECT corpq.antap_train('ap2', 'DELETE FROM ap_acc', 'SELECT token, accuracy FROM ap_acc');
SELECT corpq.antap_train('ap2', NULL, 'SELECT 1') IS NULL AS strict;
-- in the job: fewer than 10 tokens, a NaN accuracy (named), a duplicated token
SELECT corpq.antap_train('ap_few', 'SELECT t.token, c.c FROM ap_cav c, corpq.cav_tokens(c.c) t',
                         'SELECT token, accuracy FROM ap_acc WHERE token IN (''t1'', ''t2'', ''t3'')') AS j1 \gset
SELECT corpq.antap_train('ap_nan', 'SELECT t.token, c.c FROM ap_cav c, corpq.cav_tokens(c.c) t',
                         'SELECT token, CASE WHEN token = ''t5'' THEN ''NaN''::float8 ELSE accuracy END FROM ap_acc') AS j2 \gset
SELECT corpq.antap_train('ap_dup', 'SELECT t.token, c.c FROM ap_cav c, corpq.cav_tokens(c.c) t',
                         'SELECT token, accuracy FROM ap_acc UNION ALL SELECT ''t9'', 0.1') AS j3 \gset
SELECT corpq.job_wait(:j1, '120 s'), corpq.job_wait(:j2, '120 s'), corpq.job_wait(:j3, '120 s');
SELECT id = :j1 AS few, id = :j2 AS nan, state, error FROM corpq.jobs WHERE id IN (:j1, :j2, :j3) ORDER BY id;
SELECT count(*) AS nothing_written FROM corpq.antap_models WHERE name LIKE 'ap\_%';
-- names, versions, states
SELECT corpq.antap_predict('nope', c, 't1') FROM ap_cav;
SELECT corpq.antap_predict('ap@9', c, 't1') FROM ap_cav;
SELECT corpq.antap_predict('ap', c, 't1', 'III') FROM ap_cav;
SELECT * FROM corpq.antap_eval('nope');
SELECT corpq.antap_drop('nope');

SELECT corpq.antap_drop('ap');
-- trained again after its drop, the name numbers after the dropped versions:
-- 'ap@1' never comes to mean other weights (issue 41), it stays an error
SELECT corpq.antap_train('ap', 'SELECT t.token, c.c FROM ap_cav c, corpq.cav_tokens(c.c) t',
                         'SELECT token, accuracy FROM ap_acc', :'opts') AS job3 \gset
SELECT corpq.job_wait(:job3, '600 s');
SELECT version FROM corpq.antap_versions ORDER BY version;
SELECT last_version FROM corpq.issued_versions WHERE catalog = 'corpq.antap_models' AND name = 'ap';
SELECT corpq.antap_predict('ap@1', c, 't1') FROM ap_cav;
SELECT count(*) FROM corpq.antap_eval('ap@2');
SELECT count(*) > 0 AS version_3_predicts FROM corpq.antap_eval('ap@3');
SELECT corpq.antap_drop('ap');
SELECT count(*) AS versions_left FROM corpq.antap_versions;
SELECT count(*) AS tokens_left FROM corpq.antap_tokens;
DELETE FROM corpq.jobs WHERE kind = 'antap_train';
DROP TABLE ap_pairs, ap_cav, ap_acc;
