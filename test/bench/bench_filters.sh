#!/usr/bin/env bash
# Rule filters (docs/filters.md: Rule filters; figures in docs/benchmarks.md).
# corpq.filter_report() with the default filter set (corpq.filter_defaults())
# over the first BENCH_ROWS pairs (default: all, ~80k) of the corpora
# test/lib.sh finds:
#   - serially and with 2 parallel workers (best of BENCH_REPEAT, default 3,
#     wall clock of the query), in pairs/s;
#   - against count(*) over the same table (the scan alone) and against the
#     same filters as one SQL WHERE clause (corpq.filter_predicate());
#   - against OpusFilter's definitions in plain Python run as OpusFilter runs
#     them, one process, line by line (bench_filters.py; its CPU time), with
#     a cross-check that both reject the same number of pairs per filter.
# And corpq.lang_is() (CLD2) alone: sentences/s over both sides, serially.
# Asserts nothing on time; the target is corpq serial >= 10x the Python per
# core.  Prints the CPU it ran on and the load average.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster -o max_worker_processes=16 -o max_parallel_workers=8 -- "$@"
rows=${BENCH_ROWS:-0}
repeat=${BENCH_REPEAT:-3}
py=${PYTHON:-/usr/bin/python3}

log "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
q >/dev/null <<SQL
CREATE EXTENSION corpq;
CREATE TABLE raw (ord bigserial, id text, domain text, src text, tgt text);
$(corpq_copy_parallel raw)
CREATE TABLE pairs AS SELECT src, tgt FROM raw WHERE $rows = 0 OR ord <= $rows ORDER BY ord;
ALTER TABLE pairs SET (parallel_workers = 2);
VACUUM ANALYZE pairs;
-- this backend's CPU time in clock ticks (utime + stime)
CREATE FUNCTION cpu_ticks() RETURNS bigint LANGUAGE sql VOLATILE AS
\$\$ SELECT split_part(s, ' ', 14)::bigint + split_part(s, ' ', 15)::bigint
     FROM pg_read_file('/proc/self/stat') s \$\$;
-- the best of n runs of a query: wall-clock seconds and this backend's CPU
-- seconds (the work itself when serial; parallel workers' CPU is not in it)
CREATE FUNCTION best_of(q text, n int, OUT wall float8, OUT cpu float8) LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; c0 bigint; hz float8 := 100;
BEGIN
    wall := 'Infinity'; cpu := 'Infinity';
    FOR i IN 1..n LOOP
        t0 := clock_timestamp(); c0 := cpu_ticks();
        EXECUTE q;
        wall := least(wall, extract(epoch FROM clock_timestamp() - t0));
        cpu := least(cpu, (cpu_ticks() - c0) / hz);
    END LOOP;
END \$\$;
SQL
n=$(q -c "SELECT count(*) FROM pairs")
spec=$(q -c "SELECT corpq.filter_defaults()")
log "$n pairs; filters: $(q -c "SELECT string_agg(e->>'name', ', ') FROM jsonb_array_elements(corpq.filter_defaults()) e")"

serial="SET max_parallel_workers_per_gather = 0;"
parallel="SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;"
# "wall cpu" of a query, best of $repeat
time_of() { q -F ' ' -c "$1" -c "SELECT * FROM best_of(\$q\$$2\$q\$, $repeat)"; }

read -r t_count c_count < <(time_of "$serial" "SELECT count(*) FROM pairs")
read -r t_serial c_serial < <(time_of "$serial" "SELECT * FROM corpq.filter_report('SELECT src, tgt FROM pairs')")
read -r t_par c_par < <(time_of "$parallel" "SELECT * FROM corpq.filter_report('SELECT src, tgt FROM pairs')")
workers=$(q -c "$parallel" -c "EXPLAIN (ANALYZE, FORMAT json) SELECT corpq.filter_stats(src, tgt, corpq.filter_defaults()) FROM pairs" \
	| "$py" -c "import json,sys; p=json.load(sys.stdin)[0]['Plan']; print(p['Plans'][0].get('Workers Launched', 0))")
read -r t_pred c_pred < <(time_of "$serial" "SELECT count(*) FROM pairs WHERE $(q -c "SELECT corpq.filter_predicate()")")
read -r t_lang c_lang < <(time_of "$serial" "SELECT count(*) FILTER (WHERE corpq.lang_is(src, 'en')), count(*) FILTER (WHERE corpq.lang_is(tgt, 'es')) FROM pairs")

pyout=$("$py" test/bench/bench_filters.py "$spec" "$n")
t_py=$(echo "$pyout" | sed -n 's/^python: [0-9]* pairs \([0-9.]*\) s$/\1/p')

rate() { awk -v n="$1" -v t="$2" 'BEGIN { printf "%.0f", n / t }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
echo
printf '%-46s %9s %9s %14s %14s\n' "what" "wall s" "CPU s" "pairs/s wall" "pairs/s CPU"
row() { printf '%-46s %9.3f %9s %14s %14s\n' "$1" "$3" "$4" "$(rate "$2" "$3")" "$([ "$4" = - ] && echo - || rate "$2" "$4")"; }
row "count(*) scan" "$n" "$t_count" "$c_count"
row "filter_report, serial" "$n" "$t_serial" "$c_serial"
row "filter_report, 2 workers ($workers launched)" "$n" "$t_par" -
row "WHERE filter_predicate(), serial" "$n" "$t_pred" "$c_pred"
row "Python (OpusFilter's definitions), 1 process" "$n" "$t_py" "$t_py"
row "lang_is (CLD2), both sides (sentences), serial" $((2 * n)) "$t_lang" "$c_lang"
echo
log "per core (CPU time): filter_report serial is $(ratio "$t_py" "$c_serial")x the Python (target >= 10x); wall clock: 2 workers / serial $(ratio "$t_serial" "$t_par")x, filter_report / count(*) $(ratio "$t_serial" "$t_count")x"
log "(the Python's time is its CPU time; CPU times have the kernel's 10 ms resolution: use BENCH_ROWS large enough)"

# the same decisions: rejected pairs per filter, corpq and Python
mismatch=0
while read -r label r; do
	c=$(q -c "SELECT rejected FROM corpq.filter_report('SELECT src, tgt FROM pairs') WHERE filter = '$label'")
	[ "$c" = "$r" ] || { log "MISMATCH $label: corpq $c, Python $r"; mismatch=1; }
done < <(echo "$pyout" | sed -n 's/^rejected //p')
[ "$mismatch" = 0 ] && log "corpq and Python reject the same pairs per filter ($(echo "$pyout" | sed -n 's/^rejected all //p') by any)"
exit "$mismatch"
