#!/usr/bin/env bash
# Coordinator overhead of Citus, against one node and against postgres_fdw in
# the same run (figures in docs/benchmarks.md).  First bench_fdw.sh runs with
# the same ROWS (its own three servers), then a Citus coordinator and two
# workers (test/citus/cluster.sh) with the same pairs: real en-es pairs from
# the corpora test/lib.sh finds, cut to 20 tokens per side, preset tiny
# (untrained; speed does not depend on weights), catalog copied to the
# workers with corpq's export/import functions.
#   1. one shard (create_distributed_table(..., shard_count => 1)): every row
#      on one worker, one task; each query through the coordinator against the
#      same query run directly on that worker over a local copy of the rows:
#      per-row scores (the select list is shipped, so they are computed on the
#      worker), sum() (pushed down), fetch only (Citus's cost per query, from
#      a task that returns no row, and per row): rows/s and the overhead
#   2. two shards, one per worker: per-row scores through the coordinator,
#      the rows/s each worker delivers, against one worker alone on its shard.
#      Two workers on this 2-core machine share the cores with the
#      coordinator: this shows concurrency, not machines.
#   3. the expected rate on N machines from the per-node figures.
# EXPLAIN (ANALYZE, TIMING OFF) execution times as bench_fdw.sh, best of 3
# alternating runs.  Skipped (one line) without Citus or its source tarball.
# Usage: bench_citus.sh [ROWS]   (default 4000: tiny scores ~400-650 pairs/s per core)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. test/bench/bench_lib.sh
CORPQ_TEST_NAME=bench_citus
rows=${1:-4000}
if ! bash test/citus/build.sh --check; then
	log "skipped: no installed Citus and no ../shared/vendor/citus-13.2.2.tar.gz"
	exit 0
fi
bash test/citus/build.sh
corpq_corpora

fdw_out=$(mktemp /tmp/corpq-bench-fdw.XXXXXX)
bash test/bench/bench_fdw.sh "$rows" | tee "$fdw_out"
echo

. test/citus/cluster.sh
trap 'so_cleanup; rm -f "$fdw_out"' EXIT
citus_start c w1 w2
qn c >/dev/null <<SQL
$(pairs_sql "$rows")
CREATE TABLE pairs_one (id bigint PRIMARY KEY, domain text, src text, tgt text);
SELECT create_distributed_table('pairs_one', 'id', shard_count => 1);
INSERT INTO pairs_one SELECT * FROM pairs;
CREATE TABLE pairs_two (id bigint PRIMARY KEY, domain text, src text, tgt text);
SELECT create_distributed_table('pairs_two', 'id', shard_count => 2, colocate_with => 'none');
INSERT INTO pairs_two SELECT * FROM pairs;
SQL
citus_copy_catalog
qn c -c "SELECT corpq.catalog_check()" >/dev/null
qn c -c "\\copy pairs TO '$so_tmp/pairs.tsv'"
for n in w1 w2; do
	qn $n >/dev/null <<SQL
CREATE TABLE pairs_all (id bigint PRIMARY KEY, domain text, src text, tgt text);
\copy pairs_all FROM '$so_tmp/pairs.tsv'
VACUUM ANALYZE pairs_all;
SQL
done
qn c -c "VACUUM ANALYZE pairs_one" -c "VACUUM ANALYZE pairs_two" >/dev/null

# the worker holding pairs_one's shard; each worker's shard of pairs_two
# shard_of TABLE NODE: the shard's name on that node (empty: none there)
shard_of() {
	local port
	eval "port=\$port_$2"
	qn c -c "SELECT shard_name FROM citus_shards WHERE table_name = '$1'::regclass AND nodeport = $port"
}
one=w1
[ -n "$(shard_of pairs_one w1)" ] || one=w2
shard1=$(shard_of pairs_two w1)
shard2=$(shard_of pairs_two w2)
[ -n "$shard1" ] && [ -n "$shard2" ] || fail "pairs_two's shards are not one per worker"
half1=$(qn w1 -c "SELECT count(*) FROM $shard1")

per_row() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.1f us", 1e6 * (a - b) / n }'; }

pinned="corpq.sent_prob('m@1'::corpq.pinned_model, src, tgt)"
echo "bench_citus: $rows real en-es pairs (20 tokens max per side), preset tiny, Citus coordinator + 2 workers on 2 cores"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); OpenBLAS: $(qn c -c 'SELECT corpq.blas_info()')"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
best direct "$one" "SELECT id, $pinned FROM pairs_all" citus c "SELECT id, $pinned FROM pairs_one"
echo "| per-row scores (select list shipped to the worker) | direct on $one $(rate "$rows" "$t_direct") rows/s ($t_direct s) | through the coordinator $(rate "$rows" "$t_citus") rows/s ($t_citus s) | overhead $(over "$t_citus" "$t_direct") |"
c_score=$(over "$t_citus" "$t_direct")
per_core=$(rate "$rows" "$t_direct")
best direct "$one" "SELECT sum($pinned) FROM pairs_all" citus c "SELECT sum($pinned) FROM pairs_one"
echo "| sum(sent_prob) pushed down | direct on $one $(rate "$rows" "$t_direct") rows/s ($t_direct s) | through the coordinator $(rate "$rows" "$t_citus") rows/s ($t_citus s) | overhead $(over "$t_citus" "$t_direct") |"
# fetch only: Citus's cost per query (a task that returns no row; each run is a
# new session, so it includes opening the connection to the worker) and per row
best fixed c "SELECT id, src, tgt FROM pairs_one WHERE id < 0" nothing "$one" "SELECT id, src, tgt FROM pairs_all WHERE id < 0"
best citus c "SELECT id, src, tgt FROM pairs_one" direct "$one" "SELECT id, src, tgt FROM pairs_all"
c_fetch=$(per_row "$(awk -v a="$t_citus" -v f="$t_fixed" -v z="$t_nothing" 'BEGIN { print a - (f - z) }')" "$t_direct" "$rows")
c_fetch_session=$(per_row "$t_citus" "$t_direct" "$rows")
echo "| fetch only, no scoring | on $one $(rate "$rows" "$t_direct") rows/s ($t_direct s) | through the coordinator $(rate "$rows" "$t_citus") rows/s ($t_citus s, of which $(awk -v f="$t_fixed" -v z="$t_nothing" 'BEGIN { printf "%.1f ms", 1000 * (f - z) }') per query in a new session: Citus connects to the worker) | $c_fetch per row on top |"
best two c "SELECT id, $pinned FROM pairs_two" alone w1 "SELECT id, $pinned FROM $shard1"
echo "| per-row scores, 2 workers (one shard each) | w1 alone, its $half1 rows: $(rate "$half1" "$t_alone") rows/s | both through the coordinator: $(rate "$rows" "$t_two") rows/s, per worker $(rate "$half1" "$t_two") (w1) and $(rate $((rows - half1)) "$t_two") (w2) | $(awk -v a="$t_two" -v b="$t_alone" -v n="$rows" -v h="$half1" 'BEGIN { printf "%.2fx the one-worker rate", (n / a) / (h / b) }') |"
c_two=$(awk -v a="$t_two" -v b="$t_alone" -v n="$rows" -v h="$half1" 'BEGIN { printf "%.2fx", (n / a) / (h / b) }')

# the same figures of postgres_fdw from this run
fdw_field() { grep -F "$1" "$fdw_out" | awk -F'|' -v c="$2" '{ print $c }' | sed 's/^ *//; s/ *$//'; }
f_score=$(fdw_field "per-row scores shipped back (view on the node)" 5 | sed 's/overhead //')
f_fetch=$(fdw_field "fetch only, no scoring" 5 | sed 's/ per row on top//')
f_two=$(fdw_field "per-row scores, 2 nodes (async)" 5 | sed 's/ the one-node rate//')
echo
echo "| same run | postgres_fdw | Citus |"
echo "| --- | --- | --- |"
echo "| per-row scores computed on the node, overhead of the coordinator | $f_score (foreign table on a scoring view) | $c_score (plain SELECT) |"
echo "| coordinator cost per row received (fetch only), the new session's connection included | $f_fetch | $c_fetch_session |"
echo "| the same without the connection (Citus; postgres_fdw not measured) | | $c_fetch |"
echo "| 2 nodes vs one node alone | $f_two | $c_two |"
# expected rate on N machines: each worker core scores per_core pairs/s; the
# coordinator spends c_fetch per row it receives, so it saturates at
# 1e6 / c_fetch rows/s, i.e. at that many worker cores
awk -v r="$per_core" -v c="${c_fetch% us}" 'BEGIN {
	if (c <= 0) c = 0.1;
	printf "expected: N single-core workers score about N x %d pairs/s (tiny, 20 tokens); ", r;
	printf "one coordinator receiving rows at %.1f us each saturates near %.0f rows/s, about %.0f worker cores\n", c, 1e6 / c, 1e6 / c / r;
}'
