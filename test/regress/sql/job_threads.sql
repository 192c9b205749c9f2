-- The "threads" option of every job kind: one row in each kind's options,
-- resolved once at submission into corpq.jobs.threads (the job's option, or
-- corpq.job_threads, and never more), applied by the worker before the
-- kind runs (score_job reports the pool's threads it ran on:
-- test/regress/sql/score_job.sql), never echoed in the stored options.
SET client_min_messages = warning;

CREATE TABLE jt_bitext AS
SELECT g AS id, 'w' || (g % 5) || ' v' || (g % 3) AS src, 'x' || (g % 5) || ' y' || (g % 3) AS tgt
  FROM generate_series(1, 50) g;

SET corpq.job_threads = 2;
SELECT corpq.lexicon_train('jt_one', 'SELECT src, tgt FROM jt_bitext', '{"threads": 1, "iterations": 1}') AS one,
       corpq.lexicon_train('jt_default', 'SELECT src, tgt FROM jt_bitext', '{"iterations": 1}') AS dflt \gset
SET corpq.job_threads = 1;
SELECT corpq.lexicon_train('jt_capped', 'SELECT src, tgt FROM jt_bitext', '{"threads": 2, "iterations": 1}') AS capped \gset
RESET corpq.job_threads;
SELECT corpq.job_wait(:one, '120 s'), corpq.job_wait(:dflt, '120 s'), corpq.job_wait(:capped, '120 s');
SELECT kind, state, threads, args -> 'options' ? 'threads' AS echoed
  FROM corpq.jobs WHERE id IN (:one, :dflt, :capped) ORDER BY id;

-- every kind's option table has the row (the same bounds, the same message)
SELECT corpq.lexicon_train('jt_bad', 'SELECT src, tgt FROM jt_bitext', '{"threads": 0}');
SELECT corpq.antap_train('jt_bad', 'SELECT 1', 'SELECT 1', '{"threads": 257}');
SELECT corpq.train('jt_nope', 'SELECT src, tgt FROM jt_bitext', NULL, '{"threads": 0}');
SELECT corpq.translate_job('jt_nope', 'SELECT id, src FROM jt_bitext', 'jt_bitext', '{"threads": 0}');
SELECT corpq.score_job('jt_nope', 'SELECT id, src, tgt FROM jt_bitext', 'jt_bitext', '{"threads": 0}');
SELECT corpq.rejuvenate('SELECT id, src, tgt FROM jt_bitext', NULL, '{"name": "jt", "threads": 0}');
SELECT corpq.self_train('jt_nope', 'jt_nope', 'SELECT src, tgt FROM jt_bitext', 'SELECT id, src FROM jt_bitext',
                        '{"name": "jt", "k": 1, "threads": "two"}');

SELECT corpq.lexicon_drop('jt_one'), corpq.lexicon_drop('jt_default'), corpq.lexicon_drop('jt_capped');
DELETE FROM corpq.jobs WHERE id IN (:one, :dflt, :capped);
DROP TABLE jt_bitext;
