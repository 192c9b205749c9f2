#!/usr/bin/env bash
# Mining at scale (docs/embeddings.md):
#   1. corpq.mine_vectors() on 40,000 x 40,000 vectors of d = 256 (minutes of
#      products) is cancelled by statement_timeout within a moment: the core
#      polls between blocks; and a backend that mined 10,000 x 10,000 under
#      work_mem 40 MB grew by no more than that and its query batches;
#      corpq.mine_pairs() on 100,000 x 100,000 sentences (a small encoder:
#      about a minute of embedding) is cancelled within a moment too, while
#      it embeds.
#   2. pgvector (built once per machine by test/pgvector/build.sh from
#      ../shared/vendor/pgvector-0.8.6.tar.gz; this part is skipped, with a
#      line saying why, when there is neither an installed pgvector nor the
#      tarball): vector columns mined through embedding::real[] give the bits
#      of the real[] columns; the recipe of docs/embeddings.md -- its SQL
#      fragments naming test/integration/mining.sh, run as they are
#      written there: HNSW indexes, LATERAL k-NN queries into en_nn and
#      es_nn, corpq.knn_mean() into en_knn and es_knn, corpq.margin() into
#      mined and mined_mutual -- on 3,000 clustered vectors per side (d = 32, 2,400
#      true pairs with noise): without indexes (exact neighbours) it gives
#      mine_vectors' pairs with margins within 1e-5; with the HNSW indexes
#      (which the plan must use) it finds at least 95% of mine_vectors' pairs,
#      forward and mutual.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
# pgvector goes into the server's installation before the cluster starts
[ -n "${CORPQ_IN_CLUSTER:-}" ] || corpq_pgvector CORPQ_MINING_PGVECTOR
corpq_in_cluster -t 1800

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- 1. cancel and memory ----------------------------------------------------
q >/dev/null <<'SQL'
CREATE EXTENSION corpq;
SELECT setseed(0.45);
CREATE TABLE big AS
SELECT g::bigint AS id, array(SELECT (random() - 0.5 + 0 * g)::real FROM generate_series(1, 256)) AS embedding
  FROM generate_series(1, 40000) g;
SQL

# cancelled what work_mem sql: the query must stop with statement_timeout 3 s,
# less than 2 s after the timeout
cancelled() {
	local t0 t1 err late
	t0=$(date +%s.%N)
	err=$(q -c "SET work_mem = '$2'" -c "SET statement_timeout = '3s'" -c "$3" 2>&1) \
		&& fail "$1 was not cancelled"
	t1=$(date +%s.%N)
	grep -q 'statement timeout' <<<"$err" || fail "unexpected error: $err"
	late=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a - 3}')
	log "statement_timeout 3 s on $1: returned $late s after the timeout"
	awk -v l="$late" 'BEGIN {exit !(l < 2)}' || fail "the cancel took $late s"
}
cancelled "40,000 x 40,000 x 256 (4e11 multiply-adds)" 128MB \
	"SELECT count(*) FROM corpq.mine_vectors('SELECT id, embedding FROM big', 'SELECT id, embedding FROM big')"

# mine_pairs: the cancel is taken between embedding batches (64 sentences of
# a small encoder, milliseconds)
q >/dev/null <<'SQL'
CREATE TABLE sents AS
SELECT g AS id, format('w%s w%s w%s w%s w%s', g % 101, g % 103, g % 107, g % 109, g % 113) AS sentence
  FROM generate_series(1, 100000) g;
SELECT corpq.vocab_build('sents_v', 'SELECT sentence FROM sents');
SELECT corpq.model_create('sents_enc', '{"preset": "small", "kind": "encoder"}', 'sents_v', 'sents_v', 1);
SQL
cancelled "mine_pairs of 100,000 x 100,000 sentences" 300MB \
	"SELECT count(*) FROM corpq.mine_pairs('sents_enc', 'SELECT id, sentence FROM sents', 'SELECT id, sentence FROM sents')"

# the same rows read without mining, then mined: the difference is mining's.
# The bound counts the sets (2 x 10,000 x (4 x 256 + 24) bytes), and while a
# set grows the array it is copied from (36 MB at the peak), then the blocks
# (2 MB); beyond it only the query batches being read (a few MB).
base=$(corpq_peak_kb -c "SET work_mem = '40MB'" -c "SELECT count(*), sum(array_length(embedding, 1)) FROM big WHERE id <= 20000")
mined=$(corpq_peak_kb -c "SET work_mem = '40MB'" -c "SELECT count(*) FROM corpq.mine_vectors('SELECT id, embedding FROM big WHERE id <= 10000', 'SELECT id, embedding FROM big WHERE id > 10000 AND id <= 20000')")
grew=$(( (mined - base) / 1024 ))
log "mining 10,000 x 10,000 x 256 under work_mem 40 MB: the backend's peak grew $grew MB over reading the same rows"
[ "$grew" -le 48 ] || fail "mining grew the backend by $grew MB, more than work_mem (40 MB) and the query batches"

# ---- 2. pgvector ---------------------------------------------------------------
if [ "$CORPQ_MINING_PGVECTOR" != yes ]; then
	log "skipped the pgvector part: $CORPQ_MINING_PGVECTOR"
	log "ok"
	exit 0
fi

# 60 overlapping clusters in d = 32 (members at distance ~ the centres'
# spread); targets 1..2400 are their sources with noise (the true pairs),
# 2401..3000 other members of the clusters
/usr/bin/python3 - "$tmp" <<'EOF'
import sys
import numpy as np
rng = np.random.default_rng(45)
d, n = 32, 3000
centres = rng.standard_normal((60, d))
src = centres[rng.integers(0, 60, n)] + 1.0 * rng.standard_normal((n, d))
tgt = np.concatenate([src[:2400] + 0.4 * rng.standard_normal((2400, d)),
                      centres[rng.integers(0, 60, 600)] + 1.0 * rng.standard_normal((600, d))])
for name, v in (("en", src), ("es", tgt)):
    with open(f"{sys.argv[1]}/{name}.tsv", "w") as f:
        for i, row in enumerate(v.astype(np.float32)):
            f.write(f"{i + 1}\t{{{','.join(repr(float(x)) for x in row)}}}\n")
EOF

# the recipe's blocks, as docs/embeddings.md writes them
/usr/bin/python3 - "$tmp" <<'EOF' || fail "could not read the recipe from docs/embeddings.md"
import sys
sys.path.insert(0, "test/docs")
import examples
ours = examples.fragments("docs/embeddings.md", "test/integration/mining.sh")
if len(ours) != 4:
    raise SystemExit(f"expected 4 fragments naming mining.sh, found {len(ours)}")
for name, body in zip(("vector_columns", "indexes", "neighbours", "pairs"), ours):
    open(f"{sys.argv[1]}/{name}.sql", "w").write("\n".join(body) + "\n")
EOF

q >/dev/null <<SQL
CREATE EXTENSION vector;
CREATE TABLE en_arr (id bigint PRIMARY KEY, embedding real[]);
CREATE TABLE es_arr (id bigint PRIMARY KEY, embedding real[]);
\copy en_arr FROM '$tmp/en.tsv'
\copy es_arr FROM '$tmp/es.tsv'
-- real[] into vector columns: pgvector's assignment cast
CREATE TABLE en_vec (id bigint PRIMARY KEY, embedding vector(32));
CREATE TABLE es_vec (id bigint PRIMARY KEY, embedding vector(32));
INSERT INTO en_vec SELECT id, embedding FROM en_arr;
INSERT INTO es_vec SELECT id, embedding FROM es_arr;
CREATE TABLE exact AS
SELECT * FROM corpq.mine_vectors('SELECT id, embedding FROM en_arr', 'SELECT id, embedding FROM es_arr');
CREATE TABLE exact_mutual AS
SELECT * FROM corpq.mine_vectors('SELECT id, embedding FROM en_arr', 'SELECT id, embedding FROM es_arr',
                                 '{"mutual": true}');
SQL

# the vector columns give the same bits (vector -> real[] is exact)
q -f "$tmp/vector_columns.sql" >/dev/null || fail "the docs' vector-column example failed"
out=$(q <<'SQL'
SELECT count(*) FROM (
  (SELECT * FROM exact_mutual EXCEPT
   SELECT * FROM corpq.mine_vectors('SELECT id, embedding::real[] FROM en_vec',
                                    'SELECT id, embedding::real[] FROM es_vec', '{"mutual": true}'))
  UNION ALL
  (SELECT * FROM corpq.mine_vectors('SELECT id, embedding::real[] FROM en_vec',
                                    'SELECT id, embedding::real[] FROM es_vec', '{"mutual": true}')
   EXCEPT SELECT * FROM exact_mutual)) d;
SELECT count(*), count(*) FILTER (WHERE src_id = tgt_id) FROM exact;
SELECT count(*), count(*) FILTER (WHERE src_id = tgt_id) FROM exact_mutual;
SQL
) || fail "mining the vector columns failed: $out"
[ "$(sed -n 1p <<<"$out")" = 0 ] || fail "vector columns mined other pairs than real[] columns"
log "mine_vectors on 3,000 x 3,000: $(sed -n 2p <<<"$out" | tr '|' ' ') forward pairs (true ones), $(sed -n 3p <<<"$out" | tr '|' ' ') mutual; vector columns give the same bits"

# agreement of a recipe run (tables mined, mined_mutual) with mine_vectors:
# "forward_found forward_total margin_max_diff mutual_found mutual_total mutual_extra"
agreement() {
	q <<'SQL'
SELECT (SELECT count(*) FROM exact e JOIN mined m USING (src_id, tgt_id)),
       (SELECT count(*) FROM exact),
       (SELECT coalesce(max(abs(e.margin - m.margin)), 0) FROM exact e JOIN mined m USING (src_id, tgt_id)),
       (SELECT count(*) FROM exact_mutual e JOIN mined_mutual m USING (src_id, tgt_id)),
       (SELECT count(*) FROM exact_mutual),
       (SELECT count(*) FROM mined_mutual m WHERE NOT EXISTS
           (SELECT FROM exact_mutual e WHERE e.src_id = m.src_id AND e.tgt_id = m.tgt_id));
SQL
}

# exact neighbours: the recipe without the indexes (a scan and a top-4 sort)
q -f "$tmp/neighbours.sql" -f "$tmp/pairs.sql" >/dev/null || fail "the recipe failed without indexes"
read -r f ft diff mf mt extra < <(agreement | tr '|' ' ')
log "recipe, exact neighbours: $f of $ft forward pairs, $mf of $mt mutual ($extra others), margins within $diff"
[ "$f" = "$ft" ] && [ "$mf" = "$mt" ] && [ "$extra" = 0 ] ||
	fail "with exact neighbours the recipe must give mine_vectors' pairs"
awk -v d="$diff" 'BEGIN {exit !(d < 1e-5)}' || fail "margins differ by $diff"

# the HNSW indexes
q -c "DROP TABLE en_nn, es_nn, en_knn, es_knn, mined, mined_mutual" -f "$tmp/indexes.sql" >/dev/null
plan=$(q -c "EXPLAIN (COSTS OFF) SELECT s.id FROM es_vec s ORDER BY s.embedding <=> (SELECT embedding FROM en_vec WHERE id = 1) LIMIT 4")
grep -q 'Index Scan using es_vec_embedding_idx' <<<"$plan" || fail "the k-NN query does not use the HNSW index: $plan"
t0=$(date +%s.%N)
q -f "$tmp/neighbours.sql" -f "$tmp/pairs.sql" >/dev/null || fail "the recipe failed with the indexes"
t1=$(date +%s.%N)
read -r f ft diff mf mt extra < <(agreement | tr '|' ' ')
log "recipe, HNSW: $f of $ft forward pairs, $mf of $mt mutual ($extra others), margins of the common pairs within $diff ($(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s)"
awk -v f="$f" -v t="$ft" 'BEGIN {exit !(f >= 0.95 * t)}' || fail "HNSW found $f of $ft forward pairs, below 95%"
awk -v f="$mf" -v t="$mt" 'BEGIN {exit !(f >= 0.95 * t)}' || fail "HNSW found $mf of $mt mutual pairs, below 95%"
log "ok"
