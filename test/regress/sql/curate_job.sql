-- corpq.curate(): one call that curates a table, as a row job.  A small
-- corpus with known rule failures, language errors, a copy, exact and near
-- duplicates (across chunks: the groups are found over the whole corpus),
-- NULL sides; each target row exact (decision, probability, reasons); every
-- step's decision against the SQL function it stands for; the dedup modes,
-- custom filters, skip_existing, the result's counts; bad input before the
-- job starts; one active job per target.  The classifier step (pair_quality)
-- is tested with the classifier; a kill -9 mid-job is
-- test/integration/curate_resume.sh.
SET client_min_messages = warning;

CREATE TABLE cu_corpus (id bigint, src text, tgt text);
INSERT INTO cu_corpus VALUES
  (1, 'The cat sleeps on the mat in the kitchen every afternoon.',
      'El gato duerme en la alfombra de la cocina todas las tardes.'),
  -- an exact duplicate of 1, far from it (another chunk)
  (40, 'The cat sleeps on the mat in the kitchen every afternoon.',
       'El gato duerme en la alfombra de la cocina todas las tardes.'),
  -- a near duplicate of 1: case and punctuation
  (41, 'the cat sleeps on the mat in the kitchen every afternoon',
       'el gato duerme en la alfombra de la cocina todas las tardes'),
  -- a copy: the source as the target
  (3, 'Where is the train station, please?', 'Where is the train station, please?'),
  -- a copy after near normalisation (case, punctuation)
  (4, 'Open the door.', 'open the door'),
  -- length ratio: 1 word against 14
  (5, 'Yes.', 'Sí, claro, por supuesto que sí, lo haremos mañana por la mañana sin falta.'),
  -- HTML
  (6, 'Press <b>here</b> to continue.', 'Pulse <b>aquí</b> para continuar.'),
  -- numerals that do not match
  (7, 'I have 3 dogs and 45 cats at home.', 'Tengo 7 perros y 12 gatos en casa.'),
  -- a German target
  (8, 'The weather is very nice today and we are going for a long walk in the park.',
      'Das Wetter ist heute sehr schön und wir machen einen langen Spaziergang im Park.'),
  -- a French source
  (9, 'Le chat noir dort toute la journée sur le canapé du salon pendant que nous travaillons.',
      'El gato negro duerme todo el día en el sofá del salón mientras trabajamos.'),
  -- NULL sides
  (10, 'Hello there.', NULL),
  (11, NULL, NULL),
  -- several rules at once
  (12, 'Click <a href="x">here</a> now 5', 'Haga clic aquí ahora mismo por favor, se lo ruego encarecidamente a usted y a su familia 9'),
  -- a pair that fails a rule and its exact duplicate: both name the rule
  (13, 'Room 5 is free now.', 'La habitación 8 está libre ahora.'),
  (14, 'Room 5 is free now.', 'La habitación 8 está libre ahora.'),
  -- near duplicates of 13 without the numbers: 15 is the first that passes
  -- the rules, so it is kept and 42 names it
  (15, 'Room is free now.', 'La habitación está libre ahora.'),
  (42, 'ROOM IS FREE NOW!', '¡LA HABITACIÓN ESTÁ LIBRE AHORA!'),
  -- an exact duplicate group whose smallest id came last
  (30, 'My brother works at the hospital near the river.', 'Mi hermano trabaja en el hospital cerca del río.'),
  (20, 'My brother works at the hospital near the river.', 'Mi hermano trabaja en el hospital cerca del río.'),
  -- empty sides: an empty pair passes the default rules and is no copy
  (21, '', ''),
  (22, 'Good night.', '   ');
-- clean pairs, distinct
INSERT INTO cu_corpus
SELECT 100 + g, 'We bought ' || w || ' apples at the market this morning.',
       'Compramos ' || w || ' manzanas en el mercado esta mañana.'
  FROM (VALUES (1, 'red'), (2, 'green'), (3, 'yellow'), (4, 'fresh'), (5, 'small')) v (g, w);

CREATE TABLE cu_out (id bigint PRIMARY KEY, decision text, probability double precision, reasons text[],
                     who text DEFAULT current_user);

-- ---- the default steps, with language ID of both sides, chunks of 4 ----
SELECT corpq.curate('cu_corpus', 'cu_out', '{"src_lang": "en", "tgt_lang": "es", "chunk_rows": 4}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error, args ->> 'model' AS model, args ->> 'corpus' AS corpus,
       result ->> 'rows' AS rows, result ->> 'kept' AS kept, result ->> 'dropped' AS dropped,
       result ->> 'null_side' AS null_side, result ->> 'empty' AS empty, result ->> 'rule' AS rule, result ->> 'langid' AS langid,
       result ->> 'copy' AS copy, result ->> 'duplicate' AS duplicate,
       result ->> 'near_duplicate' AS near_duplicate, result ->> 'classifier' AS classifier,
       result -> 'classifier_name' AS classifier_name, result ->> 'dedup' AS dedup, result ->> 'steps' AS steps,
       result ->> 'chunks' AS chunks
  FROM corpq.jobs WHERE id = :job;
-- every row: its decision, probability (no classifier: NULL) and reasons
SELECT id, decision, probability, reasons FROM cu_out ORDER BY id;
SELECT count(DISTINCT who) AS writers FROM cu_out;
-- the counters add up, chunk by chunk
SELECT chunk, rows_done, (counters ->> 'kept')::int AS kept, (counters ->> 'dropped')::int AS dropped
  FROM corpq.row_job_chunks WHERE job = :job ORDER BY chunk;
-- the resolved options and the pinned filters are the job's
SELECT args -> 'options' AS options, jsonb_path_query_array(args -> 'filters', '$[*].label') AS filters
  FROM corpq.jobs WHERE id = :job;

-- each step against the SQL function it stands for: the rule reasons are
-- filter_rejects', the copies and duplicates dedup_key's
SELECT count(*) AS checked
  FROM cu_out o JOIN cu_corpus c USING (id)
 WHERE c.src IS NOT NULL AND c.tgt IS NOT NULL
   AND ARRAY(SELECT r FROM unnest(o.reasons) r WHERE r LIKE 'rule:%')
       IS DISTINCT FROM ARRAY(SELECT 'rule:' || r FROM unnest(corpq.filter_rejects(c.src, c.tgt)) r);
SELECT o.id, o.reasons
  FROM cu_out o JOIN cu_corpus c USING (id)
 WHERE c.src IS NOT NULL AND c.tgt IS NOT NULL AND o.reasons @> '{copy}' IS DISTINCT FROM
       (corpq.dedup_key(c.src, c.tgt, 'near', 'src') = corpq.dedup_key(c.src, c.tgt, 'near', 'tgt') AND c.src <> '');
-- kept pairs: one per near key
SELECT corpq.dedup_key(c.src, c.tgt, 'near') AS key, count(*)
  FROM cu_out o JOIN cu_corpus c USING (id) WHERE o.decision = 'keep'
 GROUP BY 1 HAVING count(*) > 1;

-- ---- dedup exact, none; no language ID; custom filters ----
CREATE TABLE cu_exact (id bigint, decision text, probability float8, reasons text[]);
SELECT corpq.curate('cu_corpus', 'cu_exact', '{"dedup": "exact"}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT result ->> 'near_duplicate' AS near_duplicate, result ->> 'duplicate' AS duplicate,
       result ->> 'langid' AS langid, result ->> 'steps' AS steps FROM corpq.jobs WHERE id = :job;
SELECT id, decision, reasons FROM cu_exact WHERE id IN (8, 9, 14, 20, 30, 40, 41, 42) ORDER BY id;
CREATE TABLE cu_none (id bigint, decision text, probability float8, reasons text[]);
SELECT corpq.curate('cu_corpus', 'cu_none',
    '{"dedup": "none", "filters": [{"name": "html_tags", "label": "markup"}]}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT result ->> 'kept' AS kept, result -> 'filters' AS filters FROM corpq.jobs WHERE id = :job;
SELECT id, decision, reasons FROM cu_none WHERE decision = 'drop' ORDER BY id;

-- ---- other column names, an integer id, and a view as the corpus ----
CREATE VIEW cu_view AS SELECT id::int AS n, src AS en, tgt AS es FROM cu_corpus WHERE id < 20;
CREATE TABLE cu_view_out (id bigint, decision text, probability float8, reasons text[]);
SELECT corpq.curate('cu_view', 'cu_view_out',
    '{"id_column": "n", "src_column": "en", "tgt_column": "es", "dedup": "none", "filters": []}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT id, decision, reasons FROM cu_view_out ORDER BY id;

-- ---- skip_existing: only the missing ids, duplicates still across the whole corpus ----
DELETE FROM cu_out WHERE id IN (40, 41, 42, 102);
CREATE TABLE cu_before AS SELECT * FROM cu_out;
SELECT corpq.curate('cu_corpus', 'cu_out',
    '{"src_lang": "en", "tgt_lang": "es", "chunk_rows": 4, "skip_existing": true}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT result ->> 'rows' AS rows FROM corpq.jobs WHERE id = :job;
SELECT id, decision, reasons FROM cu_out WHERE id IN (40, 41, 42, 102) ORDER BY id;
SELECT count(*) AS rows, count(*) FILTER (WHERE (b.decision, b.reasons) IS DISTINCT FROM (o.decision, o.reasons)) AS changed
  FROM cu_before b JOIN cu_out o USING (id);
SET client_min_messages = notice;
SELECT corpq.curate('cu_corpus', 'cu_out', '{"src_lang": "en", "tgt_lang": "es", "skip_existing": true}');
SET client_min_messages = warning;

-- ---- bad input, before any job ----
SET client_min_messages = notice;
CREATE TABLE cu_bad (id bigint, decision text);
SELECT corpq.curate('cu_corpus', 'cu_bad');
SELECT corpq.curate('cu_corpus', 'cu_exact', '{"src_column": "source"}');
SELECT corpq.curate('cu_corpus', 'cu_exact', '{"id_column": "src"}');
SELECT corpq.curate('cu_corpus', 'cu_exact', '{"tgt_column": "id"}');
SELECT corpq.curate('cu_corpus', 'cu_exact', '{"tgt_lang": "xx"}');
SELECT corpq.curate('cu_corpus', 'cu_exact', '{"src_lang": ""}');
SELECT corpq.curate('cu_corpus', 'cu_exact', '{"threshold": 1.5}');
SELECT corpq.curate('cu_corpus', 'cu_exact', '{"threshold": 0.3}');
SELECT corpq.curate('cu_corpus', 'cu_exact', '{"dedup": "fuzzy"}');
SELECT corpq.curate('cu_corpus', 'cu_exact', '{"filters": [{"name": "no_such_filter"}]}');
SELECT corpq.curate('cu_corpus', 'cu_exact', '{"filters": [{"name": "length_ratio", "threshold": 0.5}]}');
SELECT corpq.curate('cu_corpus', 'cu_exact', '{"chunk": 10}');
SELECT corpq.curate('cu_corpus', 'cu_exact', '[]');
SELECT corpq.curate(NULL, 'cu_exact');
SELECT corpq.curate('cu_corpus', NULL);
-- an unknown classifier (test/regress/sql/curate_job_classifier.sql tests the step)
SELECT corpq.curate('cu_corpus', 'cu_exact', '{"classifier": "cu_clf"}');
SELECT count(*) AS jobs_submitted FROM corpq.jobs WHERE kind = 'curate' AND args ->> 'target_name' LIKE 'public.cu\_%';

-- ---- one active job per target ----
BEGIN;
SELECT corpq.curate('cu_corpus', 'cu_exact') IS NOT NULL AS submitted;
\set VERBOSITY terse
SELECT corpq.curate('cu_corpus', 'cu_exact');
\set VERBOSITY default
ROLLBACK;
SET client_min_messages = warning;

DROP VIEW cu_view;
DROP TABLE cu_corpus, cu_out, cu_exact, cu_none, cu_view_out, cu_before, cu_bad;
DELETE FROM corpq.jobs WHERE kind = 'curate';
