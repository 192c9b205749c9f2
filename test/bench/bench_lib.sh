# What the benchmarks share, sourced after test/lib.sh.

# raw_sql: psql input that creates corpq and a table raw (n serial, id,
# domain, src, tgt) holding the corpora test/lib.sh finds
raw_sql() {
	printf '%s\n' '\set ON_ERROR_STOP 1' 'CREATE EXTENSION corpq;' \
		'CREATE TABLE raw (n serial, id text, domain text, src text, tgt text);'
	corpq_copy_parallel raw
}

# ranked_pairs_sql WORDS: SQL that creates corpq, raw and pairs: the pairs of
# raw with both sides non-empty and of at most WORDS words, with their top
# domain and r, their rank in it by a hash of the id (to cut dev and test sets)
ranked_pairs_sql() {
	cat <<SQL
CREATE EXTENSION corpq;
CREATE TABLE raw (id text, domain text, src text, tgt text);
$(corpq_copy_parallel raw)
CREATE TABLE pairs AS
SELECT id, split_part(domain, '/', 1) AS domain, src, tgt,
       row_number() OVER (PARTITION BY split_part(domain, '/', 1) ORDER BY md5(id)) AS r
  FROM raw
 WHERE src <> '' AND tgt <> ''
   AND array_length(regexp_split_to_array(src, '\s+'), 1) <= $1
   AND array_length(regexp_split_to_array(tgt, '\s+'), 1) <= $1;
SQL
}

# The multi-server benchmarks (bench_citus.sh, bench_fdw.sh); qn NODE runs
# psql on a node.

# cut_pairs_sql: SQL that loads raw and makes pairs of it: real en-es pairs
# from the corpora, lower-cased, punctuation split off, cut to 20 tokens a
# side, numbered by a hash of the id (bench_costs.sh, bench_parallel.sh too)
cut_pairs_sql() {
	local punct="([[:punct:]]|¿|¡|«|»|’|‘|“|”|—|…)"
	cat <<SQL
CREATE TABLE raw (id text, domain text, src text, tgt text);
$(corpq_copy_parallel raw)
CREATE TABLE pairs AS
SELECT row_number() OVER (ORDER BY md5(id))::bigint AS id, domain,
       array_to_string((regexp_split_to_array(lower(regexp_replace(src, '$punct', ' \1 ', 'g')), '\s+'))[1:20], ' ') AS src,
       array_to_string((regexp_split_to_array(lower(regexp_replace(tgt, '$punct', ' \1 ', 'g')), '\s+'))[1:20], ' ') AS tgt
  FROM raw;
SQL
}

# pairs_sql ROWS: the SQL of the pairs both load on the coordinator: ROWS
# cut pairs, their vocabularies and an untrained tiny model m
pairs_sql() {
	cut_pairs_sql
	cat <<SQL
DELETE FROM pairs WHERE id > $1;
SELECT corpq.vocab_build('b_src', 'SELECT src FROM pairs', NULL, 8000);
SELECT corpq.vocab_build('b_tgt', 'SELECT tgt FROM pairs', NULL, 8000);
SELECT corpq.model_create('m', '{"preset": "tiny"}', 'b_src', 'b_tgt', 1);
SQL
}

# exec_time NODE QUERY: execution time in seconds (EXPLAIN ANALYZE, TIMING OFF)
exec_time() {
	qn "$1" -c "SET jit = off" -c "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) $2" |
		sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' | awk '{ printf "%.6f", $1 / 1000 }'
}
# best NAME1 NODE1 QUERY1 NAME2 NODE2 QUERY2: best of 3 alternating runs -> t_NAME
best() {
	local i a b
	eval "t_$1=1e9 t_$4=1e9"
	for i in 1 2 3; do
		a=$(exec_time "$2" "$3")
		b=$(exec_time "$5" "$6")
		eval "t_$1=\$(awk -v x=\$t_$1 -v y=$a 'BEGIN { print (y < x) ? y : x }')"
		eval "t_$4=\$(awk -v x=\$t_$4 -v y=$b 'BEGIN { print (y < x) ? y : x }')"
	done
}
rate() { awk -v n="$1" -v t="$2" 'BEGIN { printf "%.0f", n / t }'; }
over() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", 100 * (a / b - 1) }'; }
