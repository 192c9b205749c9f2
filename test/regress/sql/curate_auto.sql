-- corpq.curate() that trains what it needs: with only a clean query and the
-- two languages (no classifier) the job trains a lexicon "<target>_lex" on
-- the clean pairs, then a classifier "<target>_pq" with the languages and
-- that lexicon, stores both (with the job's id) and curates with the
-- classifier pinned.  What it checks: the names and versions the result
-- reports are those in the catalogs, written by this job; the classifier's
-- features include the lexicon's; every pair the cheap steps let through
-- has pair_quality of that classifier, bit for bit, and is kept exactly when
-- it is >= 0.5 (the others have no probability); a rerun into the same
-- target replaces the caller's lexicon and adds a classifier version;
-- another role's names are refused; bad input is an ERROR at submission.
SET client_min_messages = warning;

-- the toy en-es corpus (test/regress/fixtures/toy_en_es.sql): 4 to 10 words
-- a side, word for word, each side ending with a period
\getenv regress_dir PG_ABS_SRCDIR
\set fixture :regress_dir '/fixtures/toy_en_es.sql'
\i :fixture
CREATE TABLE cqa_clean AS SELECT * FROM pg_temp.toy_en_es(400, 4, '.');

-- the corpus to curate: clean pairs, a copy, a duplicate, misaligned and truncated pairs
CREATE TABLE cqa_corpus (id bigint, src text, tgt text);
INSERT INTO cqa_corpus
SELECT id, src, tgt FROM cqa_clean WHERE id BETWEEN 1 AND 30
UNION ALL SELECT 31, src, src FROM cqa_clean WHERE id = 7
UNION ALL SELECT 32, src, tgt FROM cqa_clean WHERE id = 1
UNION ALL SELECT 32 + a.id, a.src, b.tgt FROM cqa_clean a JOIN cqa_clean b ON b.id = a.id + 50
     WHERE a.id BETWEEN 1 AND 10
UNION ALL SELECT 42 + id, src, array_to_string((string_to_array(tgt, ' '))[1:2], ' ')
      FROM cqa_clean WHERE id BETWEEN 1 AND 10;
CREATE TABLE cqa_out (id bigint, decision text, probability float8, reasons text[]);

-- filters [] (no rule step): the decisions are the classifier's and the
-- copies' and duplicates'
SELECT corpq.curate('cqa_corpus', 'cqa_out',
         '{"clean_query": "SELECT src, tgt FROM cqa_clean WHERE id > 100", "src_lang": "en",
           "tgt_lang": "es", "filters": [], "max_seconds": 600, "chunk_rows": 7}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, args ->> 'train_lexicon' AS lexicon_name, args ->> 'train_classifier' AS classifier_name,
       args -> 'options' ->> 'classifier' AS classifier_option,
       result ->> 'classifier_name' AS pinned, result -> 'threshold' AS threshold,
       result -> 'training' -> 'lexicon' ->> 'name' AS lexicon,
       result -> 'training' -> 'lexicon' -> 'reused' AS lexicon_reused,
       result -> 'training' -> 'classifier' ->> 'name' AS classifier,
       result -> 'training' -> 'classifier' -> 'reused' AS classifier_reused,
       result -> 'training' -> 'classifier' ->> 'kind' AS kind,
       result -> 'training' -> 'classifier' -> 'max_seconds' IS NOT NULL AS budget_given,
       (result -> 'training' -> 'classifier' -> 'heldout' ->> 'clean_kept')::float8 BETWEEN 0 AND 1 AS heldout_reported,
       (result -> 'training' -> 'lexicon' ->> 'seconds')::float8 > 0 AS lexicon_timed,
       (result -> 'training' -> 'classifier' ->> 'seconds')::float8 > 0 AS classifier_timed,
       result -> 'training' -> 'encoder' AS encoder,
       result -> 'training' ->> 'encoder_reason' IS NOT NULL AS encoder_reason_given,
       result ->> 'steps' AS steps
  FROM corpq.jobs WHERE id = :job;
-- the artefacts, written by this job, under the documented names
SELECT name, version, job = :job AS by_this_job, (stats ->> 'pairs')::int AS pairs
  FROM corpq.lexicons WHERE name = 'cqa_out_lex';
SELECT c.name, v.version, v.job = :job AS by_this_job, v.models ->> 'lexicon' AS lexicon,
       v.features @> ARRAY['langid_src', 'langid_tgt', 'align_fwd', 'coverage_fwd'] AS features_ok,
       v.options ->> 'src_lang' AS src_lang, v.options ->> 'tgt_lang' AS tgt_lang, (v.options ->> 'max_seconds')::float8 BETWEEN 500 AND 600 AS budget_left
  FROM corpq.classifier_versions v JOIN corpq.classifier_catalog c ON c.id = v.model
 WHERE c.name = 'cqa_out_pq';
-- the defaults in front of a classifier: exact duplicates, no copy check,
-- no language ID step (the languages are the classifier's)
SELECT options ->> 'dedup' AS dedup, options -> 'copies' AS copies
  FROM corpq.jobs, LATERAL (SELECT args -> 'options' AS options) o WHERE id = :job;
-- every pair: one row; the pairs the cheap steps dropped have no probability;
-- the copy is the classifier's to judge (and it drops it)
SELECT count(*) AS rows_,
       count(*) FILTER (WHERE probability IS NULL) AS not_judged,
       count(*) FILTER (WHERE probability IS NULL AND reasons[1] ~ '^(duplicate_of:1)$') AS cheap_reason,
       count(*) FILTER (WHERE id = 31 AND decision = 'drop' AND reasons[1] LIKE 'classifier:%') AS copy_judged_dropped,
       count(*) FILTER (WHERE id = 32 AND reasons = '{duplicate_of:1}') AS duplicate_dropped
  FROM cqa_out;
-- the pairs judged: pair_quality of the trained classifier, bit for bit,
-- kept exactly when >= 0.5, the reason printing a probability below it
SELECT count(*) > 20 AS many_judged,
       count(*) FILTER (WHERE o.probability = corpq.pair_quality('cqa_out_pq@1', c.src, c.tgt)) = count(*) AS equal,
       count(*) FILTER (WHERE (o.decision = 'keep') = (corpq.pair_quality('cqa_out_pq@1', c.src, c.tgt) >= 0.5)) = count(*) AS decided,
       count(*) FILTER (WHERE o.decision = 'drop'
                          AND o.reasons = ARRAY['classifier:' || to_char(o.probability, 'FM0.000')]) =
         count(*) FILTER (WHERE o.decision = 'drop') AS reasons_ok
  FROM cqa_out o JOIN cqa_corpus c USING (id) WHERE o.probability IS NOT NULL;
-- it learnt something: most clean pairs kept, most misaligned and truncated ones dropped
SELECT count(*) FILTER (WHERE id <= 30 AND decision = 'keep') >= 25 AS clean_kept,
       count(*) FILTER (WHERE id BETWEEN 33 AND 52 AND decision = 'drop') >= 15 AS noise_dropped
  FROM cqa_out;

-- a rerun into the same target: the caller's lexicon is replaced, the
-- classifier gets a new version, and the job uses both; the copy check
-- asked for runs before the classifier
TRUNCATE cqa_out;
SELECT corpq.curate('cqa_corpus', 'cqa_out',
         '{"clean_query": "SELECT src, tgt FROM cqa_clean WHERE id > 100", "src_lang": "en",
           "tgt_lang": "es", "copies": true}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, result -> 'training' -> 'lexicon' ->> 'name' AS lexicon,
       result -> 'training' -> 'classifier' ->> 'name' AS classifier,
       result -> 'training' -> 'classifier' -> 'max_seconds' AS budget,
       result ->> 'classifier_name' AS pinned, result ->> 'steps' AS steps, result -> 'filters' AS filters
  FROM corpq.jobs WHERE id = :job;
SELECT reasons, probability FROM cqa_out WHERE id = 31;
SELECT count(*) FILTER (WHERE o.probability = corpq.pair_quality('cqa_out_pq@2', c.src, c.tgt)) AS equal_v2,
       count(*) AS judged
  FROM cqa_out o JOIN cqa_corpus c USING (id) WHERE o.probability IS NOT NULL \gset
SELECT :equal_v2 = :judged AND :judged > 20 AS uses_version_2;
-- version 1 pinned the lexicon's first version, replaced since: it says so
SET client_min_messages = notice;
SELECT corpq.pair_quality('cqa_out_pq@1', 'the dog.', 'el perro.');

-- bad input, at submission
SELECT corpq.curate('cqa_corpus', 'cqa_out', '{"clean_query": "SELECT src, tgt FROM cqa_clean", "src_lang": "en", "tgt_lang": "es", "classifier": "cqa_out_pq"}');
SELECT corpq.curate('cqa_corpus', 'cqa_out', '{"clean_query": "SELECT src, tgt FROM cqa_clean", "src_lang": "en"}');
SELECT corpq.curate('cqa_corpus', 'cqa_out', '{"clean_query": "SELECT src, tgt FROM cqa_clean", "src_lang": "en", "tgt_lang": "xx"}');
SELECT corpq.curate('cqa_corpus', 'cqa_out', '{"clean_query": "SELECT src, tgt FROM cqa_clean WHERE id <= 49", "src_lang": "en", "tgt_lang": "es"}');
SELECT corpq.curate('cqa_corpus', 'cqa_out', '{"clean_query": "SELECT src FROM cqa_clean", "src_lang": "en", "tgt_lang": "es"}');
SELECT corpq.curate('cqa_corpus', 'cqa_out', '{"clean_query": "", "src_lang": "en", "tgt_lang": "es"}');
SELECT corpq.curate('cqa_corpus', 'cqa_out', '{"max_seconds": 10}');
SELECT corpq.curate('cqa_corpus', 'cqa_out', '{"clean_query": "SELECT src, tgt FROM cqa_clean", "src_lang": "en", "tgt_lang": "es", "max_seconds": 0}');

-- another role: the names after its target exist and are not its own
CREATE ROLE regress_cqa_other;
GRANT USAGE ON SCHEMA public TO regress_cqa_other;
GRANT SELECT ON cqa_corpus, cqa_clean TO regress_cqa_other;
GRANT INSERT, SELECT ON cqa_out TO regress_cqa_other;
SET ROLE regress_cqa_other;
SELECT corpq.curate('cqa_corpus', 'cqa_out', '{"clean_query": "SELECT src, tgt FROM cqa_clean", "src_lang": "en", "tgt_lang": "es", "foreign_target": true}');
RESET ROLE;
SET client_min_messages = warning;
REVOKE ALL ON cqa_corpus, cqa_clean, cqa_out FROM regress_cqa_other;
REVOKE USAGE ON SCHEMA public FROM regress_cqa_other;
DROP ROLE regress_cqa_other;

DROP TABLE cqa_clean, cqa_corpus, cqa_out;
SELECT corpq.classifier_drop('cqa_out_pq');
SELECT corpq.lexicon_drop('cqa_out_lex');
DELETE FROM corpq.jobs WHERE kind IN ('curate', 'classifier_train', 'lexicon_train');
