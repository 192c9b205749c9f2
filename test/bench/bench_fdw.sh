#!/usr/bin/env bash
# Coordinator overhead of postgres_fdw scale-out (figures in docs/benchmarks.md).  Three
# local servers (test/integration/scaleout_fdw.sh's helpers); real en-es
# pairs from the corpora test/lib.sh finds, cut to 20 tokens per side, preset tiny (untrained; speed does not depend on weights).
#   1. one node holds all pairs; the coordinator reads them through one
#      foreign table: per-row scores shipped back (a view on the node
#      computes them), sum() pushed down whole, and pairs fetched and scored
#      on the coordinator (a text-named model is not shipped) -- each against
#      the same query run directly on the node: rows/s and the overhead
#   2. the pairs hash-partitioned over two nodes (asynchronous foreign scans):
#      rows/s through the partitions vs one node alone.  Two nodes on this
#      2-core machine share the cores with the coordinator, so this shows
#      concurrency, not machines.
# EXPLAIN (ANALYZE, TIMING OFF) execution times, best of 3 alternating runs.
# Usage: bench_fdw.sh [ROWS]   (default 4000: tiny scores ~400 pairs/s per core)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. test/bench/bench_lib.sh
corpq_corpora
rows=${1:-4000}
CORPQ_SCALEOUT_LIB=1 source test/integration/scaleout_fdw.sh

start_node c
start_node n1
start_node n2
for n in c n1 n2; do qn $n -c "CREATE EXTENSION corpq"; done
qn c >/dev/null <<SQL
$(pairs_sql "$rows")
SQL
copy_catalog c n1
copy_catalog c n2
link_nodes c n1 n2
qn c -c "SELECT corpq.catalog_check('fp_n1', 'fp_n2')" >/dev/null
qn c -c "\\copy pairs TO '$so_tmp/pairs.tsv'"
for n in n1 n2; do
	qn $n >/dev/null <<SQL
CREATE TABLE pairs_all (id bigint PRIMARY KEY, domain text, src text, tgt text);
\copy pairs_all FROM '$so_tmp/pairs.tsv'
CREATE TABLE pairs_shard (LIKE pairs_all INCLUDING ALL);
CREATE VIEW scored_all AS
SELECT id, corpq.sent_prob('m@1'::corpq.pinned_model, src, tgt) AS p FROM pairs_all;
CREATE VIEW scored_shard AS
SELECT id, corpq.sent_prob('m@1'::corpq.pinned_model, src, tgt) AS p FROM pairs_shard;
VACUUM ANALYZE pairs_all;
SQL
done
qn c >/dev/null <<'SQL'
ALTER SERVER n1 OPTIONS (ADD async_capable 'true', ADD fetch_size '1000', ADD batch_size '1000');
ALTER SERVER n2 OPTIONS (ADD async_capable 'true', ADD fetch_size '1000', ADD batch_size '1000');
CREATE FOREIGN TABLE pairs_n1 (id bigint, domain text, src text, tgt text)
    SERVER n1 OPTIONS (table_name 'pairs_all');
CREATE FOREIGN TABLE scored_n1 (id bigint, p float8) SERVER n1 OPTIONS (table_name 'scored_all');
CREATE TABLE pairs_part (id bigint, domain text, src text, tgt text) PARTITION BY HASH (id);
CREATE FOREIGN TABLE pairs_part0 PARTITION OF pairs_part FOR VALUES WITH (MODULUS 2, REMAINDER 0)
    SERVER n1 OPTIONS (table_name 'pairs_shard');
CREATE FOREIGN TABLE pairs_part1 PARTITION OF pairs_part FOR VALUES WITH (MODULUS 2, REMAINDER 1)
    SERVER n2 OPTIONS (table_name 'pairs_shard');
INSERT INTO pairs_part SELECT * FROM pairs;
CREATE TABLE scored_part (id bigint, p float8) PARTITION BY HASH (id);
CREATE FOREIGN TABLE scored_part0 PARTITION OF scored_part FOR VALUES WITH (MODULUS 2, REMAINDER 0)
    SERVER n1 OPTIONS (table_name 'scored_shard');
CREATE FOREIGN TABLE scored_part1 PARTITION OF scored_part FOR VALUES WITH (MODULUS 2, REMAINDER 1)
    SERVER n2 OPTIONS (table_name 'scored_shard');
SQL
for n in n1 n2; do qn $n -c "VACUUM ANALYZE pairs_shard"; done
half1=$(qn n1 -c "SELECT count(*) FROM pairs_shard")


echo "bench_fdw: $rows real en-es pairs (20 tokens max per side), preset tiny, 3 servers on 2 cores;"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
pinned="corpq.sent_prob('m@1'::corpq.pinned_model, src, tgt)"
best direct n1 "SELECT id, p FROM scored_all" fdw c "SELECT id, p FROM scored_n1"
echo "| per-row scores shipped back (view on the node) | direct on n1 $(rate $rows $t_direct) rows/s ($t_direct s) | through the coordinator $(rate $rows $t_fdw) rows/s ($t_fdw s) | overhead $(over $t_fdw $t_direct) |"
best direct n1 "SELECT sum(p) FROM scored_all" fdw c "SELECT sum(p) FROM scored_n1"
echo "| sum(sent_prob) pushed down | direct on n1 $(rate $rows $t_direct) rows/s ($t_direct s) | through the coordinator $(rate $rows $t_fdw) rows/s ($t_fdw s) | overhead $(over $t_fdw $t_direct) |"
best direct n1 "SELECT id, $pinned FROM pairs_all" fdw c "SELECT id, corpq.sent_prob('m', src, tgt) FROM pairs_n1"
echo "| pairs fetched, scored on the coordinator (name, STABLE) | direct on n1 $(rate $rows $t_direct) rows/s ($t_direct s) | coordinator $(rate $rows $t_fdw) rows/s ($t_fdw s) | overhead $(over $t_fdw $t_direct) |"
best fetch c "SELECT id, src, tgt FROM pairs_n1" local n1 "SELECT id, src, tgt FROM pairs_all"
echo "| fetch only, no scoring | on n1 $(rate $rows $t_local) rows/s ($t_local s) | through the coordinator $(rate $rows $t_fetch) rows/s ($t_fetch s) | $(awk -v a=$t_fetch -v b=$t_local -v n=$rows 'BEGIN { printf "%.1f us", 1e6 * (a - b) / n }') per row on top |"
best two c "SELECT id, p FROM scored_part" one n1 "SELECT id, p FROM scored_shard"
echo "| per-row scores, 2 nodes (async) | n1 alone, its $half1 rows: $(rate $half1 $t_one) rows/s | both through the coordinator: $(rate $rows $t_two) rows/s | $(awk -v a=$t_two -v b=$t_one -v n=$rows -v h=$half1 'BEGIN { printf "%.2fx the one-node rate", (n / a) / (h / b) }') |"
