#!/usr/bin/env bash
# corpq.cav_accumulate over 100k real en-es pairs (the corpora test/lib.sh
# finds, cycled to 100k) in a throw-away cluster: time with 0 and 2 parallel
# workers in the same session (best of 3), the state's byte accounting (peak), the backend's
# peak RSS, nonzeros and value size.  Needs the extension installed
# (make install).  Usage: bench_cav_sql.sh [n_pairs]
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. test/bench/bench_lib.sh
corpq_corpora
corpq_in_cluster -o max_worker_processes=16 -o max_parallel_workers=8 -- "$@"
N=${1:-100000}
SQL=$(mktemp /tmp/bench_cav_sql.XXXXXX.sql)
trap 'rm -f "$SQL"' EXIT
{
	raw_sql
	cat <<SQL
CREATE TABLE pairs AS
SELECT row_number() OVER (ORDER BY k, n) AS id, domain, src, tgt
FROM generate_series(0, 9) k, raw ORDER BY k, n LIMIT $N;
ANALYZE pairs;
SQL
	cat <<'SQL'
SELECT count(*) AS pairs, (SELECT count(*) FROM raw) AS unique_pairs, pg_size_pretty(pg_total_relation_size('pairs')) AS table_size FROM pairs;
SQL
	cat test/bench/race.sql
	cat <<'SQL'
CREATE FUNCTION vm_hwm_kb() RETURNS bigint LANGUAGE sql AS $$
    SELECT substring(pg_read_file('/proc/' || pg_backend_pid() || '/status') FROM 'VmHWM:\s*(\d+)')::bigint
$$;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET work_mem = '64MB';
-- count(*) over the same rows: the scan cost every run pays
SET max_parallel_workers_per_gather = 0;
SELECT round(best_ms('SELECT count(*) FROM pairs', 3)::numeric, 1) AS scan_only_ms;
SQL
	for L in 256 50; do
		cat <<SQL
\\echo
\\echo == l_max $L ==
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT corpq.cav_accumulate(src, tgt, $L) FROM pairs;
SELECT vm_hwm_kb() AS hwm_before \\gset
SELECT round(ms_0::numeric, 1) AS serial_ms, round(ms_2::numeric, 1) AS parallel_ms
FROM race('SELECT md5(corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, $L))) FROM pairs', 3) \\gset
SELECT vm_hwm_kb() AS hwm_after \\gset
SELECT :serial_ms AS ms_0_workers, :parallel_ms AS ms_2_workers,
       round(:serial_ms / :parallel_ms, 2) AS speedup,
       round(1000 * :serial_ms / (SELECT count(*) FROM pairs), 2) AS us_per_pair_serial,
       round((:hwm_after - :hwm_before) / 1024.0, 1) AS backend_peak_rss_growth_mb;
-- where the parallel time goes: per-worker partial aggregation vs the
-- leader's combine (cav_merge) and final
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, SUMMARY OFF)
SELECT md5(corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, $L))) FROM pairs;
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE c$L AS SELECT corpq.cav_accumulate(src, tgt, $L) AS c FROM pairs;
SELECT pairs, source_tokens, target_tokens, matrices, nonzeros,
       round(bytes / 1048576.0, 1) AS value_mb, round(bytes::numeric / nonzeros, 2) AS bytes_per_nonzero,
       round(pg_column_size(c) / 1048576.0, 1) AS stored_mb
FROM c$L, corpq.cav_stats(c);
-- the state's own accounting, reported by the final function at DEBUG1
SET client_min_messages = debug1;
SELECT (SELECT corpq.cav_accumulate(src, tgt, $L) FROM pairs) IS NOT NULL AS done;
RESET client_min_messages;
-- combining two halves: cav_merge (linear byte merge, the combine function)
-- against cav_sum (rebuild a hash state from each value, merge, serialise)
CREATE TEMP TABLE h$L AS
SELECT id <= (SELECT count(*) / 2 FROM pairs) AS first, corpq.cav_accumulate(src, tgt, $L) AS c
FROM pairs GROUP BY 1;
SELECT round(m::numeric, 1) AS cav_merge_ms, round(s::numeric, 1) AS cav_sum_ms, round((s / m)::numeric, 2) AS ratio,
       (SELECT md5(corpq.cav_to_bytea(corpq.cav_merge(a.c, b.c))) FROM h$L a, h$L b WHERE a.first AND NOT b.first)
       = (SELECT md5(corpq.cav_to_bytea(c)) FROM c$L) AS merged_equals_one_pass
FROM best_ms('SELECT md5(corpq.cav_to_bytea(corpq.cav_merge(a.c, b.c))) FROM h$L a, h$L b WHERE a.first AND NOT b.first', 3) m,
     best_ms('SELECT md5(corpq.cav_to_bytea(corpq.cav_sum(c))) FROM h$L', 3) s;
SELECT round(best_ms('SELECT count(*) FROM c$L, corpq.cav_tokens(c)', 3)::numeric, 1) AS cav_tokens_ms,
       round(best_ms('SELECT count(*) FROM c$L, corpq.cav_similar(c, ''de'', 10)', 3)::numeric, 1) AS cav_similar_ms,
       round(best_ms('SELECT corpq.cav_cosine(c, ''de'', ''la'') FROM c$L', 3)::numeric, 1) AS cav_cosine_ms,
       round(best_ms('SELECT corpq.cav_pool(c, ''de'', 32, 32) FROM c$L', 3)::numeric, 1) AS cav_pool_32x32_ms;
SQL
	done
} >"$SQL"
psql -X -q -f "$SQL" 2>&1 | grep -v '^DEBUG:  \(parallel\|StartTransaction\|CommitTransaction\|name:\)'
