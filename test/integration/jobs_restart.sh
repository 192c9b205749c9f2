#!/usr/bin/env bash
# The job machinery under server restarts, with a real job kind (lexicon_train,
# restartable: it writes its results only at the end).
#
# With corpq preloaded:
#   - live progress of a running job is visible from another session;
#   - pg_ctl restart -m immediate mid-job: the recovery worker requeues the
#     job, it runs again (attempts = 2) and succeeds;
#   - kill -9 of the job's worker (a crash-restart, same postmaster start
#     time): the job is requeued again and succeeds;
#   - kill -9 of the postmaster: the orphaned worker exits at its next
#     progress report (not at its end, which would keep the old shared memory
#     in use and the server from starting), the server starts again at once,
#     and the job is requeued and succeeds;
#   - job_cancel of a running job: 'cancelled', nothing written.
# Without preload:
#   - a restart mid-job leaves it failed with the reason, once anyone looks.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	CORPQ_CLUSTER_MODE=preload corpq_cluster_run -t 900 \
		-o shared_preload_libraries=corpq -o max_worker_processes=16
	CORPQ_CLUSTER_MODE=plain corpq_cluster_run -t 600 -o max_worker_processes=16
	log ok
	exit 0
fi

mode=$CORPQ_IN_CLUSTER
CORPQ_TEST_NAME="jobs_restart ($mode)"
# wait until the job's progress shows phase em with at least one finished pass
wait_em() {
	for _ in $(seq 1200); do
		[ "$(q -c "SELECT count(*) FROM corpq.job_progress WHERE id = $1 AND phase = 'em' AND figures ? 'loglik_per_token'")" = 1 ] && return 0
		sleep 0.1
	done
	fail "job $1 never reached the em phase: $(q -c "SELECT state, error FROM corpq.jobs WHERE id = $1")"
}
state_of() { q -c "SELECT state || ' attempts=' || attempts || coalesce(' error=' || error, '') FROM corpq.jobs WHERE id = $1"; }

q -c "CREATE EXTENSION corpq"
# 16000 pairs of 10 tokens over vocabularies of ~400: EM passes of a fraction
# of a second, small tables, so the job's time is mostly training
q -c "CREATE TABLE bitext AS SELECT g AS id,
        (SELECT string_agg('w' || ((g * 7 + k * 13 + k * k * g) % 401), ' ') FROM generate_series(1, 10) k) AS src,
        (SELECT string_agg('v' || ((g * 11 + k * 17 + k * k * g) % 397), ' ') FROM generate_series(1, 10) k) AS tgt
      FROM generate_series(1, 16000) g"

submit() { q -c "SELECT corpq.lexicon_train('$1', 'SELECT src, tgt FROM bitext', '{\"iterations\": $2}')"; }

if [ "$mode" = plain ]; then
	job=$(submit plain 200)
	wait_em "$job"
	datadir=$(q -c "SHOW data_directory")
	log "restarting (immediate) while job $job runs"
	restart_immediate
	cluster_ready
	[ "$(q -c "SELECT corpq.job_wait($job, '60 s')")" = failed ] || fail "job $job: $(state_of "$job")"
	[ "$(q -c "SELECT error FROM corpq.jobs WHERE id = $job")" = "the server restarted while the job was running" ] \
		|| fail "job $job: $(state_of "$job")"
	[ "$(q -c "SELECT count(*) FROM corpq.lexicons")" = 0 ] || fail "a failed job left a lexicon"
	log "without preload, a restart fails the job: $(state_of "$job")"
	exit 0
fi

# ---- preloaded ----
[ "$(q -c "SHOW shared_preload_libraries")" = corpq ] || fail "corpq not preloaded"

# calibration and cancel: a long job's EM rate sizes the later jobs (about
# 10 s of EM each); cancelling it must land within a progress step
job=$(submit cancelled 400)
wait_em "$job"
sleep 1
rate=$(q -c "SELECT rate FROM corpq.job_progress WHERE id = $job")
t0=$(date +%s.%N)
[ "$(q -c "SELECT corpq.job_cancel($job)")" = running ] || fail "cancel: $(state_of "$job")"
[ "$(q -c "SELECT corpq.job_wait($job, '60 s')")" = cancelled ] || fail "job $job: $(state_of "$job")"
took=$(echo "$(date +%s.%N) - $t0" | bc)
[ "$(q -c "SELECT count(*) FROM corpq.lexicons WHERE name = 'cancelled'")" = 0 ] || fail "a cancelled job wrote its lexicon"
[ "$(q -c "SELECT error FROM corpq.jobs WHERE id = $job")" = "cancelled by request" ] || fail "job $job: $(state_of "$job")"
log "cancel: $(state_of "$job") after $(printf %.2f "$took") s"
iters=$(echo "x = 10 * $rate / 32000 + 1; if (x < 6) x = 6; if (x > 400) x = 400; x / 1" | bc)
log "EM at $(printf %.0f "$rate") pairs/s; long jobs use $iters iterations"

# 1. live progress from another session, then restart -m immediate
job=$(submit restarted "$iters")
wait_em "$job"
d1=$(q -c "SELECT done FROM corpq.job_progress WHERE id = $job")
sleep 1.5
d2=$(q -c "SELECT done FROM corpq.job_progress WHERE id = $job")
fig=$(q -c "SELECT figures FROM corpq.job_progress WHERE id = $job")
[ "$(echo "$d2 > $d1" | bc)" = 1 ] || fail "progress did not move: $d1 -> $d2"
log "live progress: done $d1 -> $d2, figures $fig"
start1=$(q -c "SELECT pg_postmaster_start_time()")
log "restarting (immediate) while job $job runs"
restart_immediate
cluster_ready
[ "$(q -c "SELECT pg_postmaster_start_time()")" != "$start1" ] || fail "the server did not restart"
# the recovery worker requeues it and a new worker claims it
for _ in $(seq 600); do
	s=$(q -c "SELECT state || attempts FROM corpq.jobs WHERE id = $job")
	[ "$s" = running2 ] && break
	case "$s" in failed*|cancelled*) fail "job $job after restart: $(state_of "$job")" ;; esac
	sleep 0.1
done
[ "$s" = running2 ] || fail "job $job not restarted: $(state_of "$job")"
[ "$(q -c "SELECT corpq.job_wait($job, '600 s')")" = succeeded ] || fail "job $job: $(state_of "$job")"
[ "$(q -c "SELECT version FROM corpq.lexicons WHERE name = 'restarted'")" = 1 ] || fail "no lexicon after the restarted job"
log "restart -m immediate: $(state_of "$job")"

# 2. kill -9 of the worker: a crash-restart
job=$(submit crashed "$iters")
wait_em "$job"
pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job")
start1=$(q -c "SELECT pg_postmaster_start_time()")
log "kill -9 of worker $pid of job $job"
kill -9 "$pid"
sleep 1
cluster_ready
[ "$(q -c "SELECT pg_postmaster_start_time()")" = "$start1" ] || fail "expected a crash-restart, not a new postmaster"
[ "$(q -c "SELECT corpq.job_wait($job, '600 s')")" = succeeded ] || fail "job $job: $(state_of "$job")"
[ "$(q -c "SELECT attempts FROM corpq.jobs WHERE id = $job")" = 2 ] || fail "job $job: $(state_of "$job")"
log "crash-restart: $(state_of "$job")"

# 3. kill -9 of the postmaster: the worker must not outlive it by more than a
# progress report (its job has about 10 s of EM left)
job=$(submit orphaned "$iters")
wait_em "$job"
pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job")
pm=$(head -1 "$(q -c "SHOW data_directory")/postmaster.pid")
log "kill -9 of the postmaster $pm while worker $pid runs job $job"
kill -9 "$pm"
t0=$(date +%s.%N)
for _ in $(seq 100); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.05
done
! kill -0 "$pid" 2>/dev/null || fail "worker $pid still runs 5 s after the postmaster died"
took=$(echo "$(date +%s.%N) - $t0" | bc)
for _ in $(seq 50); do
	pg_ctlcluster "$PGVERSION" regress start 2>/dev/null && break
	sleep 0.2
done
cluster_ready
[ "$(q -c "SELECT corpq.job_wait($job, '600 s')")" = succeeded ] || fail "job $job: $(state_of "$job")"
[ "$(q -c "SELECT attempts FROM corpq.jobs WHERE id = $job")" = 2 ] || fail "job $job: $(state_of "$job")"
log "postmaster killed: the worker exited after $(printf %.2f "$took") s; $(state_of "$job")"

# the restarted run equals an uninterrupted one (training is deterministic)
job=$(submit fresh "$iters")
[ "$(q -c "SELECT corpq.job_wait($job, '600 s')")" = succeeded ] || fail "job $job: $(state_of "$job")"
diff=$(q -c "SELECT count(*) FROM ((SELECT src, tgt, count FROM corpq.lexicon_dictionary WHERE lexicon = 'fresh'
                                    EXCEPT SELECT src, tgt, count FROM corpq.lexicon_dictionary WHERE lexicon = 'restarted')
                                   UNION ALL
                                   (SELECT src, tgt, count FROM corpq.lexicon_dictionary WHERE lexicon = 'restarted'
                                    EXCEPT SELECT src, tgt, count FROM corpq.lexicon_dictionary WHERE lexicon = 'fresh')) d")
[ "$diff" = 0 ] || fail "the restarted lexicon differs from an uninterrupted one in $diff dictionary entries"
[ "$(q -c "SELECT count(*) FROM corpq.lexicon_dictionary WHERE lexicon = 'fresh'")" -gt 0 ] || fail "empty dictionary"
log "restarted lexicon = uninterrupted lexicon"
exit 0
