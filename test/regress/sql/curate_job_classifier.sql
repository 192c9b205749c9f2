-- corpq.curate()'s classifier step (step 3) with a classifier trained by
-- corpq.classifier_train (string features: a copy, a truncation and a
-- misaligned pair are what it learnt to catch).  What it checks: only the
-- pairs steps 1-2 keep are judged (the others get a NULL probability), the
-- probability written is pair_quality's bit for bit, the threshold (0.5 by
-- default, or given) decides with >=, the reason names the probability, the
-- classifier is pinned at submission (a version trained while the job is
-- queued changes nothing: the job's options name name@N), an unknown
-- classifier and a threshold out of range are ERRORs at submission.
SET client_min_messages = warning;

-- the toy en-es corpus (test/regress/fixtures/toy_en_es.sql): 4 to 10 words
-- a side, word for word, each side ending with a period
\getenv regress_dir PG_ABS_SRCDIR
\set fixture :regress_dir '/fixtures/toy_en_es.sql'
\i :fixture
CREATE TABLE cq_clean AS SELECT * FROM pg_temp.toy_en_es(400, 4, '.');
SELECT corpq.classifier_train('cq_clf', 'SELECT src, tgt FROM cq_clean', '{"seed": 5}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');

-- the corpus to curate: clean pairs of the same kind, and noise
CREATE TABLE cq_corpus (id bigint, src text, tgt text);
INSERT INTO cq_corpus
SELECT id, src, tgt FROM cq_clean WHERE id BETWEEN 1 AND 6
UNION ALL SELECT 7, src, src FROM cq_clean WHERE id = 7                      -- a copy: judged by the classifier (no copy check by default with one)
UNION ALL SELECT 8, src, tgt FROM cq_clean WHERE id = 1                      -- a duplicate of 1: step 2
UNION ALL SELECT 9, a.src, b.tgt FROM cq_clean a, cq_clean b WHERE a.id = 13 AND b.id = 19  -- misaligned
UNION ALL SELECT 10, src, array_to_string((string_to_array(tgt, ' '))[1:5], ' ') FROM cq_clean WHERE id = 19;  -- truncated
CREATE TABLE cq_out (id bigint, decision text, probability float8, reasons text[]);
SELECT corpq.curate('cq_corpus', 'cq_out', '{"classifier": "cq_clf", "chunk_rows": 3}') AS job \gset
-- a second version trained before the job runs: the job keeps version 1
SELECT corpq.classifier_train('cq_clf', 'SELECT src, tgt FROM cq_clean WHERE id > 100', '{"seed": 6}') AS job2 \gset
SELECT corpq.job_wait(:job, '600 s'), corpq.job_wait(:job2, '600 s');
SELECT args -> 'options' ->> 'classifier' AS pinned, args ->> 'model' AS model,
       result ->> 'classifier_name' AS classifier, result -> 'threshold' AS threshold
  FROM corpq.jobs WHERE id = :job;
SELECT id, decision, probability IS NOT NULL AS judged,
       CASE WHEN decision = 'drop' THEN reasons[1] ~ '^(copy|duplicate_of:1|classifier:0\.[0-4][0-9]{2})$' END AS reason_ok
  FROM cq_out ORDER BY id;
-- every clean pair kept, both noisy pairs the rules let through dropped by the classifier
SELECT count(*) FILTER (WHERE id <= 6 AND decision = 'keep') AS clean_kept,
       count(*) FILTER (WHERE id IN (9, 10) AND decision = 'drop' AND reasons[1] LIKE 'classifier:%') AS noise_dropped
  FROM cq_out;
-- the probability written is version 1's pair_quality, bit for bit, and
-- the reason prints it
SELECT count(*) AS judged,
       count(*) FILTER (WHERE o.probability = corpq.pair_quality('cq_clf@1', c.src, c.tgt)) AS equal,
       count(*) FILTER (WHERE o.decision = 'drop'
                          AND o.reasons[1] = 'classifier:' || to_char(o.probability, 'FM0.000')) AS reason_printed
  FROM cq_out o JOIN cq_corpus c USING (id) WHERE o.probability IS NOT NULL;

-- a threshold of 0 keeps every judged pair
CREATE TABLE cq_zero (id bigint, decision text, probability float8, reasons text[]);
SELECT corpq.curate('cq_corpus', 'cq_zero', '{"classifier": "cq_clf@1", "threshold": 0}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT count(*) FILTER (WHERE probability IS NOT NULL AND decision = 'keep') AS judged_kept,
       count(*) FILTER (WHERE probability IS NOT NULL) AS judged
  FROM cq_zero;

-- bad input, at submission
SET client_min_messages = notice;
SELECT corpq.curate('cq_corpus', 'cq_zero', '{"classifier": "no_such"}');
SELECT corpq.curate('cq_corpus', 'cq_zero', '{"classifier": "cq_clf@9"}');
SELECT corpq.curate('cq_corpus', 'cq_zero', '{"classifier": "cq_clf", "threshold": -0.1}');
SET client_min_messages = warning;

DROP TABLE cq_clean, cq_corpus, cq_out, cq_zero;
SELECT corpq.classifier_drop('cq_clf');
DELETE FROM corpq.jobs WHERE kind IN ('curate', 'classifier_train');
