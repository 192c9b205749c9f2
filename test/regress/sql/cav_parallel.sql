-- cav_accumulate under parallel query: plan shape, and results equal to the
-- serial ones byte for byte (the partial states are flat corpq.cav values
-- combined by cav_merge).  Also window use of the expanded state.
CREATE TABLE cav_par AS
SELECT g AS id, 'dom' || (g % 4) AS domain,
       'w' || (g % 97) || ' w' || (g % 13) || ' s' || (g % 31) AS src,
       't' || (g % 89) || ' t' || (g % 7) || ' u' || (g % 5) || ' t' || (g % 3) AS tgt
FROM generate_series(1, 20000) g;
ANALYZE cav_par;
SELECT corpq.bpe_import('cav_par_bpe', E'#version: 0.2\nt 1\nt1 0</w>\nw 2\n');

SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT corpq.cav_accumulate(src, tgt, 6) FROM cav_par;
EXPLAIN (COSTS OFF) SELECT domain, corpq.cav_accumulate(src, tgt, 6) FROM cav_par GROUP BY domain;
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT domain, corpq.cav_accumulate(src, tgt, 6) FROM cav_par GROUP BY domain;
RESET enable_sort;

-- workers really ran
\getenv regress_dir PG_ABS_SRCDIR
\set fixture :regress_dir '/fixtures/workers_launched.sql'
\i :fixture
SELECT pg_temp.workers_launched('SELECT corpq.cav_accumulate(src, tgt, 6) FROM cav_par') > 0 AS parallel_ran;

-- each query below is shown with its plan, then run with the plan shown and
-- its result kept in a psql variable (md5 of the canonical bytes per group)
\set q_all 'SELECT md5(corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 6))) AS all_ FROM cav_par'
\set q_res 'SELECT md5(corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 6, ARRAY[''t1'', ''t2'', ''u0'']))) AS res_ FROM cav_par'
\set q_bpe 'SELECT md5(corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 6, NULL, ''cav_par_bpe''))) AS bpe_ FROM cav_par'
\set q_dom 'SELECT string_agg(domain || '':'' || md5(b), '','' ORDER BY domain) AS dom_ FROM (SELECT domain, corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 6)) AS b FROM cav_par GROUP BY domain) g'
EXPLAIN (COSTS OFF) :q_all;
:q_all \gset par_
EXPLAIN (COSTS OFF) :q_res;
:q_res \gset par_
EXPLAIN (COSTS OFF) :q_bpe;
:q_bpe \gset par_
EXPLAIN (COSTS OFF) :q_dom;
:q_dom \gset par_
SET enable_sort = off;
EXPLAIN (COSTS OFF) :q_dom;
:q_dom \gset hash_
RESET enable_sort;

SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) :q_all;
:q_all \gset ser_
:q_res \gset ser_
:q_bpe \gset ser_
EXPLAIN (COSTS OFF) :q_dom;
:q_dom \gset ser_
RESET max_parallel_workers_per_gather;

SELECT :'par_all_' = :'ser_all_' AS all_equal,
       :'par_res_' = :'ser_res_' AS restricted_equal,
       :'par_bpe_' = :'ser_bpe_' AS bpe_equal,
       :'par_dom_' = :'ser_dom_' AS grouped_equal,
       :'hash_dom_' = :'ser_dom_' AS hash_grouped_equal,
       :'ser_all_' <> :'ser_bpe_' AS bpe_differs;
CREATE TEMP TABLE ser AS
SELECT 'all' AS k, corpq.cav_accumulate(src, tgt, 6) AS c FROM cav_par
UNION ALL
SELECT 'bpe', corpq.cav_accumulate(src, tgt, 6, NULL, 'cav_par_bpe') FROM cav_par
UNION ALL
SELECT domain, corpq.cav_accumulate(src, tgt, 6) FROM cav_par GROUP BY domain;
SELECT k, pairs, matrices, nonzeros,
       md5(corpq.cav_to_bytea(c)) = ANY (ARRAY[:'ser_all_', :'ser_bpe_'] || string_to_array(regexp_replace(:'ser_dom_', 'dom.:', '', 'g'), ',')) AS known
FROM ser, corpq.cav_stats(c) ORDER BY k;
-- the BPE run saw merged subwords
SELECT token FROM corpq.cav_tokens(corpq.cav_from_bytea((SELECT corpq.cav_to_bytea(c) FROM ser WHERE k = 'bpe')))
WHERE token LIKE '%@@' ORDER BY token;

-- window aggregates: the final function runs on the live state between rows
SELECT id, corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 6) OVER (ORDER BY id)) =
       (SELECT corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 6)) FROM cav_par q WHERE q.id <= o.id) AS prefix_ok
FROM cav_par o WHERE id <= 4 ORDER BY id;
SELECT DISTINCT domain,
       corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 6) OVER (PARTITION BY domain)) =
       (SELECT corpq.cav_to_bytea(c) FROM ser WHERE k = domain) AS partition_ok
FROM cav_par ORDER BY domain;

-- the byte cap holds in every process: with 16 MB per state (work_mem
-- 64kB x 256) each partial state overflows, whichever process reports first
SET max_parallel_workers_per_gather = 2;
SET work_mem = '64kB';
EXPLAIN (COSTS OFF)
SELECT corpq.cav_accumulate(src, tgt || repeat(' z' || id, 30), 2000) IS NULL FROM cav_par;
\set VERBOSITY sqlstate
SELECT corpq.cav_accumulate(src, tgt || repeat(' z' || id, 30), 2000) IS NULL FROM cav_par;
\set VERBOSITY default
RESET work_mem;
RESET max_parallel_workers_per_gather;

-- hash aggregation that spills to disk gives the same per-group CAVs as sorting
SET max_parallel_workers_per_gather = 0;
SET work_mem = '64kB';
SET enable_sort = off;
\set q_spill 'SELECT string_agg(md5(corpq.cav_to_bytea(c)), '','' ORDER BY g) AS groups_ FROM (SELECT id % 500 AS g, corpq.cav_accumulate(src, tgt, 6) AS c FROM cav_par GROUP BY 1) s'
CREATE FUNCTION pg_temp.hash_batches(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE p json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, FORMAT json) ' || q INTO p;
    RETURN (SELECT (p->0->'Plan'->'Plans'->0->>'HashAgg Batches')::int);
END $$;
SELECT pg_temp.hash_batches(:'q_spill') > 1 AS spilled;
:q_spill \gset hash_
RESET enable_sort;
SET enable_hashagg = off;
:q_spill \gset sort_
SELECT :'hash_groups_' = :'sort_groups_' AS spill_equal;
RESET enable_hashagg;
RESET work_mem;
RESET max_parallel_workers_per_gather;

SELECT corpq.bpe_drop('cav_par_bpe');
DROP TABLE cav_par;
