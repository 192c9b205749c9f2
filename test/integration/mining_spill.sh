#!/usr/bin/env bash
# Mining past work_mem, and a cancel during the k-selection (docs/embeddings.md
# "Cost and memory"):
#   1. corpq.mine_vectors() on 20,000 x 20,000 vectors of d = 256 (targets:
#      the sources with noise, under shuffled ids) at work_mem 4 MB,
#      PostgreSQL's default, succeeds from temporary files (its DEBUG line
#      says so) and gives the pairs of the same call at 1 GB, every column
#      compared with =: forward with k = 4, and mutual with k = 8.
#   2. corpq.mine_pairs() on 2,000 x 2,000 sentences with a small encoder
#      (untrained: its vectors are arbitrary but deterministic) at 4 MB gives
#      the pairs of 1 GB.
#   2b. corpq.mine_pairs() on 20,000 x 20,000 real sentences of the shared
#      corpora (20,000 English sources, the 20,000 Spanish targets of the same
#      pairs under shuffled ids) with a tiny encoder (d = 64, untrained) at
#      4 MB mines from temporary files and gives the pairs of 1 GB, every
#      column (cosine and margin too) compared with =.
#   3. k = 1000 on 12,000 x 12,000 vectors: statement_timeout at 300 ms,
#      1.5 s and 4 s each ends the call within 3 s (the lists' updates poll
#      between slices of a block: a block took seconds before); the delays
#      are logged.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster -t 1800

q >/dev/null <<'SQL'
CREATE EXTENSION corpq;
SELECT setseed(0.54);
CREATE TABLE src AS
SELECT g::bigint AS id, array(SELECT (random() - 0.5 + 0 * g)::real FROM generate_series(1, 256)) AS embedding
  FROM generate_series(1, 20000) g;
-- target i's id: a permutation of the sources' (20011 is prime)
CREATE TABLE tgt AS
SELECT 100000 + (id * 7919) % 20011 AS id,
       array(SELECT (e + 0.6 * (random() - 0.5))::real FROM unnest(embedding) WITH ORDINALITY u(e, o) ORDER BY o) AS embedding
  FROM src;
SQL

# mine NAME WORK_MEM CALL: the call's pairs into table NAME at WORK_MEM;
# prints the DEBUG line of the mining (or nothing)
mine() {
	local err
	err=$(q -c "SET work_mem = '$2'" -c "SET client_min_messages = debug1" \
		-c "CREATE TABLE $1 AS SELECT * FROM $3" 2>&1 >/dev/null) || fail "at $2: $err"
	grep -o 'mining .* from temporary files.*' <<<"$err" || true
}

# same A B: "pairs same" for two tables of pairs
same() {
	q -F ' ' <<SQL
SELECT count(*), count(*) = (SELECT count(*) FROM $2) AND NOT EXISTS (SELECT * FROM $1 EXCEPT SELECT * FROM $2)
  FROM $1;
SQL
}

# ---- 1. mine_vectors, 20,000 x 20,000 --------------------------------------
for opts in '{}' '{"mutual": true, "k": 8}'; do
	call="corpq.mine_vectors('SELECT id, embedding FROM src', 'SELECT id, embedding FROM tgt', '$opts')"
	q -c "DROP TABLE IF EXISTS mem, spilled" >/dev/null
	t0=$(date +%s.%N)
	inmem=$(mine mem 1GB "$call")
	t1=$(date +%s.%N)
	spill=$(mine spilled 4MB "$call")
	t2=$(date +%s.%N)
	[ -z "$inmem" ] || fail "at 1 GB the vectors went to files: $inmem"
	[ -n "$spill" ] || fail "at 4 MB mine_vectors $opts did not mine from temporary files"
	read -r pairs ok < <(same mem spilled)
	true_pairs=$(q -c "SELECT count(*) FROM spilled WHERE tgt_id = 100000 + (src_id * 7919) % 20011")
	log "mine_vectors 20,000 x 20,000 x 256 $opts: $pairs pairs ($true_pairs true) at 1 GB in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s, at 4 MB in $(awk -v a="$t1" -v b="$t2" 'BEGIN {printf "%.1f", b - a}') s ($spill)"
	[ "$ok" = t ] || fail "mine_vectors $opts at 4 MB gave other pairs than at 1 GB"
	[ "$true_pairs" -ge $((pairs * 9 / 10)) ] || fail "only $true_pairs of $pairs pairs are the true ones"
done

# ---- 2. mine_pairs, 2,000 x 2,000 sentences --------------------------------
q >/dev/null <<'SQL'
CREATE TABLE en AS
SELECT g AS id, format('w%s w%s w%s w%s v%s', g % 101, g % 103, g % 107, g % 109, g % 37) AS sentence
  FROM generate_series(1, 2000) g;
CREATE TABLE es AS
SELECT 5000 + (g * 13) % 2003 AS id, format('w%s w%s w%s w%s v%s', g % 101, g % 103, g % 107, g % 109, g % 41) AS sentence
  FROM generate_series(1, 2000) g;
SELECT corpq.vocab_build('spill_v', 'SELECT sentence FROM en UNION ALL SELECT sentence FROM es');
SELECT corpq.model_create('spill_enc', '{"preset": "small", "kind": "encoder"}', 'spill_v', 'spill_v', 1);
SQL
call="corpq.mine_pairs('spill_enc', 'SELECT id, sentence FROM en', 'SELECT id, sentence FROM es', '{\"mutual\": true}')"
q -c "DROP TABLE IF EXISTS mem, spilled" >/dev/null
inmem=$(mine mem 1GB "$call")
spill=$(mine spilled 4MB "$call")
[ -z "$inmem" ] || fail "at 1 GB mine_pairs went to files: $inmem"
read -r pairs ok < <(same mem spilled)
log "mine_pairs 2,000 x 2,000 sentences (d of a small encoder), mutual: $pairs pairs at 1 GB and at 4 MB, the same: $ok (${spill:-in memory at 4 MB})"
[ "$ok" = t ] || fail "mine_pairs at 4 MB gave other pairs than at 1 GB"
[ "$pairs" -gt 0 ] || fail "mine_pairs found no pair"

# ---- 2b. mine_pairs, 20,000 x 20,000 sentences of the shared corpora --------
{
	echo "CREATE TABLE raw (id text, domain text, src text, tgt text);"
	corpq_copy_parallel raw
} | q >/dev/null
q >/dev/null <<'SQL'
-- 20,000 pairs, the first distinct ids in order: their English sides are the
-- sources, their Spanish sides the targets under permuted ids (20011 is prime)
CREATE TABLE pairs20k AS
SELECT row_number() OVER (ORDER BY id) AS n, src, tgt
  FROM (SELECT DISTINCT ON (id) id, src, tgt FROM raw ORDER BY id) r
 ORDER BY id LIMIT 20000;
CREATE TABLE en20k AS SELECT n AS id, src AS sentence FROM pairs20k;
CREATE TABLE es20k AS SELECT 100000 + (n * 7919) % 20011 AS id, tgt AS sentence FROM pairs20k;
SELECT corpq.vocab_build('spill20k_v', 'SELECT sentence FROM en20k UNION ALL SELECT sentence FROM es20k');
-- max_positions 256, tiny's own: no sentence of these is too long for it
SELECT corpq.model_create('spill20k_enc', '{"preset": "tiny", "kind": "encoder"}',
                          'spill20k_v', 'spill20k_v', 1);
SQL
read -r n_en n_es < <(q -F ' ' -c "SELECT (SELECT count(*) FROM en20k), (SELECT count(*) FROM es20k)")
[ "$n_en" = 20000 ] && [ "$n_es" = 20000 ] || fail "the corpora gave $n_en sources and $n_es targets, not 20,000 each"
call="corpq.mine_pairs('spill20k_enc', 'SELECT id, sentence FROM en20k', 'SELECT id, sentence FROM es20k')"
q -c "DROP TABLE IF EXISTS mem, spilled" >/dev/null
t0=$(date +%s.%N)
inmem=$(mine mem 1GB "$call")
t1=$(date +%s.%N)
spill=$(mine spilled 4MB "$call")
t2=$(date +%s.%N)
[ -z "$inmem" ] || fail "at 1 GB mine_pairs on 20,000 x 20,000 went to files: $inmem"
[ -n "$spill" ] || fail "at 4 MB mine_pairs on 20,000 x 20,000 sentences did not mine from temporary files"
read -r pairs ok < <(same mem spilled)
true_pairs=$(q -c "SELECT count(*) FROM spilled WHERE tgt_id = 100000 + (src_id * 7919) % 20011")
log "mine_pairs 20,000 x 20,000 sentences of the corpora (tiny encoder, d = 64): $pairs pairs ($true_pairs true) at 1 GB in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s, at 4 MB in $(awk -v a="$t1" -v b="$t2" 'BEGIN {printf "%.1f", b - a}') s ($spill), the same: $ok"
[ "$ok" = t ] || fail "mine_pairs on 20,000 x 20,000 at 4 MB gave other pairs than at 1 GB"
# every sentence embedded and mined: one pair per source
grep -q '^mining 20000 x 20000 vectors' <<<"$spill" || fail "not every sentence was mined: $spill"
[ "$pairs" = 20000 ] || fail "mine_pairs on 20,000 x 20,000 gave $pairs pairs, not one per source"

# ---- 3. a cancel with k = 1000 ---------------------------------------------
q >/dev/null <<'SQL'
CREATE TABLE k1000 AS
SELECT g::bigint AS id, array(SELECT (random() - 0.5 + 0 * g)::real FROM generate_series(1, 16)) AS embedding
  FROM generate_series(1, 12000) g;
SQL
worst=0
for timeout in 300 1500 4000; do
	t0=$(date +%s.%N)
	err=$(q -c "SET work_mem = '1GB'" -c "SET statement_timeout = $timeout" \
		-c "SELECT count(*) FROM corpq.mine_vectors('SELECT id, embedding FROM k1000', 'SELECT id, embedding FROM k1000', '{\"k\": 1000}')" 2>&1) \
		&& fail "k = 1000 was not cancelled at $timeout ms"
	t1=$(date +%s.%N)
	grep -q 'statement timeout' <<<"$err" || fail "unexpected error: $err"
	late=$(awk -v a="$t0" -v b="$t1" -v t="$timeout" 'BEGIN {printf "%.3f", b - a - t / 1000}')
	log "k = 1000 on 12,000 x 12,000: statement_timeout $timeout ms returned $late s after the timeout"
	awk -v l="$late" 'BEGIN {exit !(l < 3)}' || fail "the cancel at $timeout ms took $late s"
done
log "ok"
