#!/usr/bin/env bash
# Concurrent scoring with corpq preloaded: several backends, each running
# parallel workers, score the same table while another backend commits new
# versions of the model.  Nothing may hang (timeouts), every query must see
# one version throughout (its result equals the all-v1 or the all-v2 result,
# never a mix), pinned name@1 queries always equal v1, and the postmaster
# stays single-threaded.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 600 -o shared_preload_libraries=corpq -o max_worker_processes=24 \
	-o max_parallel_workers=16 -o max_connections=40

threads_of() { ls "/proc/$1/task" | wc -l; }

q >/dev/null <<'SQL'
CREATE EXTENSION corpq;
CREATE TABLE cc AS
SELECT g::bigint AS id,
       concat_ws(' ', 'a' || (g % 31), 'b' || (g * 7 % 23), repeat('c' || (g % 5) || ' ', g % 7)) AS src,
       concat_ws(' ', 'x' || (g % 19), repeat('y' || (g * 3 % 13) || ' ', g % 9)) AS tgt
  FROM generate_series(1, 1200) g;
SELECT corpq.vocab_build('cc_src', 'SELECT src FROM cc');
SELECT corpq.vocab_build('cc_tgt', 'SELECT tgt FROM cc');
SELECT corpq.model_create('cc', '{"preset": "tiny", "max_positions": 32}', 'cc_src', 'cc_tgt', 1);
SELECT corpq.model_create('cc_v2', '{"preset": "tiny", "max_positions": 32}', 'cc_src', 'cc_tgt', 2);
SQL
datadir=$(q -c "SHOW data_directory")
pm=$(head -1 "$datadir/postmaster.pid")
[ "$(threads_of "$pm")" = 1 ] || fail "postmaster has threads before scoring"

# digest of a scoring query over the whole table (parallel plan forced)
par="SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
     SET max_parallel_workers_per_gather = 2; SET parallel_leader_participation = off;"
digest() {	# $1 = model expression
	echo "$par SELECT md5(string_agg(id || ':' || p || ':' || u, ',' ORDER BY id)) FROM
	      (SELECT id, corpq.sent_prob($1, src, tgt) p, corpq.uncertainty($1, src, tgt, 'enteos', 2, 5) u FROM cc) s;"
}
v1=$(q -c "$(digest "'cc'")" | tail -1)
v2=$(q -c "$(digest "'cc_v2'")" | tail -1)
[ -n "$v1" ] && [ "$v1" != "$v2" ] || fail "reference digests: '$v1' '$v2'"
plan=$(q -c "$par EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
             SELECT corpq.sent_prob('cc', src, tgt) FROM cc" | tr '\n' ' ')
grep -q "Workers Launched: 2" <<<"$plan" || fail "no parallel workers: $plan"

tmp=$(mktemp -d)
# a writer commits new versions (alternating v2 / v1 weights) while readers run
(
	i=1
	while [ ! -e "$tmp/done" ]; do
		if [ $((i % 2)) = 1 ]; then from=cc_v2; else from='cc@1'; fi
		timeout 60 psql -X -Atq -v ON_ERROR_STOP=1 \
			-c "SELECT corpq.model_import('cc', corpq.model_export('$from'))" >/dev/null || echo "writer $i failed" >> "$tmp/errors"
		i=$((i + 1))
		sleep 0.7
	done
) &
writer=$!
readers=()
for i in 1 2 3 4 5 6; do
	(
		for r in 1 2; do
			timeout 120 psql -X -Atq -v ON_ERROR_STOP=1 -c "$(digest "'cc'")" | tail -1 >> "$tmp/latest_$i" ||
				echo "reader $i failed" >> "$tmp/errors"
			timeout 120 psql -X -Atq -v ON_ERROR_STOP=1 -c "$(digest "'cc@1'::corpq.pinned_model")" | tail -1 >> "$tmp/pinned_$i" ||
				echo "pinned reader $i failed" >> "$tmp/errors"
		done
	) &
	readers+=($!)
done
wait "${readers[@]}"
touch "$tmp/done"
wait "$writer"
[ ! -s "$tmp/errors" ] || fail "$(cat "$tmp/errors")"
for i in 1 2 3 4 5 6; do
	while read -r d; do
		[ "$d" = "$v1" ] || [ "$d" = "$v2" ] || fail "reader $i saw a mix of versions: $d"
	done < "$tmp/latest_$i"
	while read -r d; do
		[ "$d" = "$v1" ] || fail "pinned reader $i: $d"
	done < "$tmp/pinned_$i"
	[ "$(wc -l < "$tmp/latest_$i")" = 2 ] && [ "$(wc -l < "$tmp/pinned_$i")" = 2 ] || fail "reader $i incomplete"
done
versions=$(q -c "SELECT latest_version FROM corpq.models WHERE name = 'cc'")
n1=$(cat "$tmp"/latest_* | grep -c "$v1" || true)
n2=$(cat "$tmp"/latest_* | grep -c "$v2" || true)
rm -rf "$tmp"
[ "$versions" -ge 3 ] || fail "the writer committed only $((versions - 1)) versions"
[ "$(threads_of "$pm")" = 1 ] || fail "postmaster has $(threads_of "$pm") threads after scoring"
echo "scoring_concurrency: ok ($((versions - 1)) versions committed during 12 parallel reads of the latest version; $n1 saw v1 weights, $n2 v2; 12 pinned reads = v1; postmaster single-threaded)"
