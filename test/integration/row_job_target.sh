#!/usr/bin/env bash
# One active row job per target, across sessions (issue 54.4): while a
# session's transaction that submitted a skip_existing score_job is still
# open, two other sessions submit a job on the same table, one in READ
# COMMITTED and one in REPEATABLE READ whose snapshot predates the first
# job's commit.  Both wait for the first transaction to end and are refused
# then (the check reads the latest committed jobs); the table, without a key
# that would catch it, gets every id once.  (Two submissions in one
# transaction: test/regress/sql/score_job.sql.)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 600

q -c "CREATE EXTENSION corpq" >/dev/null
q >/dev/null <<'SQL'
CREATE TABLE rt_pairs AS
SELECT g::bigint AS id, 'w' || g % 97 || ' w' || g % 89 || ' w' || g % 7 AS src,
       'v' || g % 83 || ' v' || g % 79 AS tgt
  FROM generate_series(1, 3000) g;
SELECT corpq.vocab_build('rt_s', 'SELECT src FROM rt_pairs');
SELECT corpq.vocab_build('rt_t', 'SELECT tgt FROM rt_pairs');
SELECT corpq.model_create('rt', '{"preset": "tiny", "max_positions": 16}', 'rt_s', 'rt_t', 3);
CREATE TABLE rt_scores (id bigint, score double precision);
SQL
SUBMIT="SELECT corpq.score_job('rt', 'SELECT id, src, tgt FROM rt_pairs', 'rt_scores', '{\"skip_existing\": true, \"chunk_rows\": 500}')"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# A: submits, keeps its transaction open for 4 s
q >"$out/a" 2>&1 <<SQL &
BEGIN;
$SUBMIT;
SELECT pg_sleep(4);
COMMIT;
SQL
a=$!
sleep 1
# B: READ COMMITTED; C: REPEATABLE READ with its snapshot taken now, before A commits
t0=$(date +%s.%N)
q -c "$SUBMIT" >"$out/b" 2>&1 &
b=$!
q >"$out/c" 2>&1 <<SQL &
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM corpq.jobs;
$SUBMIT;
COMMIT;
SQL
c=$!
wait $a || fail "the first submission failed: $(cat "$out/a")"
rc_b=0 rc_c=0
wait $b || rc_b=$?
wait $c || rc_c=$?
waited=$(echo "$(date +%s.%N) - $t0" | bc)
[ $rc_b != 0 ] || fail "a second job (READ COMMITTED) was accepted: $(cat "$out/b")"
[ $rc_c != 0 ] || fail "a second job (REPEATABLE READ) was accepted: $(cat "$out/c")"
grep -q 'is already the target of a queued or running corpq job' "$out/b" || fail "READ COMMITTED: $(cat "$out/b")"
grep -q 'is already the target of a queued or running corpq job' "$out/c" || fail "REPEATABLE READ: $(cat "$out/c")"
log "both later submissions waited for the first transaction (${waited%.*} s) and were refused: $(grep -m1 ERROR "$out/b")"

job=$(q -c "SELECT id FROM corpq.jobs WHERE kind = 'score'")
[ "$(q -c "SELECT count(*) FROM corpq.jobs WHERE kind = 'score'")" = 1 ] || fail "more than one score job"
[ "$(q -c "SELECT corpq.job_wait($job, '600 s')")" = succeeded ] || fail "job $job: $(q -c "SELECT error FROM corpq.jobs WHERE id = $job")"
r=$(q -c "SELECT count(*) || ' rows, ' || count(DISTINCT id) || ' ids' FROM rt_scores")
[ "$r" = "3000 rows, 3000 ids" ] || fail "rt_scores: $r"
log "the one job wrote $r"
log ok
