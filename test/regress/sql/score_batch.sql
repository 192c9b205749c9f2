-- Batched corpq.score(): a pair gets the same bits as from the per-row
-- functions whatever batch it is in, whatever else is in the batch and in
-- which position, whatever corpq.threads; MC-dropout uncertainty included
-- (README "Determinism").  test/run-cores.sh reruns this file under every
-- OpenBLAS core (corpq.blas_core), so the expected output holds for all.
SET client_min_messages = warning;

CREATE TABLE batch_pairs AS
SELECT g::bigint AS id,
       'a' || (g % 7) || ' b' || (g % 5) || repeat(' c' || (g % 3), g % 4) AS src,
       CASE WHEN g % 11 = 0 THEN '' ELSE 'x' || (g % 5) || repeat(' y' || (g % 7), g % 5) END AS tgt
  FROM generate_series(1, 300) g;
INSERT INTO batch_pairs VALUES (301, NULL, 'x1'), (302, 'a1', NULL), (303, '', 'x1 y2');
SELECT corpq.vocab_build('batch_src', 'SELECT src FROM batch_pairs');
SELECT corpq.vocab_build('batch_tgt', 'SELECT tgt FROM batch_pairs');
SELECT corpq.model_create('b1', '{"preset": "tiny", "max_positions": 12}', 'batch_src', 'batch_tgt', 7);

-- batched score() returns exactly the per-row values, in the query's order
SELECT b, what,
       count(*) AS rows,
       count(*) FILTER (WHERE sc.score IS NOT DISTINCT FROM
                        CASE what WHEN 'sent_prob' THEN corpq.sent_prob('b1', p.src, p.tgt)
                                  WHEN 'sent_logprob' THEN corpq.sent_logprob('b1', p.src, p.tgt)
                                  ELSE corpq.uncertainty('b1', p.src, p.tgt, 'comev', 3, 5) END) AS equal
  FROM unnest('{1,7,64}'::int[]) b, unnest('{sent_prob,sent_logprob,uncertainty}'::text[]) what,
       LATERAL corpq.score('b1', 'SELECT id, src, tgt FROM batch_pairs', what, b, 'comev', 3, 5) sc
  JOIN batch_pairs p ON p.id = sc.id
 GROUP BY b, what ORDER BY b, what;
SELECT array_agg(id) = array_agg(id ORDER BY id DESC) AS query_order, count(*) FILTER (WHERE score IS NULL) AS null_scores
  FROM corpq.score('b1', 'SELECT id, src, tgt FROM batch_pairs ORDER BY id DESC');
SELECT id, score > 0 AS scored
  FROM corpq.score('b1', $$SELECT NULL::int, 'a1', 'x1' UNION ALL SELECT 5::smallint, 'a2'::varchar, 'x2'$$);
SELECT count(*) FROM corpq.score('b1', 'SELECT id, src, tgt FROM batch_pairs WHERE false');
SELECT count(*) FILTER (WHERE sc.score = corpq.sent_logprob('b1', p.src, p.tgt)) AS huge_batch_equal
  FROM corpq.score('b1', 'SELECT id, src, tgt FROM batch_pairs', 'sent_logprob', 2147483647) sc
  JOIN batch_pairs p USING (id);
-- other companions and positions: the rows shuffled, batches of 5 and 300
SELECT b, count(*) AS rows,
       count(*) FILTER (WHERE sc.score IS NOT DISTINCT FROM corpq.sent_logprob('b1', p.src, p.tgt)) AS equal
  FROM unnest('{5,300}'::int[]) b,
       LATERAL corpq.score('b1', 'SELECT id, src, tgt FROM batch_pairs ORDER BY md5(id::text)', 'sent_logprob', b) sc
  JOIN batch_pairs p ON p.id = sc.id
 GROUP BY b ORDER BY b;
-- corpq.threads does not enter inference
CREATE TEMP TABLE one_thread AS
SELECT id, corpq.sent_logprob('b1', src, tgt) AS lp, corpq.uncertainty('b1', src, tgt, 'vartp', 2, 3) AS u
  FROM batch_pairs;
SET corpq.threads = 2;
SELECT count(*) FILTER (WHERE sc.score IS NOT DISTINCT FROM o.lp) AS batched_equal,
       count(*) FILTER (WHERE corpq.uncertainty('b1', p.src, p.tgt, 'vartp', 2, 3) IS NOT DISTINCT FROM o.u) AS mc_equal
  FROM corpq.score('b1', 'SELECT id, src, tgt FROM batch_pairs', 'sent_logprob', 16) sc
  JOIN batch_pairs p USING (id) JOIN one_thread o USING (id);
-- whole batches shared out by pairs (several parts per batch on the pool)
SELECT b, count(*) FILTER (WHERE sc.score IS NOT DISTINCT FROM o.lp) AS parts_equal
  FROM unnest('{64,300}'::int[]) b,
       LATERAL corpq.score('b1', 'SELECT id, src, tgt FROM batch_pairs ORDER BY md5(id::text)', 'sent_logprob', b) sc
  JOIN one_thread o USING (id)
 GROUP BY b ORDER BY b;
SELECT count(*) FILTER (WHERE sc.score IS NOT DISTINCT FROM o.u) AS mc_parts_equal
  FROM corpq.score('b1', 'SELECT id, src, tgt FROM batch_pairs', 'uncertainty', 300, 'vartp', 2, 3) sc
  JOIN one_thread o USING (id);
RESET corpq.threads;
-- score() errors
SELECT * FROM corpq.score('b1', 'SELECT src, tgt FROM batch_pairs');
SELECT * FROM corpq.score('b1', 'SELECT id, src, 5 FROM batch_pairs');
SELECT * FROM corpq.score('b1', 'DELETE FROM batch_pairs RETURNING id, src, tgt');
SELECT * FROM corpq.score('b1', 'SELECT id, src, tgt FROM batch_pairs', 'bleu');
SELECT * FROM corpq.score('b1', 'SELECT id, src, tgt FROM batch_pairs', 'sent_prob', 0);
SELECT * FROM corpq.score('b1', 'SELECT id, src, tgt FROM batch_pairs', 'uncertainty', 8, 'enteos', 0);
SELECT * FROM corpq.score('b1', 'SELECT id, src, tgt FROM batch_pairs', 'uncertainty', 8, 'nope');
SELECT * FROM corpq.score('b1', $$SELECT 1, 'a1', 'x1 x1 x1 x1 x1 x1 x1 x1 x1 x1 x1 x1'$$);
SELECT * FROM corpq.score('b1', $$SELECT 1, 'a1', 'x1 x1 x1 x1 x1 x1 x1 x1 x1 x1 x1 x1'$$, 'sent_prob', 64, 'enteos', 30, 0, 'error');
\set VERBOSITY terse
SELECT * FROM corpq.score('nope', 'SELECT id, src, tgt FROM batch_pairs');
\set VERBOSITY default


SELECT corpq.model_drop('b1');
SELECT corpq.vocab_drop('batch_src'), corpq.vocab_drop('batch_tgt');
DROP TABLE batch_pairs;
