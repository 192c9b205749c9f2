#!/usr/bin/env bash
# cav_accumulate under its byte cap (work_mem x 256): the backend's resident
# memory stays near the cap and the query fails with program_limit_exceeded
# instead of growing until the OOM killer acts; a long accumulation is
# cancelled promptly and the session stays usable.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 600

# the backend's peak resident memory so far (monotonic, so a sampler that is
# starved on a loaded machine still sees the peak if it reads before the exit)
hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
pid_of() {
	for _ in $(seq 100); do
		p=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$1' AND state = 'active'" | head -1)
		[ -n "$p" ] && { echo "$p"; return; }
		sleep 0.05
	done
}

q -c "CREATE EXTENSION corpq"
# 40 distinct target tokens per pair: the state grows without bound
q -c "CREATE TABLE wide AS SELECT g AS id, 's' || g || ' s' || (g % 1000) AS src,
      (SELECT string_agg('t' || (g * 40 + k), ' ') FROM generate_series(1, 40) k) AS tgt
      FROM generate_series(1, 100000) g"
# the same 1000 target tokens over and over: small state, long run
q -c "CREATE TABLE narrow AS SELECT g AS id, 's' || (g % 100) AS src,
      (SELECT string_agg('t' || ((g + k * 7) % 1000), ' ') FROM generate_series(1, 40) k) AS tgt
      FROM generate_series(1, 400000) g"

# ---- the cap: work_mem 1MB -> 256 MB per state ----
# The session prints its pid, warms up (a 100-row accumulation maps the
# library's dependencies and the table's first pages: about 75 MB of file and
# shared pages that are no part of the state), prints a marker and idles for
# a second before accumulating, so the baseline is read after the warm-up and
# before the state exists (reading it once the query was seen active raced the
# fill on a busy machine and hid half of the growth).
out=$(mktemp)
psql -X -Atq -c "SELECT pg_backend_pid()" \
	-c "SELECT corpq.cav_accumulate(src, tgt, 64) IS NULL FROM wide WHERE id <= 100" \
	-c "SELECT 'warm'" -c "SELECT pg_sleep(1)" \
	-c "SET max_parallel_workers_per_gather = 0" -c "SET work_mem = '1MB'" \
	-c "SELECT corpq.cav_accumulate(src, tgt, 64) IS NULL FROM wide" -c "SELECT pg_sleep(1)" >"$out" 2>&1 &
bg=$!
pid=
for _ in $(seq 100); do
	pid=$(head -1 "$out")
	[ -n "$pid" ] && break
	sleep 0.02
done
[[ "$pid" =~ ^[0-9]+$ ]] || fail "could not find the accumulating backend: $(cat "$out")"
for _ in $(seq 300); do
	grep -q '^warm$' "$out" && break
	sleep 0.02
done
grep -q '^warm$' "$out" || fail "the warm-up did not finish: $(cat "$out")"
base=$(hwm_kb "$pid") peak=0
while kill -0 $bg 2>/dev/null; do
	r=$(hwm_kb "$pid")
	# an exiting backend's status file has no VmHWM line: empty, not 0
	[ "${r:-0}" -gt "$peak" ] && peak=$r
	sleep 0.05
done
wait $bg || true
grep -q "could not add a pair to the CAV" "$out" || fail "no cap error: $(cat "$out")"
grep -q "above the limit of 268435456" "$out" || fail "cap detail missing: $(cat "$out")"
growth_mb=$(((peak - base) / 1024))
echo "cap 256 MB: backend RSS grew by $growth_mb MB before the ERROR"
[ "$growth_mb" -lt 320 ] || fail "backend RSS grew by $growth_mb MB, cap is 256 MB"
[ "$growth_mb" -gt 100 ] || fail "backend RSS grew by only $growth_mb MB: did the state fill at all?"

# ---- cancel a long accumulation ----
PGAPPNAME=cavcancel psql -X -Atq -c "SET max_parallel_workers_per_gather = 0" \
	-c "SELECT corpq.cav_accumulate(src, tgt, 64) IS NULL FROM narrow" \
	-c "SELECT 'alive'" >"$out" 2>&1 &
bg=$!
pid=$(pid_of cavcancel)
[ -n "$pid" ] || fail "could not find the long-running backend"
sleep 1
kill -0 $bg 2>/dev/null || fail "accumulation over narrow finished within 1 s; make it longer: $(cat "$out")"
t0=$(date +%s%N)
q -c "SELECT pg_cancel_backend($pid)" >/dev/null
wait $bg || true
ms=$((($(date +%s%N) - t0) / 1000000))
grep -q "canceling statement due to user request" "$out" || fail "not cancelled: $(cat "$out")"
grep -q "^alive$" "$out" || fail "session unusable after cancel: $(cat "$out")"
echo "cancel: the accumulation stopped $ms ms after pg_cancel_backend"
[ "$ms" -lt 2000 ] || fail "cancel took $ms ms"
rm -f "$out"
echo "cav_memory: ok"
