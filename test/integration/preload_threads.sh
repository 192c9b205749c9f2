#!/usr/bin/env bash
# With corpq in shared_preload_libraries the postmaster must stay single-
# threaded (OpenBLAS is loaded lazily, per backend), backends must honour
# corpq.threads, and concurrent backends must not hang.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 300 -o shared_preload_libraries=corpq

threads_of() { ls "/proc/$1/task" | wc -l; }

q -c "CREATE EXTENSION corpq"
datadir=$(q -c "SHOW data_directory")
pm=$(head -1 "$datadir/postmaster.pid")
[ "$(q -c "SHOW shared_preload_libraries")" = corpq ] || fail "corpq not preloaded"
[ "$(threads_of "$pm")" = 1 ] || fail "postmaster has $(threads_of "$pm") threads before any query"

# A backend that loads BLAS with corpq.threads = 2 runs more than one thread;
# the postmaster still runs one.
tmp=$(mktemp)
q > "$tmp" <<'SQL' &
SET corpq.threads = 2;
SELECT 'threads=' || threads FROM corpq.blas_info();
SELECT pg_sleep(2);
SQL
sleep 1
bpid=$(q -c "SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(2)%' AND pid <> pg_backend_pid()" | head -1)
[ -n "$bpid" ] || fail "could not find the sleeping backend"
bt=$(threads_of "$bpid")
wait
out=$(cat "$tmp"); rm -f "$tmp"
grep -q "threads=2" <<<"$out" || fail "blas_info did not report threads=2: $out"
[ "$bt" -ge 2 ] || fail "backend with corpq.threads=2 has $bt threads"
[ "$(threads_of "$pm")" = 1 ] || fail "postmaster has $(threads_of "$pm") threads after BLAS use"

# Eight concurrent backends load BLAS and compute; none may hang (timeout).
for i in $(seq 8); do
	timeout 60 psql -X -v ON_ERROR_STOP=1 -Atq -c "SELECT core FROM corpq.blas_info()" \
		-c "SELECT round(sum(w)::numeric, 9) FROM (SELECT corpq.temperature_weights(g, 2) OVER () w FROM generate_series(1, 20000) g) s" \
		> "/tmp/corpq_preload_$$_$i.out" &
done
wait
for i in $(seq 8); do
	grep -q "^1.000000000$" "/tmp/corpq_preload_$$_$i.out" || fail "backend $i: $(cat /tmp/corpq_preload_$$_$i.out)"
	rm -f "/tmp/corpq_preload_$$_$i.out"
done
[ "$(threads_of "$pm")" = 1 ] || fail "postmaster has threads after concurrent use"
echo "preload_threads: ok (postmaster single-threaded, backend threads=$bt)"
