#!/usr/bin/env bash
# UncSamp over 1M monolingual rows (mono/en.txt of the corpora test/lib.sh
# finds, or without it the English side of their parallel files, repeated
# ten times, normalised like the lexicon's training text): one query computing
# corpq.mono_uncertainty and the corpq.uncsamp key of every row, as a full
# aggregate and as the sampling query ORDER BY key DESC LIMIT 100000.
# Reports rows/s, the ratio to SELECT count(*) over the same rows, and the
# speed-up with 2 parallel workers (best of 3 each, EXPLAIN ANALYZE with
# TIMING OFF).  The lexicon is trained on 20k en-es pairs first.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster -o max_worker_processes=16 -o max_parallel_workers=8 \
	-o shared_buffers=512MB -o max_wal_size=4GB

punct="([[:punct:]]|¿|¡|«|»|’|‘|“|”|—|…)"
q -c "CREATE EXTENSION corpq"
q -c "CREATE TABLE raw(id text, domain text, src text, tgt text, ord bigserial)"
corpq_copy_parallel raw | q
q -c "CREATE TABLE bitext AS SELECT lower(regexp_replace(src, '$punct', ' \\1 ', 'g')) AS src,
             lower(regexp_replace(tgt, '$punct', ' \\1 ', 'g')) AS tgt
      FROM raw ORDER BY ord LIMIT 20000"
job=$(q -c "SELECT corpq.lexicon_train('lx', 'SELECT src, tgt FROM bitext')")
[ "$(q -c "SELECT corpq.job_wait($job)")" = succeeded ] || { q -c "SELECT error FROM corpq.jobs WHERE id = $job"; exit 1; }

q -c "CREATE TABLE mono_line(line text)"
if [ -f "$CORPQ_CORPORA/mono/en.txt" ]; then
	q -c "\\copy mono_line FROM '$CORPQ_CORPORA/mono/en.txt' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\b')"
else
	log "no mono/en.txt: the monolingual rows are the English side of the parallel files"
	q -c "INSERT INTO mono_line SELECT src FROM raw ORDER BY ord"
fi
q -c "CREATE TABLE mono AS SELECT row_number() OVER () AS id, s
        FROM (SELECT lower(regexp_replace(line, '$punct', ' \\1 ', 'g')) AS s FROM mono_line) l,
             generate_series(1, 10) r"
q -c "VACUUM ANALYZE mono"
# U_max: the uncertainty at R = 90% of the parallel data's sources (thesis default)
umax=$(q -c "SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY corpq.mono_uncertainty('lx', src)) FROM bitext")
rows=$(q -c "SELECT count(*) FROM mono")

settings="SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;"
# best of 3 "Execution Time" of a query with the given workers per gather
best_ms() {
	local workers=$1 sql=$2 best="" t
	for _ in 1 2 3; do
		t=$(q -c "$settings SET max_parallel_workers_per_gather = $workers;" \
			-c "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) $sql" | sed -n 's/^Execution Time: \([0-9.]*\) ms/\1/p')
		if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
	done
	echo "$best"
}
launched() {
	q -c "$settings SET max_parallel_workers_per_gather = $1;" \
		-c "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) $2" | sed -n 's/.*Workers Launched: \([0-9]*\).*/\1/p' | head -1
}
key="corpq.uncsamp(corpq.mono_uncertainty('lx', s), $umax, 2, id, 1)"
count_sql="SELECT count(*) FROM mono"
agg_sql="SELECT sum($key) FROM mono"
sample_sql="SELECT id FROM mono ORDER BY $key DESC LIMIT 100000"

c0=$(best_ms 0 "$count_sql"); c2=$(best_ms 2 "$count_sql")
a0=$(best_ms 0 "$agg_sql"); a2=$(best_ms 2 "$agg_sql")
s0=$(best_ms 0 "$sample_sql"); s2=$(best_ms 2 "$sample_sql")
w=$(launched 2 "$agg_sql")
sample_ok=$(q -c "SELECT count(*) = 100000 AND count(DISTINCT id) = 100000 FROM ($sample_sql) s")

/usr/bin/python3 - "$rows" "$umax" "$c0" "$c2" "$a0" "$a2" "$s0" "$s2" "$w" "$sample_ok" <<'PY'
import sys
rows, umax = int(sys.argv[1]), float(sys.argv[2])
c0, c2, a0, a2, s0, s2 = map(float, sys.argv[3:9])
w, ok = sys.argv[9], sys.argv[10]
print(f"bench_uncsamp: {rows} rows, U_max (R = 90%) = {umax:.4f}; 2-worker plans launched {w} workers; sample distinct: {ok}")
print(f"  SELECT count(*):                         {c0:9.1f} ms serial, {c2:9.1f} ms with 2 workers")
for name, t0, t2 in (("sum(uncsamp(mono_uncertainty))", a0, a2),
                     ("ORDER BY key DESC LIMIT 100000", s0, s2)):
    print(f"  {name:39s}  {t0:9.1f} ms serial ({rows / t0 * 1000:,.0f} rows/s, {t0 / c0:.1f}x count(*)), "
          f"{t2:9.1f} ms with 2 workers ({rows / t2 * 1000:,.0f} rows/s, speed-up {t0 / t2:.2f}x)")
PY
