-- corpq.mine_vectors(), corpq.margin(), corpq.knn_mean(): margin-based
-- mining of pairs from two sets of vectors (docs/embeddings.md).
--
-- The hand-worked example of test/unit/test_mine.c, unscaled (mine_vectors
-- normalises), in shuffled order: every cosine is 0, +-1/2 or +-1.
--   cos    t20   t30   t40   t50
--   s1     1/2   1/2  -1/2  -1/2
--   s2     1/2    0   -1/2   1/2
--   s3    -1/2  -1/2   1/2   1/2
-- k = 2: r(s) = 1/2 for every source; r(t20, t30, t40, t50) = 1/2, 1/4, 0, 1/2.
-- s1: t20 margin 1, t30 (1/2) / (3/8) = 4/3 -> t30, though the cosines tie;
-- s2: t20 and t50 both margin 1 -> the smaller id, t20;  s3: t40 margin 2.
CREATE TABLE src (id bigint, embedding real[]);
CREATE TABLE tgt (id bigint, embedding real[]);
INSERT INTO src VALUES (3, '{2,-2,-2,2}'), (1, '{-1,1,1,-1}'), (2, '{-3,0,0,0}');
INSERT INTO tgt VALUES (50, '{-1,-1,-1,1}'), (30, '{0,0,5,0}'), (20, '{-1,-1,1,-1}'), (40, '{1,-1,1,1}');

SELECT * FROM corpq.mine_vectors('SELECT id, embedding FROM src', 'SELECT id, embedding FROM tgt',
                                 '{"k": 2}');

-- mutual: t20's best source is s1 (margins 1 and 1, the smaller id), so
-- (s2, t20) goes
SELECT * FROM corpq.mine_vectors('SELECT id, embedding FROM src', 'SELECT id, embedding FROM tgt',
                                 '{"k": 2, "mutual": true}');

-- ties go to the smaller id, not to the query's order: renamed 10, t50 wins
-- s2's tie, and is s2's best both ways
SELECT * FROM corpq.mine_vectors('SELECT id, embedding FROM src',
                                 'SELECT CASE id WHEN 50 THEN 10 ELSE id END, embedding FROM tgt',
                                 '{"k": 2, "mutual": true}');

-- min_margin keeps pairs at or above it
SELECT * FROM corpq.mine_vectors('SELECT id, embedding FROM src', 'SELECT id, embedding FROM tgt',
                                 '{"k": 2, "min_margin": 1.3333333333333333}');

-- k larger than the sets: the lists hold all of the other side
-- (r(s) = 0, 1/8, 0; r(t) = 1/6, 0, -1/6, 1/6; margins 6, 24/7, 6)
SELECT src_id, tgt_id, cosine, round(margin::numeric, 12) AS margin
  FROM corpq.mine_vectors('SELECT id, embedding FROM src', 'SELECT id, embedding FROM tgt', '{"k": 5}');

-- the default k = 4 on these sets, and blocks of one vector: the same pairs
-- with the same bits as the default blocks
SELECT (SELECT array_agg(m ORDER BY src_id) FROM corpq.mine_vectors('SELECT id, embedding FROM src',
            'SELECT id, embedding FROM tgt', '{"block_rows": 1, "block_cols": 1}') m)
     = (SELECT array_agg(m ORDER BY src_id) FROM corpq.mine_vectors('SELECT id, embedding FROM src',
            'SELECT id, embedding FROM tgt') m) AS same_bits;

-- The scalars give the same margins from cosines computed elsewhere: here
-- every cosine in SQL, each side's k-NN mean by knn_mean, then margin().
CREATE TABLE cosines AS
SELECT s.id AS src_id, t.id AS tgt_id,
       (SELECT sum(a * b) / sqrt(sum(a * a) * sum(b * b))
          FROM unnest(s.embedding, t.embedding) u(a, b)) AS cosine
  FROM src s, tgt t;
WITH r_src AS (SELECT src_id, corpq.knn_mean(array_agg(cosine), 2) AS r FROM cosines GROUP BY src_id),
     r_tgt AS (SELECT tgt_id, corpq.knn_mean(array_agg(cosine), 2) AS r FROM cosines GROUP BY tgt_id),
     best AS (
       SELECT DISTINCT ON (c.src_id) c.src_id, c.tgt_id, c.cosine, corpq.margin(c.cosine, a.r, b.r) AS margin
         FROM cosines c JOIN r_src a USING (src_id) JOIN r_tgt b USING (tgt_id)
        WHERE c.tgt_id IN (SELECT c2.tgt_id FROM cosines c2 WHERE c2.src_id = c.src_id
                            ORDER BY c2.cosine DESC, c2.tgt_id LIMIT 2)
        ORDER BY c.src_id, margin DESC NULLS LAST, c.tgt_id)
SELECT b.*, m.margin = b.margin AS equals_mine_vectors
  FROM best b JOIN corpq.mine_vectors('SELECT id, embedding FROM src', 'SELECT id, embedding FROM tgt',
                                      '{"k": 2}') m USING (src_id, tgt_id)
 ORDER BY src_id;

SELECT corpq.margin(0.5, 0.5, 0.25) AS margin, corpq.margin(0.5, 0.25, -0.25) AS no_margin,
       corpq.margin(0.5, 0, 0) AS zero_denominator;
SELECT corpq.knn_mean('{0.1, 0.9, 0.5, 0.7}', 2) AS top2, corpq.knn_mean('{0.1, 0.9, 0.5, 0.7}') AS all4,
       corpq.knn_mean('{0.5, NULL}', 4) AS null_skipped, corpq.knn_mean('{}') AS empty,
       corpq.knn_mean('{NULL}') AS all_null, corpq.knn_mean(NULL) AS strict;
SELECT corpq.knn_mean('{0.5}', 0);
SELECT corpq.knn_mean('{0.5, NaN}', 4);
SELECT corpq.knn_mean('{{0.5}, {0.25}}', 4);

-- NULLs: a row with a NULL id or embedding takes no part
SELECT * FROM corpq.mine_vectors(
  'SELECT id, embedding FROM src UNION ALL VALUES (4, NULL), (NULL, ''{1,1,1,1}''::real[])',
  'SELECT id, embedding FROM tgt', '{"k": 2}');
-- an empty side mines nothing
SELECT count(*) FROM corpq.mine_vectors('SELECT id, embedding FROM src', 'SELECT id, embedding FROM tgt WHERE false');
SELECT count(*) FROM corpq.mine_vectors('SELECT id, embedding FROM src WHERE id IS NULL', 'SELECT id, embedding FROM tgt');
-- a NULL query is an error, NULL options are the defaults
SELECT * FROM corpq.mine_vectors(NULL, 'SELECT id, embedding FROM tgt');
SELECT count(*) FROM corpq.mine_vectors('SELECT id, embedding FROM src', 'SELECT id, embedding FROM tgt', NULL);

-- bad embeddings, each named by its id
SELECT * FROM corpq.mine_vectors('VALUES (7, ''{1,NULL,0}''::real[])', 'SELECT id, embedding FROM tgt');
SELECT * FROM corpq.mine_vectors('VALUES (7, ''{}''::real[])', 'SELECT id, embedding FROM tgt');
SELECT * FROM corpq.mine_vectors('VALUES (7, ''{{1,0},{0,1}}''::real[])', 'SELECT id, embedding FROM tgt');
SELECT * FROM corpq.mine_vectors('VALUES (7, ''{1,0,0,0}''::real[]), (8, ''{1,0,0}'')', 'SELECT id, embedding FROM tgt');
SELECT * FROM corpq.mine_vectors('VALUES (7, ''{1,0,0}''::real[])', 'SELECT id, embedding FROM tgt');
SELECT * FROM corpq.mine_vectors('VALUES (7, ''{0,0,0,0}''::real[])', 'SELECT id, embedding FROM tgt');
SELECT * FROM corpq.mine_vectors('VALUES (7, ''{1,NaN,0,0}''::real[])', 'SELECT id, embedding FROM tgt');
SELECT * FROM corpq.mine_vectors('VALUES (7, ''{1,0,0,0}''::real[]), (7, ''{0,1,0,0}'')', 'SELECT id, embedding FROM tgt');
-- queries of the wrong shape: the column types are checked before a row is read
SELECT * FROM corpq.mine_vectors('SELECT id, embedding::float8[] FROM src', 'SELECT id, embedding FROM tgt');
SELECT * FROM corpq.mine_vectors('SELECT id FROM src', 'SELECT id, embedding FROM tgt');
SELECT * FROM corpq.mine_vectors('SELECT id, embedding FROM src', 'DELETE FROM tgt RETURNING id, embedding');
-- options
SELECT * FROM corpq.mine_vectors('SELECT id, embedding FROM src', 'SELECT id, embedding FROM tgt', '{"kk": 2}');
SELECT * FROM corpq.mine_vectors('SELECT id, embedding FROM src', 'SELECT id, embedding FROM tgt', '{"k": 0}');
SELECT * FROM corpq.mine_vectors('SELECT id, embedding FROM src', 'SELECT id, embedding FROM tgt', '{"min_margin": -1}');
SELECT * FROM corpq.mine_vectors('SELECT id, embedding FROM src', 'SELECT id, embedding FROM tgt', '{"block_rows": 0}');

-- Memory: past work_mem the vectors go to temporary files and are mined a
-- block of targets and a block of sources at a time: the pairs must be the
-- run in memory's, every column compared with =.  At 64 kB, 100 x 100
-- vectors of 16 dimensions are read in memory but mined from files (the
-- default blocks of 256 x 1024 cosines do not fit); at 128 kB, 300 x 300
-- vectors of 32 dimensions go to files while they are read and are ordered
-- by id through them (ids in shuffled order, most vectors twice in a set: equal
-- cosines, ties to the smaller id), with k 4 and 7, mutual, a threshold and
-- small blocks.  What must stay in memory -- the k-NN lists, the ids, the
-- pairs -- is refused past work_mem, and reading stops as soon as the sets
-- outgrow it.
CREATE TABLE big AS
SELECT g AS id, array(SELECT sin(g * 17 + c)::real FROM generate_series(1, 16) c) AS embedding
  FROM generate_series(1, 1000) g;
CREATE TABLE wide AS
SELECT id, array(SELECT sin((id / 4) * 13 + c * 0.7)::real FROM generate_series(1, 32) c) AS embedding
  FROM (SELECT (g * 7919) % 1009 AS id FROM generate_series(1, 600) g) g;
CREATE TABLE spill_cases (c int, src text, tgt text, opts jsonb, mem text);
INSERT INTO spill_cases VALUES
  (1, 'SELECT id, embedding FROM big WHERE id <= 100', 'SELECT id, embedding FROM big WHERE id > 900', '{}', '64kB'),
  (2, 'SELECT id, embedding FROM big WHERE id <= 100', 'SELECT id, embedding FROM big WHERE id > 900',
   '{"block_rows": 10, "block_cols": 10}', '64kB'),
  (3, 'SELECT id, embedding FROM wide WHERE id % 2 = 0', 'SELECT id, embedding FROM wide WHERE id % 2 = 1', '{}', '128kB'),
  (4, 'SELECT id, embedding FROM wide WHERE id % 2 = 0', 'SELECT id, embedding FROM wide WHERE id % 2 = 1', '{"k": 7}', '128kB'),
  (5, 'SELECT id, embedding FROM wide WHERE id % 2 = 0', 'SELECT id, embedding FROM wide WHERE id % 2 = 1',
   '{"mutual": true}', '128kB'),
  (6, 'SELECT id, embedding FROM wide WHERE id % 2 = 0', 'SELECT id, embedding FROM wide WHERE id % 2 = 1',
   '{"min_margin": 1.00005, "block_rows": 7, "block_cols": 33}', '128kB'),
  (7, 'SELECT id, embedding FROM wide', 'SELECT id, embedding FROM wide WHERE id % 3 = 0', '{"mutual": true}', '128kB');
CREATE TABLE in_memory (c int, src_id bigint, tgt_id bigint, cosine float8, margin float8);
CREATE TABLE spilled (LIKE in_memory);
CREATE FUNCTION mine_case(c int, spill boolean) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r spill_cases;
BEGIN
  SELECT * INTO r FROM spill_cases WHERE spill_cases.c = mine_case.c;
  PERFORM set_config('work_mem', CASE WHEN spill THEN r.mem ELSE '1GB' END, true);
  EXECUTE format('INSERT INTO %I SELECT %s, * FROM corpq.mine_vectors(%L, %L, %L)',
                 CASE WHEN spill THEN 'spilled' ELSE 'in_memory' END, c, r.src, r.tgt, r.opts);
END $$;
SELECT count(mine_case(c, false)) + count(mine_case(c, true)) AS runs FROM spill_cases;
SELECT c, (SELECT count(*) FROM in_memory m WHERE m.c = s.c) AS pairs,
       (SELECT count(*) FROM spilled m WHERE m.c = s.c) = (SELECT count(*) FROM in_memory m WHERE m.c = s.c) AND
       NOT EXISTS (SELECT * FROM in_memory m WHERE m.c = s.c EXCEPT SELECT * FROM spilled m WHERE m.c = s.c) AS same
  FROM spill_cases s ORDER BY c;
-- ties were there: a pair's target with a twin among the targets (equal
-- cosines) is the one with the smaller id
SELECT count(*) > 10 AS twins, bool_and(m.tgt_id < b.id) AS smaller_id
  FROM in_memory m JOIN wide a ON a.id = m.tgt_id
  JOIN wide b ON b.embedding = a.embedding AND b.id <> a.id AND b.id % 2 = 1
 WHERE m.c = 3;
SET work_mem = '64kB';
-- the lists of 1000 x 1000 vectors (k 4) do not fit: reading stops in the sources
SELECT count(*) FROM corpq.mine_vectors('SELECT id, embedding FROM big', 'SELECT id, embedding FROM big');
-- with k = 100, after 20 sources
SELECT count(*) FROM corpq.mine_vectors('SELECT id, embedding FROM big WHERE id <= 20',
                                        'SELECT id, embedding FROM big', '{"k": 100}');
RESET work_mem;
DROP FUNCTION mine_case(int, boolean);
DROP TABLE spill_cases, in_memory, spilled, wide;
-- a set mined against itself: every vector's best is itself
SELECT count(*) AS pairs, count(*) FILTER (WHERE src_id = tgt_id) AS self,
       min(cosine) > 0.99999 AS cosine_one
  FROM corpq.mine_vectors('SELECT id, embedding FROM big', 'SELECT id, embedding FROM big',
                          '{"mutual": true, "block_rows": 100, "block_cols": 300}');
-- and the same on two threads of the pool, bit for bit
CREATE TABLE one_thread AS
SELECT * FROM corpq.mine_vectors('SELECT id, embedding FROM big WHERE id % 3 = 0',
                                 'SELECT id, embedding FROM big WHERE id % 3 <> 0', '{"block_rows": 64}');
SET corpq.threads = 2;
SELECT count(*) AS pairs,
       count(*) = (SELECT count(*) FROM one_thread) AND
       NOT EXISTS (SELECT * FROM one_thread EXCEPT
                   SELECT * FROM corpq.mine_vectors('SELECT id, embedding FROM big WHERE id % 3 = 0',
                                                    'SELECT id, embedding FROM big WHERE id % 3 <> 0',
                                                    '{"block_rows": 64}')) AS same_on_two_threads
  FROM one_thread;
RESET corpq.threads;
