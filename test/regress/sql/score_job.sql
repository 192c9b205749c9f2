-- corpq.score_job(): the scores of corpq.score() and the per-row functions,
-- bit for bit, written by a background job into the caller's table in
-- committed chunks; several scores at once; pairs too long for a model give
-- NULL (on_too_long); skip_existing scores only new ids; the job's threads;
-- the checks at submission.  Restarts, kills, cancels and pg_cron are in
-- test/integration/score_job.sh.
SET client_min_messages = warning;

CREATE TABLE sj_pairs AS
SELECT g::bigint AS id,
       'a' || (g % 7) || ' b' || (g % 5) || repeat(' c' || (g % 3), g % 4) AS src,
       CASE WHEN g % 11 = 0 THEN '' ELSE 'x' || (g % 5) || repeat(' y' || (g % 7), g % 5) END AS tgt
  FROM generate_series(1, 200) g;
-- NULL sides, and pairs too long for the models (max_positions 12: 11 tokens)
INSERT INTO sj_pairs VALUES (201, NULL, 'x1'), (202, 'a1', NULL),
  (203, 'a1 a2 a3 a4 a5 a6 a1 a2 a3 a4 a5 a6', 'x1'), (204, 'a1', 'x1 x2 x3 x4 x1 x2 x3 x4 x1 x2 x3 x4');
SELECT corpq.vocab_build('sj_src', 'SELECT src FROM sj_pairs');
SELECT corpq.vocab_build('sj_tgt', 'SELECT tgt FROM sj_pairs');
SELECT corpq.model_create('sj_f', '{"preset": "tiny", "max_positions": 12}', 'sj_src', 'sj_tgt', 7);
SELECT corpq.model_create('sj_b', '{"preset": "tiny", "max_positions": 12}', 'sj_tgt', 'sj_src', 8);
-- the per-row values (too long: NULL)
CREATE TABLE sj_ref AS
SELECT id,
       CASE WHEN id NOT IN (203, 204) THEN corpq.sent_prob('sj_f', src, tgt) END AS sent_prob,
       CASE WHEN id NOT IN (203, 204) THEN corpq.sent_logprob('sj_f', src, tgt) END AS sent_logprob,
       CASE WHEN id NOT IN (203, 204) THEN corpq.uncertainty('sj_f', src, tgt, 'comev', 3, 5) END AS unc,
       CASE WHEN id NOT IN (203, 204) THEN corpq.dual_xent('sj_f', 'sj_b', src, tgt) END AS dx
  FROM sj_pairs;
CREATE TABLE sj_scores (id bigint PRIMARY KEY, score double precision, who text DEFAULT current_user);

-- ---- sent_prob, in chunks of 7, batches of 5, on 2 threads ----
SET corpq.job_threads = 2;
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs ORDER BY id', 'sj_scores',
                       '{"chunk_rows": 7, "batch_size": 5, "threads": 2}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error, threads, args ->> 'model' AS model,
       result ->> 'rows' AS rows, result ->> 'scored' AS scored, result ->> 'too_long' AS too_long,
       result ->> 'chunks' AS chunks, result ->> 'threads' AS pool_threads,
       result ->> 'resumed_from_row' AS resumed_from, result ->> 'attempts' AS attempts,
       (result ->> 'tokens')::int = (SELECT (counters ->> 'tokens')::int FROM corpq.row_job_chunks WHERE job = :job ORDER BY chunk DESC LIMIT 1)
       AND (result ->> 'tokens')::int = (SELECT sum(coalesce(array_length(corpq.vocab_encode('sj_tgt', tgt), 1), 0) + 1)
                                            FROM sj_pairs WHERE src IS NOT NULL AND tgt IS NOT NULL
                                             AND id NOT IN (203, 204)) AS tokens_add_up,
       (result ->> 'pairs_per_s')::float8 > 0 AND (result ->> 'tokens_per_s')::float8 > 0 AS rates
  FROM corpq.jobs WHERE id = :job;
SELECT count(*) AS rows, count(*) FILTER (WHERE s.score IS NOT DISTINCT FROM r.sent_prob) AS equal,
       count(*) FILTER (WHERE s.score IS NULL) AS null_scores, count(DISTINCT s.who) AS writers
  FROM sj_scores s JOIN sj_ref r USING (id);
SELECT chunk, rows_done, (counters ->> 'scored')::bigint AS scored, (counters ->> 'too_long')::bigint AS too_long FROM corpq.row_job_chunks WHERE job = :job AND chunk IN (1, 2, 29, 30)
 ORDER BY chunk;
-- the resolved options are stored with the job (threads is the job row's)
SELECT args -> 'options' AS options FROM corpq.jobs WHERE id = :job;

-- ---- every score at once, into named columns ----
CREATE TABLE sj_all (id bigint, p double precision, lp double precision, u double precision,
                     dx double precision);
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs ORDER BY id', 'sj_all',
                       '{"what": "sent_prob, sent_logprob,uncertainty , dual_xent", "columns": "p,lp,u,dx",
                         "measure": "comev", "passes": 3, "seed": 5, "backward": "sj_b",
                         "chunk_rows": 50, "batch_size": 16, "threads": 1}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error, threads, result ->> 'model' AS model, result ->> 'backward' AS backward,
       result ->> 'scored' AS scored, result ->> 'too_long' AS too_long
  FROM corpq.jobs WHERE id = :job;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE a.p IS NOT DISTINCT FROM r.sent_prob) AS p_equal,
       count(*) FILTER (WHERE a.lp IS NOT DISTINCT FROM r.sent_logprob) AS lp_equal,
       count(*) FILTER (WHERE a.u IS NOT DISTINCT FROM r.unc) AS u_equal,
       count(*) FILTER (WHERE a.dx IS NOT DISTINCT FROM r.dx) AS dx_equal,
       count(*) FILTER (WHERE a.dx IS NULL) AS dx_null
  FROM sj_all a JOIN sj_ref r USING (id);
-- dual_xent_scores() agrees too
SELECT count(*) FILTER (WHERE d.score IS NOT DISTINCT FROM a.dx) AS dual_xent_scores_equal
  FROM corpq.dual_xent_scores('sj_f', 'sj_b', 'SELECT id, src, tgt FROM sj_pairs WHERE id NOT IN (203, 204)') d
  JOIN sj_all a USING (id);

-- ---- on_too_long "error": the pair's error fails the job, nothing is written ----
CREATE TABLE sj_err (id bigint, score double precision);
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs ORDER BY id', 'sj_err',
                       '{"on_too_long": "error", "chunk_rows": 300}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error FROM corpq.jobs WHERE id = :job;
SELECT count(*) AS rows FROM sj_err;

-- ---- skip_existing: a growing corpus, only new ids are scored ----
INSERT INTO sj_pairs SELECT id + 1000, src, tgt FROM sj_pairs WHERE id <= 30;
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores',
                       '{"skip_existing": true, "chunk_rows": 8}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, result ->> 'rows' AS rows, result ->> 'chunks' AS chunks,
       result ->> 'skip_existing' AS skip_existing
  FROM corpq.jobs WHERE id = :job;
SELECT count(*) AS rows, count(*) FILTER (WHERE id > 1000) AS new_rows,
       count(*) FILTER (WHERE id > 1000 AND s.score = corpq.sent_prob('sj_f', p.src, p.tgt)) AS new_equal
  FROM sj_scores s JOIN sj_pairs p USING (id);
-- nothing new: no job at all (a NOTICE says so, the call returns NULL), so a
-- schedule's empty runs leave no rows in corpq.jobs
SELECT count(*) AS jobs_before FROM corpq.jobs \gset
SET client_min_messages = notice;
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs;', 'sj_scores',
                       '{"skip_existing": true}') IS NULL AS no_job;
SET client_min_messages = warning;
SELECT count(*) - :jobs_before AS new_jobs FROM corpq.jobs;
-- the query the job reads with skip_existing (row_job.c): an anti-join the
-- planner serves from the target's index on id (forced here: on 230 rows a
-- hash join is as good)
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
SELECT q.* FROM (
SELECT id, src, tgt FROM sj_pairs
) AS q (corpq_row_id) WHERE NOT EXISTS (SELECT FROM public.sj_scores t WHERE t.id OPERATOR(pg_catalog.=) q.corpq_row_id);
RESET enable_hashjoin;
RESET enable_mergejoin;

-- ---- one row job per target: a second job on a table with a queued or
-- running one is refused, also when both are submitted in one transaction
-- (else skip_existing reads the table before either writes: every row twice,
-- or a duplicate-key error); another table is not held back ----
CREATE TABLE sj_once (id bigint PRIMARY KEY, score double precision);
CREATE TABLE sj_other (id bigint, score double precision);
BEGIN;
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_once', '{"skip_existing": true}') AS job \gset
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_other') AS other \gset
SAVEPOINT second;
\set VERBOSITY terse
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_once', '{"skip_existing": true}');
ROLLBACK TO second;
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs WHERE id > 100', 'public.sj_once');
ROLLBACK TO second;
\set VERBOSITY default
COMMIT;
SELECT corpq.job_wait(:job, '600 s'), corpq.job_wait(:other, '600 s');
SELECT count(*) AS rows, count(DISTINCT id) AS ids, (SELECT count(*) FROM sj_pairs) AS pairs FROM sj_once;
-- ended: the table takes a job again
DELETE FROM sj_once WHERE id > 200;
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_once', '{"skip_existing": true}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT result ->> 'rows' AS rows_written, (SELECT count(*) FROM sj_once) AS rows FROM corpq.jobs WHERE id = :job;

-- ---- the target is its oid and its name at submission: a job whose table
-- was renamed, or dropped and created again, before it started writes into
-- neither (as a job restored from a dump taken while it ran, whose oid names
-- another table or none: test/integration/dump_restore.sh) ----
CREATE TABLE sj_renamed (id bigint, score double precision);
BEGIN;
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_renamed') AS job \gset
ALTER TABLE sj_renamed RENAME TO sj_renamed_now;
COMMIT;
SELECT corpq.job_wait(:job, '600 s');
SELECT state, regexp_replace(error, 'oid [0-9]+', 'oid N') AS error FROM corpq.jobs WHERE id = :job;
CREATE TABLE sj_recreated (id bigint, score double precision);
BEGIN;
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_recreated') AS job \gset
DROP TABLE sj_recreated;
CREATE TABLE sj_recreated (id bigint, score double precision);
COMMIT;
SELECT corpq.job_wait(:job, '600 s');
SELECT state, regexp_replace(error, 'oid [0-9]+', 'oid N') AS error FROM corpq.jobs WHERE id = :job;
SELECT (SELECT count(*) FROM sj_renamed_now) AS renamed_rows, (SELECT count(*) FROM sj_recreated) AS recreated_rows;

-- ---- the model's version per row (version_column): each row gets the
-- pinned version it was scored with, and skip_existing leaves out only the
-- ids scored with that version; a new version (model_quantize) scores them
-- all again, beside the old rows ----
SELECT corpq.model_create('sj_v', '{"preset": "tiny", "max_positions": 12}', 'sj_src', 'sj_tgt', 9);
CREATE TABLE versioned_scores (id bigint, model_version int, score double precision,
                           PRIMARY KEY (id, model_version));
SELECT corpq.score_job('sj_v', 'SELECT id, src, tgt FROM sj_pairs WHERE id <= 20', 'versioned_scores',
                       '{"skip_existing": true, "version_column": "model_version"}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT result ->> 'rows' AS rows, result ->> 'model_version' AS model_version,
       args -> 'options' ->> 'version_column' AS version_column FROM corpq.jobs WHERE id = :job;
-- the same version again: only the new ids
SELECT corpq.score_job('sj_v', 'SELECT id, src, tgt FROM sj_pairs WHERE id <= 25', 'versioned_scores',
                       '{"skip_existing": true, "version_column": "model_version"}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT result ->> 'rows' AS rows FROM corpq.jobs WHERE id = :job;
SELECT corpq.model_quantize('sj_v') AS v2;
SELECT corpq.score_job('sj_v', 'SELECT id, src, tgt FROM sj_pairs WHERE id <= 30', 'versioned_scores',
                       '{"skip_existing": true, "version_column": "model_version"}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT result ->> 'rows' AS rows, result ->> 'model_version' AS model_version FROM corpq.jobs WHERE id = :job;
SELECT v.model_version, count(*) AS rows,
       count(*) FILTER (WHERE v.score IS NOT DISTINCT FROM
                        CASE WHEN p.id NOT IN (203, 204) THEN corpq.sent_prob('sj_v@' || v.model_version, p.src, p.tgt) END) AS equal
  FROM versioned_scores v JOIN sj_pairs p USING (id) GROUP BY 1 ORDER BY 1;
-- every id scored with the latest version: nothing to do
SELECT corpq.score_job('sj_v', 'SELECT id, src, tgt FROM sj_pairs WHERE id <= 30', 'versioned_scores',
                       '{"skip_existing": true, "version_column": "model_version"}') IS NULL AS no_job;
-- the column must be an integer column of the target, not a score's
SELECT corpq.score_job('sj_v', 'SELECT id, src, tgt FROM sj_pairs', 'versioned_scores', '{"version_column": "score"}');
SELECT corpq.score_job('sj_v', 'SELECT id, src, tgt FROM sj_pairs', 'versioned_scores', '{"version_column": "nope"}');
SELECT corpq.score_job('sj_v', 'SELECT id, src, tgt FROM sj_pairs', 'versioned_scores', '{"version_column": ""}');
SELECT corpq.model_drop('sj_v');

-- ---- threads: the job's, resolved once at submission, capped by corpq.job_threads ----
SET corpq.job_threads = 1;
CREATE TABLE sj_t (id bigint, score double precision);
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs WHERE id < 5', 'sj_t',
                       '{"threads": 4}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT threads, result ->> 'threads' AS pool_threads FROM corpq.jobs WHERE id = :job;
RESET corpq.job_threads;

-- ---- checks at submission ----
CREATE TABLE sj_no_score (id bigint, p double precision);
CREATE TABLE sj_int_score (id bigint, score int);
CREATE TABLE sj_int_id (id int, score double precision);
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_no_score');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_int_score');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_int_id');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_no_score', '{"what": "sent_prob,sent_logprob"}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_pairs');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'no_such_table');
CREATE VIEW sj_view AS SELECT * FROM sj_scores;
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_view');
SELECT corpq.score_job('sj_f', 'SELECT id, src FROM sj_pairs', 'sj_scores');
SELECT corpq.score_job('sj_f', 'SELECT id, src, 1 FROM sj_pairs', 'sj_scores');
SELECT corpq.score_job('sj_f', 'DELETE FROM sj_pairs RETURNING id, src, tgt', 'sj_scores');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs; SELECT 1', 'sj_scores', '{"skip_existing": true}');
\set VERBOSITY terse
SELECT corpq.score_job('sj_nope', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores');
SELECT corpq.score_job('sj_f@9', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"what": "dual_xent", "backward": "sj_nope"}');
\set VERBOSITY default
SELECT corpq.score_job(NULL, 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores');
SELECT corpq.score_job('sj_f', NULL, 'sj_scores');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', NULL);
-- options
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"wat": "sent_prob"}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"what": "bleu"}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"what": "sent_prob,sent_prob"}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"what": ""}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_all', '{"what": "sent_prob,sent_logprob", "columns": "p"}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_all', '{"columns": "id"}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"measure": "comev"}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"what": "uncertainty", "measure": "nope"}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"what": "uncertainty", "passes": 0}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"what": "dual_xent"}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"backward": "sj_b"}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"chunk_rows": 0}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"batch_size": 0}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"threads": 0}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"on_too_long": "skip"}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '{"skip_existing": "yes"}');
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores', '[1]');
-- rights: the job writes with the submitting role's
CREATE ROLE corpq_sj_user;
GRANT SELECT ON sj_pairs TO corpq_sj_user;
SET ROLE corpq_sj_user;
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores');
RESET ROLE;
GRANT INSERT (id) ON sj_scores TO corpq_sj_user;
SET ROLE corpq_sj_user;
SELECT corpq.score_job('sj_f', 'SELECT id, src, tgt FROM sj_pairs', 'sj_scores');
RESET ROLE;
REVOKE ALL ON sj_scores, sj_pairs FROM corpq_sj_user;
REVOKE ALL ON corpq.object_owners FROM corpq_sj_user;
DROP ROLE corpq_sj_user;
-- a NULL id fails the job
CREATE TABLE sj_nullid (id bigint, score double precision);
SELECT corpq.score_job('sj_f', $$SELECT NULL::bigint, 'a1', 'x1'$$, 'sj_nullid') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error FROM corpq.jobs WHERE id = :job;

-- leave the catalog as found (the chunk rows go with their jobs)
SELECT count(*) AS jobs FROM corpq.jobs WHERE kind = 'score';
DELETE FROM corpq.jobs WHERE kind = 'score';
SELECT count(*) AS chunks_left FROM corpq.row_job_chunks WHERE job NOT IN (SELECT id FROM corpq.jobs);
SELECT corpq.model_drop('sj_f'), corpq.model_drop('sj_b');
SELECT corpq.vocab_drop('sj_src'), corpq.vocab_drop('sj_tgt');
DROP VIEW sj_view;
DROP TABLE sj_pairs, sj_ref, sj_scores, sj_all, sj_err, sj_t, sj_once, sj_other, sj_renamed_now, sj_recreated, versioned_scores, sj_no_score, sj_int_score, sj_int_id, sj_nullid;
