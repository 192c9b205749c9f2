#!/usr/bin/env bash
# Benchmark of margin-based mining (docs/embeddings.md): for n x n vectors of
# d = 256 (n = 10^4 and 10^5 by default), 80% of the targets their source
# with noise, all in 1,000 overlapping clusters:
#   - exact: corpq.mine_vectors() wall time on 1 and 2 threads (corpq.threads),
#     and the backend's peak memory (VmHWM) over a backend that read the
#     same rows without mining
#   - HNSW: the recipe of docs/embeddings.md (its fragments naming
#     test/integration/mining.sh, as written there): the two index builds and
#     the neighbour and pair queries timed apart, the peak memory of the
#     backend that ran the queries, and the share of mine_vectors' pairs the
#     recipe found (forward and mutual)
# Needs pgvector for the HNSW part (test/pgvector/build.sh: installed, or
# built from ../shared/vendor/pgvector-0.8.6.tar.gz); without it that part is
# skipped with a line saying why.  Prints figures; asserts nothing on time.
# Usage: bench_mine.sh [--sizes "10000 100000"] [--dim 256]
# Run it alone on the machine: 10^5 x 10^5 is 2.6e12 multiply-adds exact
# (about a minute on one AVX2 core) and 2 x 10^5 HNSW queries.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
# pgvector goes into the server's installation before the cluster starts
[ -n "${CORPQ_IN_CLUSTER:-}" ] || corpq_pgvector CORPQ_BENCH_PGVECTOR
corpq_in_cluster -o shared_buffers=1GB -o max_worker_processes=16 -o max_parallel_maintenance_workers=2 -- "$@"

sizes="10000 100000"
dim=256
while [ $# -gt 0 ]; do
	case "$1" in
		--sizes) sizes=$2; shift 2 ;;
		--dim) dim=$2; shift 2 ;;
		*) fail "unknown argument $1" ;;
	esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# wall time of one psql run of its arguments, seconds
timed() {
	local t0 t1
	t0=$(date +%s.%N)
	q "$@" >/dev/null || fail "failed: $*"
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}'
}

# the peak memory (VmHWM, MB) of a fresh backend that ran the statements
peak_mb() {
	echo $(($(corpq_peak_kb "$@") / 1024))
}

/usr/bin/python3 - "$tmp" >/dev/null <<'EOF' || fail "could not read the recipe from docs/embeddings.md"
import sys
sys.path.insert(0, "test/docs")
import examples
ours = examples.fragments("docs/embeddings.md", "test/integration/mining.sh")
for name, body in zip(("vector_columns", "indexes", "neighbours", "pairs"), ours):
    open(f"{sys.argv[1]}/{name}.sql", "w").write("\n".join(body) + "\n")
EOF

q -c "CREATE EXTENSION corpq" >/dev/null
[ "$CORPQ_BENCH_PGVECTOR" = yes ] && q -c "CREATE EXTENSION vector" >/dev/null

for n in $sizes; do
	log "== $n x $n vectors, d = $dim"
	/usr/bin/python3 - "$tmp" "$n" "$dim" <<'EOF'
import sys
import numpy as np
out, n, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(45)
centres = rng.standard_normal((1000, d)).astype(np.float32)
src = centres[rng.integers(0, 1000, n)] + rng.standard_normal((n, d), dtype=np.float32)
true = int(0.8 * n)
tgt = np.concatenate([src[:true] + 0.4 * rng.standard_normal((true, d), dtype=np.float32),
                      centres[rng.integers(0, 1000, n - true)] + rng.standard_normal((n - true, d), dtype=np.float32)])
for name, v in (("en", src), ("es", tgt)):
    with open(f"{out}/{name}.tsv", "w") as f:
        for i, row in enumerate(v):
            f.write(f"{i + 1}\t{{{','.join('%.6g' % x for x in row)}}}\n")
EOF
	q >/dev/null <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS en_arr, es_arr, exact, exact_mutual, en_vec, es_vec, en_nn, es_nn, en_knn, es_knn, mined, mined_mutual;
CREATE TABLE en_arr (id bigint PRIMARY KEY, embedding real[]);
CREATE TABLE es_arr (id bigint PRIMARY KEY, embedding real[]);
\copy en_arr FROM '$tmp/en.tsv'
\copy es_arr FROM '$tmp/es.tsv'
VACUUM ANALYZE en_arr;
VACUUM ANALYZE es_arr;
SQL
	mine="SELECT id, embedding FROM en_arr', 'SELECT id, embedding FROM es_arr"
	base=$(peak_mb -c "SELECT count(*), sum(array_length(embedding, 1)) FROM (SELECT embedding FROM en_arr UNION ALL SELECT embedding FROM es_arr) s")
	for threads in 1 2; do
		secs=$(timed -c "SET work_mem = '1GB'" -c "SET corpq.threads = $threads" \
			-c "CREATE TABLE mined_t AS SELECT * FROM corpq.mine_vectors('$mine')" -c "DROP TABLE mined_t")
		log "exact mine_vectors, $threads thread(s): $secs s"
	done
	peak=$(peak_mb -c "SET work_mem = '1GB'" \
		-c "CREATE TABLE exact AS SELECT * FROM corpq.mine_vectors('$mine')" \
		-c "CREATE TABLE exact_mutual AS SELECT * FROM corpq.mine_vectors('$mine', '{\"mutual\": true}')")
	log "exact: backend peak $peak MB, $((peak - base)) MB over reading the same rows; pairs: $(q -c "SELECT count(*) || ' forward (' || count(*) FILTER (WHERE src_id = tgt_id) || ' true), ' || (SELECT count(*) FROM exact_mutual) || ' mutual' FROM exact")"

	if [ "$CORPQ_BENCH_PGVECTOR" != yes ]; then
		log "skipped HNSW: $CORPQ_BENCH_PGVECTOR"
		continue
	fi
	q >/dev/null <<SQL
CREATE TABLE en_vec (id bigint PRIMARY KEY, embedding vector($dim));
CREATE TABLE es_vec (id bigint PRIMARY KEY, embedding vector($dim));
INSERT INTO en_vec SELECT id, embedding FROM en_arr;
INSERT INTO es_vec SELECT id, embedding FROM es_arr;
VACUUM ANALYZE en_vec;
VACUUM ANALYZE es_vec;
SQL
	secs=$(timed -c "SET maintenance_work_mem = '2GB'" -f "$tmp/indexes.sql")
	log "HNSW: both index builds $secs s (maintenance_work_mem 2GB, up to 2 parallel workers)"
	secs=$(timed -f "$tmp/neighbours.sql")
	log "HNSW: the neighbour queries and k-NN means $secs s"
	secs=$(timed -f "$tmp/pairs.sql")
	log "HNSW: the pairs $secs s"
	q -c "DROP TABLE en_nn, es_nn, en_knn, es_knn, mined, mined_mutual" >/dev/null
	peak=$(peak_mb -f "$tmp/neighbours.sql" -f "$tmp/pairs.sql")
	log "HNSW: backend peak $peak MB for the queries"
	log "HNSW: found $(q -c "SELECT (SELECT count(*) FROM exact e JOIN mined m USING (src_id, tgt_id)) || ' of ' || (SELECT count(*) FROM exact) || ' forward pairs, ' || (SELECT count(*) FROM exact_mutual e JOIN mined_mutual m USING (src_id, tgt_id)) || ' of ' || (SELECT count(*) FROM exact_mutual) || ' mutual'")"
	log "HNSW: index sizes $(q -c "SELECT pg_size_pretty(pg_relation_size('en_vec_embedding_idx')) || ' + ' || pg_size_pretty(pg_relation_size('es_vec_embedding_idx'))")"
done
