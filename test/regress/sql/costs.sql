-- The planner's costs of corpq's functions (docs/scaling.md, "Function
-- costs"): with the COST each function declares, the planner runs per-row
-- scoring and filtering in parallel workers on a corpus above
-- min_parallel_table_scan_size, with no ALTER FUNCTION; with COST 1 (before)
-- it did not.  EXPLAIN only: nothing is scored, no model is needed.  Every
-- setting that enters the choice is written out, so the plans do not depend
-- on the server's configuration.
SET client_min_messages = warning;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 1000;
SET parallel_tuple_cost = 0.1;
SET min_parallel_table_scan_size = '8MB';
SET parallel_leader_participation = on;
SET force_parallel_mode = off;
SET enable_seqscan = on;
SET jit = off;

-- 4500 pages (35 MB, above min_parallel_table_scan_size: 2 workers planned)
-- of 36000 pairs: short sentences and a padding column
CREATE TABLE cost_pairs (id bigint, src text, tgt text, pad text) WITH (autovacuum_enabled = off);
INSERT INTO cost_pairs
SELECT g, 'the beginning of the book ' || g, 'el principio del libro ' || g, repeat('x', 900)
  FROM generate_series(1, 36000) g;
VACUUM ANALYZE cost_pairs;
SELECT pg_relation_size('cost_pairs') / current_setting('block_size')::int BETWEEN 3500 AND 8000 AS pages_ok;

-- what a curation run writes: every pair's rejecting filters, or its score
EXPLAIN (COSTS OFF)
CREATE TABLE cost_rejects AS SELECT id, corpq.filter_rejects(src, tgt) AS rejected_by FROM cost_pairs;
EXPLAIN (COSTS OFF)
SELECT id, corpq.sent_prob('m', src, tgt) FROM cost_pairs;
EXPLAIN (COSTS OFF)
SELECT id FROM cost_pairs WHERE corpq.lang_is(src, 'en');
EXPLAIN (COSTS OFF)
SELECT sum(corpq.sent_prob('m', src, tgt)) FROM cost_pairs;
-- cheap conditions first: the planner orders a scan's quals by cost
EXPLAIN (COSTS OFF)
SELECT id FROM cost_pairs
 WHERE corpq.sent_prob('m', src, tgt) > 0.1 AND corpq.length_ratio(src, tgt) < 3 AND id % 2 = 0;

-- before: the same queries with the default COST 1 ran serially
BEGIN;
ALTER FUNCTION corpq.filter_rejects COST 1;
ALTER FUNCTION corpq.sent_prob(text, text, text) COST 1;
ALTER FUNCTION corpq.lang_is COST 1;
EXPLAIN (COSTS OFF)
CREATE TABLE cost_rejects AS SELECT id, corpq.filter_rejects(src, tgt) AS rejected_by FROM cost_pairs;
EXPLAIN (COSTS OFF)
SELECT id, corpq.sent_prob('m', src, tgt) FROM cost_pairs;
EXPLAIN (COSTS OFF)
SELECT id FROM cost_pairs WHERE corpq.lang_is(src, 'en');
ROLLBACK;

-- a small corpus stays serial (below min_parallel_table_scan_size) unless the
-- table says how many workers it wants
CREATE TABLE cost_small AS SELECT id, src, tgt FROM cost_pairs WHERE id <= 2000;
ANALYZE cost_small;
EXPLAIN (COSTS OFF)
SELECT id, corpq.sent_prob('m', src, tgt) FROM cost_small;
ALTER TABLE cost_small SET (parallel_workers = 2);
EXPLAIN (COSTS OFF)
SELECT id, corpq.sent_prob('m', src, tgt) FROM cost_small;

-- the costs themselves (functions with a COST other than PostgreSQL's
-- default: 1 in C, 100 in SQL and PL/pgSQL), so that a change is deliberate
-- and docs/scaling.md's table stays true
SELECT p.proname, l.lanname, string_agg(DISTINCT p.procost::text, ', ') AS cost, count(*) AS overloads
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.pronamespace = 'corpq'::regnamespace AND p.prokind = 'f'
   AND p.procost <> CASE l.lanname WHEN 'c' THEN 1 ELSE 100 END
 GROUP BY p.proname, l.lanname ORDER BY min(p.procost), p.proname;

DROP TABLE cost_pairs, cost_small;
RESET ALL;
