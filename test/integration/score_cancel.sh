#!/usr/bin/env bash
# corpq.score() with a huge batch_size on long pairs (issue 31, High 2):
# the batch is cut to corpq.max_batch_mb, so the backend's peak memory stays
# near the bound instead of growing with batch_size x length (the probe grew
# one backend to 22 GB), the scores equal the per-row function's, and a
# cancel (statement_timeout, pg_cancel_backend) returns within a moment at
# the largest batch the bound allows, because the core polls for interrupts
# between row blocks of every matrix product.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 900

q >/dev/null <<'SQL'
CREATE EXTENSION corpq;
-- 600 pairs of 200 + 200 tokens over a 400-word vocabulary
CREATE TABLE sc AS
SELECT g::bigint AS id,
       (SELECT string_agg('s' || ((g * 7 + k * 13) % 400), ' ') FROM generate_series(1, 200) k) AS src,
       (SELECT string_agg('t' || ((g * 11 + k * 17) % 400), ' ') FROM generate_series(1, 200) k) AS tgt
  FROM generate_series(1, 600) g;
SELECT corpq.vocab_build('sc_src', 'SELECT src FROM sc');
SELECT corpq.vocab_build('sc_tgt', 'SELECT tgt FROM sc');
SELECT corpq.model_create('sc', '{"preset": "small"}', 'sc_src', 'sc_tgt', 1);
SQL

# 1. Memory: batch_size 600 (every pair in one batch): the old code's work
# space was 4 x (3 d + 6 d + F) x 240,600 positions, about 3.7 GB; now the
# batch is cut to 256 MB (the default corpq.max_batch_mb).
out=$(q <<'SQL'
SELECT pg_backend_pid();
SELECT count(*), sum(score) FROM corpq.score('sc', 'SELECT id, src, tgt FROM sc WHERE id <= 600', 'sent_logprob', 600);
SELECT (SELECT sum(corpq.sent_logprob('sc', src, tgt)) FROM sc WHERE id <= 40)
     = (SELECT sum(score) FROM corpq.score('sc', 'SELECT id, src, tgt FROM sc WHERE id <= 40', 'sent_logprob', 600));
SQL
) || fail "score failed: $out"
log "score of 600 long pairs at batch_size 600: $(echo "$out" | sed -n 2p)"
[ "$(echo "$out" | sed -n 3p)" = t ] || fail "batched scores differ from the per-row function's"

# the peak of a backend that scored the whole table in one call: its VmHWM,
# read while it sleeps after the call
peak=$(corpq_peak_kb -c "SELECT count(*) FROM corpq.score('sc', 'SELECT id, src, tgt FROM sc', 'sent_prob', 600)")
log "backend peak memory: $((peak / 1024)) MB (corpq.max_batch_mb 256)"
[ "${peak:-0}" -gt 0 ] || fail "could not read the backend's peak memory"
[ "$peak" -lt $((1024 * 1024)) ] || fail "backend peak $((peak / 1024)) MB, over 1 GB"

# 2. A single pair larger than the bound: a clear error naming the setting.
err=$(q -c "SET corpq.max_batch_mb = 1" \
	-c "SELECT corpq.sent_prob('sc', src, tgt) FROM sc WHERE id = 1" 2>&1 >/dev/null) && fail "no error under a 1 MB bound"
grep -q 'more than corpq.max_batch_mb (1 MB)' <<<"$err" || fail "unexpected error: $err"
log "one pair over a 1 MB bound: $(echo "$err" | head -1)"

errfile=$(mktemp)
# 3. Cancel latency at the largest batch 256 MB allows: statement_timeout,
# then pg_cancel_backend from another session.
t0=$(date +%s.%N)
err=$(q -c "SET statement_timeout = '1500ms'" \
	-c "SELECT count(*) FROM corpq.score('sc', 'SELECT id, src, tgt FROM sc', 'uncertainty', 600, 'enteos', 30)" 2>&1) \
	&& fail "the statement was not cancelled"
t1=$(date +%s.%N)
grep -q 'statement timeout' <<<"$err" || fail "unexpected error: $err"
late=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a - 1.5}')
log "statement_timeout 1.5 s: returned $late s after the timeout (psql start-up included)"
awk -v l="$late" 'BEGIN {exit !(l < 3)}' || fail "the cancel took $late s"

q -c "SELECT count(*) FROM corpq.score('sc', 'SELECT id, src, tgt FROM sc', 'uncertainty', 600, 'enteos', 30)" \
	>/dev/null 2>"$errfile" &
bg=$!
pid=$(corpq_backend_pid "query LIKE '%corpq.score(%uncertainty%'" 10) || fail "the scoring backend did not start"
sleep 1
t0=$(date +%s.%N)
q -c "SELECT pg_cancel_backend($pid)" >/dev/null
wait $bg && fail "pg_cancel_backend did not cancel"
t1=$(date +%s.%N)
grep -q 'canceling statement due to user request' "$errfile" || fail "unexpected error: $(cat "$errfile")"
rm -f "$errfile"
late=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
log "pg_cancel_backend: the query ended $late s after the cancel"
awk -v l="$late" 'BEGIN {exit !(l < 3)}' || fail "the cancel took $late s"
log "OK"
