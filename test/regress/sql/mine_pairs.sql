-- corpq.mine_pairs(): margin-based mining on sentences (docs/embeddings.md).
-- Each query's sentences are embedded with an encoder model in batches
-- (corpq_embed_rows, the bits of corpq.embed()) and mined as mine_vectors
-- mines: the result must equal mine_vectors over the embed() vectors of the
-- same sentences, every float8 compared with =, with the default options,
-- k and mutual, small batches and on two threads.  Then NULLs, sentences too
-- long, empty sides, and the refusals: no encoder, bad queries, bad options,
-- duplicate ids, work_mem too small.  An untrained tiny encoder (fixed seed)
-- is enough: its vectors are arbitrary but deterministic.
SET client_min_messages = warning;

-- sources: 1 to 5 words of 40; targets: 1 to 6 words of 40, other ids
CREATE TABLE mp_src AS
SELECT g AS id,
       (SELECT string_agg('a' || ((g * 7919 + k * 104729 + (g % 13) * k * k) % 40), ' ' ORDER BY k)
          FROM generate_series(1, 1 + g % 5) k) AS sentence
  FROM generate_series(1, 120) g;
CREATE TABLE mp_tgt AS
SELECT 1000 + g AS id,
       (SELECT string_agg('a' || ((g * 104729 + k * 7919 + (g % 11) * k) % 40), ' ' ORDER BY k)
          FROM generate_series(1, 1 + g % 6) k) AS sentence
  FROM generate_series(1, 150) g;
SELECT corpq.vocab_build('mp_joint', 'SELECT sentence FROM mp_src UNION ALL SELECT sentence FROM mp_tgt') > 0 AS vocab;
-- max_positions 8: <s>, at most 6 tokens, </s>
SELECT corpq.model_create('mp', '{"preset": "tiny", "kind": "encoder", "max_positions": 8}',
                          'mp_joint', 'mp_joint', 7);

-- the reference: embed() per row, then mine_vectors
CREATE TABLE mp_src_vec AS SELECT id, corpq.embed('mp', sentence) AS embedding FROM mp_src;
CREATE TABLE mp_tgt_vec AS SELECT id, corpq.embed('mp', sentence) AS embedding FROM mp_tgt;
-- mine_pairs(opts and the embedding options emb) against mine_vectors(opts):
-- the pairs in order, every column compared with = (a margin one ulp off is
-- a difference); without a classifier the quality column is NULL
CREATE FUNCTION pg_temp.mp_same(src text, tgt text, opts jsonb, emb jsonb DEFAULT NULL,
                                OUT pairs bigint, OUT same boolean)
LANGUAGE sql AS $$
  WITH p AS (SELECT array_agg((m.src_id, m.tgt_id, m.cosine, m.margin) ORDER BY src_id)
                         FILTER (WHERE m.quality IS NULL) AS a, count(*) AS n
               FROM corpq.mine_pairs('mp', src, tgt, CASE WHEN emb IS NULL THEN opts ELSE opts || emb END) m),
       v AS (SELECT array_agg((m.src_id, m.tgt_id, m.cosine, m.margin) ORDER BY src_id) AS a
               FROM corpq.mine_vectors('SELECT id, embedding FROM mp_src_vec', 'SELECT id, embedding FROM mp_tgt_vec', opts) m)
  SELECT p.n, p.a = v.a FROM p, v $$;

SELECT 'default' AS options, * FROM pg_temp.mp_same('SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt', '{}')
UNION ALL
SELECT 'k 2, mutual', * FROM pg_temp.mp_same('SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt',
                                             '{"k": 2, "mutual": true}')
UNION ALL
SELECT 'k 8, min_margin 1, small blocks', * FROM pg_temp.mp_same('SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt',
                                             '{"k": 8, "min_margin": 1, "block_rows": 7, "block_cols": 13}');
-- the sentences' order in the queries, batches of one sentence, batches cut
-- by corpq.max_batch_mb: the same bits
SELECT * FROM pg_temp.mp_same('SELECT id, sentence FROM mp_src ORDER BY sentence DESC',
                              'SELECT id, sentence FROM mp_tgt ORDER BY id DESC', '{}', '{"batch_size": 1}');
SET corpq.max_batch_mb = 1;
SELECT * FROM pg_temp.mp_same('SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt', '{"k": 3}',
                              '{"batch_size": 4096, "on_too_long": "null"}');
RESET corpq.max_batch_mb;
SET corpq.threads = 2;
SELECT * FROM pg_temp.mp_same('SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt', '{"mutual": true}');
RESET corpq.threads;
-- a pinned version is written name@N; the pairs are those of the name
SELECT (SELECT array_agg(m ORDER BY src_id) FROM corpq.mine_pairs('mp@1', 'SELECT id, sentence FROM mp_src',
                                                                  'SELECT id, sentence FROM mp_tgt') m)
     = (SELECT array_agg(m ORDER BY src_id) FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src',
                                                                  'SELECT id, sentence FROM mp_tgt') m) AS pinned_same;

-- NULLs: a row with a NULL id or sentence takes no part; NULL options are
-- the defaults; an empty side gives no rows
SELECT * FROM pg_temp.mp_same('SELECT id, sentence FROM mp_src UNION ALL VALUES (NULL, ''a1 a2''), (999, NULL)',
                              'SELECT id, sentence FROM mp_tgt UNION ALL SELECT NULL::int, NULL::text', NULL);
SELECT count(*) FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt WHERE false');
SELECT count(*) FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src WHERE id IS NULL', 'SELECT id, sentence FROM mp_tgt');
-- the empty sentence has a vector, so it is mined
SELECT count(*) AS pairs FROM corpq.mine_pairs('mp', 'VALUES (1, '''')', 'SELECT id, sentence FROM mp_tgt');

-- too long (7 tokens): left out, with a NOTICE per side; embed() gives
-- those sentences NULL, which mine_vectors skips, so the pairs still agree
SET client_min_messages = notice;
SELECT * FROM pg_temp.mp_same('SELECT id, sentence FROM mp_src UNION ALL VALUES (998, ''a1 a1 a1 a1 a1 a1 a1'')',
                              'SELECT id, sentence FROM mp_tgt UNION ALL VALUES (1998, ''a1 a2 a3 a4 a5 a6 a7''), (1999, ''a2 a2 a2 a2 a2 a2 a2 a2'')',
                              '{}');
SET client_min_messages = warning;
SELECT * FROM corpq.mine_pairs('mp', 'VALUES (998, ''a1 a1 a1 a1 a1 a1 a1'')', 'SELECT id, sentence FROM mp_tgt',
                               '{"on_too_long": "error"}');

-- refusals: NULL arguments, models, queries, options, ids
\getenv regress_dir PG_ABS_SRCDIR
\set fixture :regress_dir '/fixtures/sql_error.sql'
\i :fixture
SELECT corpq.model_create('mp_tr', '{"preset": "tiny", "max_positions": 8}', 'mp_joint', 'mp_joint', 7);
SELECT pg_temp.sql_error(q) FROM (VALUES
  ($$SELECT * FROM corpq.mine_pairs(NULL, 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', NULL)$$),
  ($$SELECT * FROM corpq.mine_pairs('mp_tr', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp_nope', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp@2', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT id FROM mp_src', 'SELECT id, sentence FROM mp_tgt')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT sentence, id FROM mp_src', 'SELECT id, sentence FROM mp_tgt')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT id, embedding FROM mp_src_vec', 'SELECT id, sentence FROM mp_tgt')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', 'DELETE FROM mp_tgt RETURNING id, sentence')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt', '{"kk": 2}')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt', '{"k": 0}')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt', '{"batch_size": 0}')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt', '{"on_too_long": "skip"}')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt', '[1]')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT id % 7, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt', '{"classifier_k": 2}')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt', '{"min_quality": 0.2}')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt', '{"classifier": ""}')$$),
  ($$SELECT * FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt', '{"classifier": "mp_no_such"}')$$)
) t(q);
-- the whole message of one, with its hint
SELECT * FROM corpq.mine_pairs('mp_tr', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt');

-- Memory: past work_mem the vectors go to temporary files while they are
-- embedded and are mined block by block: at 64 kB the 120 x 150 sentences
-- give the pairs of a run in memory, every column compared with =; what
-- must stay in memory (the k-NN lists: 8 (k + 1) bytes a vector, the ids,
-- the pairs) is refused as soon as the sets outgrow it, here with k = 100
-- while the sources are embedded, before any target is
CREATE TABLE mp_mem AS
SELECT * FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt',
                               '{"mutual": true}');
SET work_mem = '64kB';
CREATE TABLE mp_spilled AS
SELECT * FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt',
                               '{"mutual": true}');
SELECT count(*) AS pairs, count(*) = (SELECT count(*) FROM mp_spilled) AND
       NOT EXISTS (SELECT * FROM mp_mem EXCEPT SELECT * FROM mp_spilled) AS same
  FROM mp_mem;
SELECT count(*) FROM corpq.mine_pairs('mp', 'SELECT id, sentence FROM mp_src', 'SELECT id, sentence FROM mp_tgt',
                                      '{"k": 100}');
RESET work_mem;
DROP TABLE mp_mem, mp_spilled;

-- labels
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel, p.proisstrict
  FROM pg_proc p
 WHERE p.pronamespace = 'corpq'::regnamespace AND p.proname IN ('mine_pairs', 'mine_vectors')
 ORDER BY 1::text;

SELECT corpq.model_drop('mp'), corpq.model_drop('mp_tr');
SELECT corpq.vocab_drop('mp_joint');
DROP TABLE mp_src, mp_tgt, mp_src_vec, mp_tgt_vec;
