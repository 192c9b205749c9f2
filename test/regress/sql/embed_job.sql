-- corpq.embed_job(): the vectors of corpq.embed(model@N, sentence), bit for
-- bit, written by a background job into the caller's table in committed
-- chunks (and corpq.embed_rows(): the same vectors in one statement); NULL
-- sentences and sentences too long for the model give NULL (on_too_long);
-- another column, and a column of a type real[] casts to on assignment (as
-- pgvector's vector); skip_existing embeds only new ids; the model pinned at
-- submission; the checks at submission.  Restarts and pgvector's vector
-- columns are in test/integration/embed_job.sh.
SET client_min_messages = warning;

CREATE TABLE ej_sents AS
SELECT g::bigint AS id, 'w' || (g % 7) || repeat(' v' || (g % 5), g % 6) AS s
  FROM generate_series(1, 200) g;
-- a NULL sentence, the empty one, and two too long for the model (max_positions 8: 6 tokens)
INSERT INTO ej_sents VALUES (201, NULL), (202, ''), (203, 'w1 v1 v1 v1 v1 v1 v1'), (204, 'w2 v2 v2 v2 v2 v2 v2 v2');
SELECT corpq.vocab_build('ej_joint', 'SELECT s FROM ej_sents');
SELECT corpq.model_create('ej', '{"preset": "tiny", "kind": "encoder", "max_positions": 8}',
                          'ej_joint', 'ej_joint', 3);
SELECT corpq.model_create('ej_tr', '{"preset": "tiny", "max_positions": 8}', 'ej_joint', 'ej_joint', 3);
-- the per-row vectors (too long, NULL: NULL)
CREATE TABLE ej_ref AS SELECT id, corpq.embed('ej@1'::corpq.pinned_model, s) AS v FROM ej_sents;
SELECT count(*) AS rows, count(v) AS vectors FROM ej_ref;
CREATE TABLE ej_vecs (id bigint PRIMARY KEY, embedding real[], who text DEFAULT current_user);

-- ---- chunks of 7, batches of 5, on 2 threads ----
SET corpq.job_threads = 2;
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents ORDER BY id', 'ej_vecs',
                       '{"chunk_rows": 7, "batch_size": 5, "threads": 2}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error, threads, args ->> 'model' AS model,
       result ->> 'model' AS result_model, result ->> 'column' AS col, result ->> 'dimension' AS dimension,
       result ->> 'rows' AS rows, result ->> 'embedded' AS embedded, result ->> 'too_long' AS too_long,
       result ->> 'chunks' AS chunks, result ->> 'threads' AS pool_threads,
       result ->> 'resumed_from_row' AS resumed_from, result ->> 'attempts' AS attempts,
       (result ->> 'tokens')::int = (SELECT (counters ->> 'tokens')::int FROM corpq.row_job_chunks WHERE job = :job ORDER BY chunk DESC LIMIT 1)
       AND (result ->> 'tokens')::int = (SELECT sum(coalesce(array_length(corpq.vocab_encode('ej_joint', s), 1), 0))
                                            FROM ej_sents WHERE id NOT IN (201, 203, 204)) AS tokens_add_up,
       (result ->> 'sentences_per_s')::float8 > 0 AND (result ->> 'tokens_per_s')::float8 > 0 AS rates
  FROM corpq.jobs WHERE id = :job;
-- every vector is embed()'s, bit for bit; NULL for the NULL and the too-long sentences
SELECT count(*) AS rows, count(*) FILTER (WHERE e.embedding IS NOT DISTINCT FROM r.v) AS equal,
       count(*) FILTER (WHERE e.embedding = r.v) AS equal_vectors,
       string_agg(e.id::text, ',' ORDER BY e.id) FILTER (WHERE e.embedding IS NULL) AS null_ids,
       count(DISTINCT e.who) AS writers
  FROM ej_vecs e JOIN ej_ref r USING (id);
SELECT chunk, rows_done, (counters ->> 'embedded')::bigint AS embedded, (counters ->> 'too_long')::bigint AS too_long FROM corpq.row_job_chunks WHERE job = :job AND chunk IN (1, 2, 28, 29, 30)
 ORDER BY chunk;
-- the resolved options are stored with the job (threads is the job row's)
SELECT args -> 'options' AS options FROM corpq.jobs WHERE id = :job;
RESET corpq.job_threads;

-- ---- embed_rows(): the same vectors in one statement, in the query's order ----
SET client_min_messages = notice;
SELECT count(*) AS rows, count(*) FILTER (WHERE e.embedding IS NOT DISTINCT FROM r.v) AS equal,
       count(e.embedding) AS vectors, bool_and(e.n = 205 - e.id) AS in_order
  FROM corpq.embed_rows('ej', 'SELECT id, s FROM ej_sents WHERE id <= 204 ORDER BY id DESC',
                        '{"batch_size": 3}') WITH ORDINALITY e (id, embedding, n)
  JOIN ej_ref r USING (id);
SET client_min_messages = warning;
SELECT count(*) AS rows, count(*) FILTER (WHERE e.embedding = r.v) AS equal
  FROM corpq.embed_rows('ej', 'SELECT id, s FROM ej_sents WHERE id <= 20') e JOIN ej_ref r USING (id);
SELECT * FROM corpq.embed_rows('ej', 'SELECT id, s FROM ej_sents', '{"on_too_long": "error"}');
SELECT * FROM corpq.embed_rows('ej_tr', 'SELECT id, s FROM ej_sents');
SELECT * FROM corpq.embed_rows('ej', 'SELECT id, s, s FROM ej_sents');
SELECT * FROM corpq.embed_rows('ej', 'SELECT id, s FROM ej_sents', '{"batch_size": 0}');
SELECT * FROM corpq.embed_rows('ej', 'SELECT id, s FROM ej_sents', '{"column": "v"}');
SELECT * FROM corpq.embed_rows(NULL, 'SELECT id, s FROM ej_sents');
SELECT * FROM corpq.embed_rows('ej', NULL);

-- ---- another column; a column of a type real[] casts to on assignment ----
CREATE TYPE ej_vec AS (dim int, v real[]);
CREATE FUNCTION ej_vec_of(real[]) RETURNS ej_vec LANGUAGE sql IMMUTABLE
    AS $$ SELECT ROW(cardinality($1), $1)::ej_vec $$;
CREATE CAST (real[] AS ej_vec) WITH FUNCTION ej_vec_of(real[]) AS ASSIGNMENT;
CREATE TABLE ej_cast (id bigint, vec ej_vec, plain real[]);
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents WHERE id > 195', 'ej_cast',
                       '{"column": "vec", "chunk_rows": 4}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error, result ->> 'column' AS col, result ->> 'rows' AS rows FROM corpq.jobs WHERE id = :job;
SELECT c.id, (c.vec).dim, (c.vec).v IS NOT DISTINCT FROM r.v AS equal, c.plain IS NULL AS plain_null
  FROM ej_cast c JOIN ej_ref r USING (id) ORDER BY c.id;

-- ---- on_too_long "error": the sentence's error fails the job, nothing is written ----
CREATE TABLE ej_err (id bigint, embedding real[]);
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents ORDER BY id', 'ej_err',
                       '{"on_too_long": "error", "chunk_rows": 300}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error FROM corpq.jobs WHERE id = :job;
SELECT count(*) AS rows FROM ej_err;

-- ---- skip_existing: a growing corpus, only new ids are embedded ----
INSERT INTO ej_sents SELECT id + 1000, s || ' w3' FROM ej_sents WHERE id <= 30;
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_vecs',
                       '{"skip_existing": true, "chunk_rows": 8}') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, result ->> 'rows' AS rows, result ->> 'chunks' AS chunks,
       result ->> 'skip_existing' AS skip_existing
  FROM corpq.jobs WHERE id = :job;
SELECT count(*) AS rows, count(*) FILTER (WHERE id > 1000) AS new_rows,
       count(*) FILTER (WHERE id > 1000 AND e.embedding IS NOT DISTINCT FROM corpq.embed('ej', s.s)) AS new_equal,
       count(*) FILTER (WHERE id > 1000 AND e.embedding IS NULL) AS new_too_long
  FROM ej_vecs e JOIN ej_sents s USING (id);
-- nothing new: no job (a NOTICE, NULL)
SET client_min_messages = notice;
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents;', 'ej_vecs', '{"skip_existing": true}') IS NULL AS no_job;
SET client_min_messages = warning;

-- ---- the model is pinned at submission: a version committed before the job
-- starts (it starts when the submitting transaction commits) changes nothing ----
CREATE TABLE ej_pinned (id bigint, embedding real[]);
BEGIN;
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents WHERE id <= 3', 'ej_pinned') AS job \gset
SELECT corpq.model_quantize('ej') AS int8_version;
COMMIT;
SELECT corpq.job_wait(:job, '600 s');
SELECT args ->> 'model' AS model, result ->> 'model' AS result_model FROM corpq.jobs WHERE id = :job;
SELECT count(*) FILTER (WHERE p.embedding = corpq.embed('ej@1'::corpq.pinned_model, s.s)) AS version_1,
       count(*) FILTER (WHERE p.embedding = corpq.embed('ej', s.s)) AS latest
  FROM ej_pinned p JOIN ej_sents s USING (id);

-- ---- checks at submission ----
CREATE TABLE ej_no_vec (id bigint, v real[]);
CREATE TABLE ej_int_vec (id bigint, embedding int[]);
CREATE TABLE ej_f8_vec (id bigint, embedding double precision[]);
CREATE TABLE ej_text_vec (id bigint, embedding text);
CREATE TABLE ej_int_id (id int, embedding real[]);
-- not an encoder: the translation model
SELECT corpq.embed_job('ej_tr', 'SELECT id, s FROM ej_sents', 'ej_vecs');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_no_vec');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_int_vec');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_f8_vec');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_text_vec');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_int_id');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_cast', '{"column": "nope"}');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_sents');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'no_such_table');
CREATE VIEW ej_view AS SELECT * FROM ej_vecs;
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_view');
SELECT corpq.embed_job('ej', 'SELECT id, s, s FROM ej_sents', 'ej_vecs');
SELECT corpq.embed_job('ej', 'SELECT id, 1 FROM ej_sents', 'ej_vecs');
SELECT corpq.embed_job('ej', 'DELETE FROM ej_sents RETURNING id, s', 'ej_vecs');
\set VERBOSITY terse
SELECT corpq.embed_job('ej_nope', 'SELECT id, s FROM ej_sents', 'ej_vecs');
SELECT corpq.embed_job('ej@9', 'SELECT id, s FROM ej_sents', 'ej_vecs');
\set VERBOSITY default
SELECT corpq.embed_job(NULL, 'SELECT id, s FROM ej_sents', 'ej_vecs');
SELECT corpq.embed_job('ej', NULL, 'ej_vecs');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', NULL);
-- options
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_vecs', '{"colum": "embedding"}');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_vecs', '{"column": "id"}');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_vecs', '{"column": ""}');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_vecs', '{"chunk_rows": 0}');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_vecs', '{"batch_size": 0}');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_vecs', '{"threads": 0}');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_vecs', '{"on_too_long": "skip"}');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_vecs', '{"skip_existing": "yes"}');
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_vecs', '[1]');
-- rights: the job writes with the submitting role's
CREATE ROLE corpq_ej_user;
GRANT SELECT ON ej_sents TO corpq_ej_user;
SET ROLE corpq_ej_user;
SELECT corpq.embed_job('ej', 'SELECT id, s FROM ej_sents', 'ej_vecs');
RESET ROLE;
REVOKE ALL ON ej_sents FROM corpq_ej_user;
REVOKE ALL ON corpq.object_owners FROM corpq_ej_user;
DROP ROLE corpq_ej_user;
-- a NULL id fails the job
CREATE TABLE ej_nullid (id bigint, embedding real[]);
SELECT corpq.embed_job('ej', $$SELECT NULL::bigint, 'w1'$$, 'ej_nullid') AS job \gset
SELECT corpq.job_wait(:job, '600 s');
SELECT state, error FROM corpq.jobs WHERE id = :job;

-- leave the catalog as found (the chunk rows go with their jobs)
SELECT count(*) AS jobs FROM corpq.jobs WHERE kind = 'embed';
DELETE FROM corpq.jobs WHERE kind = 'embed';
SELECT count(*) AS chunks_left FROM corpq.row_job_chunks WHERE job NOT IN (SELECT id FROM corpq.jobs);
SELECT corpq.model_drop(m) FROM unnest(ARRAY['ej', 'ej_tr']) m;
SELECT corpq.vocab_drop('ej_joint');
DROP VIEW ej_view;
DROP CAST (real[] AS ej_vec);
DROP TABLE ej_sents, ej_ref, ej_vecs, ej_cast, ej_err, ej_pinned, ej_no_vec, ej_int_vec, ej_f8_vec,
           ej_text_vec, ej_int_id, ej_nullid;
DROP FUNCTION ej_vec_of(real[]);
DROP TYPE ej_vec;
