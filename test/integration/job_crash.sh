#!/usr/bin/env bash
# A job whose worker dies by a signal (issue 41), corpq preloaded.  Before,
# recovery requeued such a job after each crash-restart: a translate_job over a
# crashing vocabulary restarted the server three times from one call.
#   1. The culprit: while its job is running, its worker gets SIGSEGV from the
#      shell, again each time the job runs again (a crash that recurs).  The
#      worker records the signal before it dies, so the server restarts once,
#      the job ends failed with "its worker was killed by signal 11 (SIGSEGV)"
#      and is never run again; the record is removed.  An innocent job killed
#      by that crash-restart is requeued and finishes.
#   2. A worker killed without a record (SIGKILL, as the OOM killer does) is
#      requeued after the first crash-restart only: the second fails the job,
#      saying why.
# "The server restarted" is read from the checkpointer's pid, which every
# crash-restart changes.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 900 -o shared_preload_libraries=corpq -o max_worker_processes=16

# wait until the job's progress shows phase em with at least one finished pass
wait_em() {
	for _ in $(seq 1200); do
		[ "$(q -c "SELECT count(*) FROM corpq.job_progress WHERE id = $1 AND phase = 'em' AND figures ? 'loglik_per_token'" 2>/dev/null)" = 1 ] && return 0
		sleep 0.1
	done
	fail "job $1 never reached the em phase: $(state_of "$1")"
}
state_of() { q -c "SELECT state || ' attempts=' || attempts || ' crash_requeues=' || crash_requeues || coalesce(' error=' || error, '') FROM corpq.jobs WHERE id = $1"; }
checkpointer() { q -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'"; }
submit() { q -c "SELECT corpq.lexicon_train('$1', 'SELECT src, tgt FROM bitext', '{\"iterations\": $2}')"; }
# after killing a worker: the server answers again and the job's row is no
# longer the dead worker's (recovery settled it)
settled() {
	local job=$1 pid=$2
	sleep 1
	cluster_ready
	for _ in $(seq 600); do
		[ "$(q -c "SELECT state <> 'running' OR worker_pid IS DISTINCT FROM $pid FROM corpq.jobs WHERE id = $job" 2>/dev/null)" = t ] && return 0
		sleep 0.1
	done
	fail "job $job was not settled after its worker $pid died: $(state_of "$job")"
}

q -c "CREATE EXTENSION corpq"
[ "$(q -c "SHOW shared_preload_libraries")" = corpq ] || fail "corpq not preloaded"
q -c "CREATE TABLE bitext AS SELECT g AS id,
        (SELECT string_agg('w' || ((g * 7 + k * 13 + k * k * g) % 401), ' ') FROM generate_series(1, 10) k) AS src,
        (SELECT string_agg('v' || ((g * 11 + k * 17 + k * k * g) % 397), ' ') FROM generate_series(1, 10) k) AS tgt
      FROM generate_series(1, 16000) g"
datadir=$(q -c "SHOW data_directory")

# calibration: the EM rate sizes the innocent job (about 10 s of EM)
job=$(submit calibration 400)
wait_em "$job"
sleep 1
rate=$(q -c "SELECT rate FROM corpq.job_progress WHERE id = $job")
q -c "SELECT corpq.job_cancel($job)" >/dev/null
[ "$(q -c "SELECT corpq.job_wait($job, '60 s')")" = cancelled ] || fail "calibration job: $(state_of "$job")"
iters=$(echo "x = 10 * $rate / 32000 + 1; if (x < 6) x = 6; if (x > 400) x = 400; x / 1" | bc)
log "EM at $(printf %.0f "$rate") pairs/s; the innocent job runs $iters iterations"

# 1. the culprit's worker crashes whenever it runs
victim=$(submit victim "$iters")
culprit=$(submit culprit 400)
wait_em "$victim"
wait_em "$culprit"
ck0=$(checkpointer)
kills=0
while [ "$kills" -lt 4 ]; do
	s=$(q -c "SELECT state || ' ' || coalesce(worker_pid, 0) FROM corpq.jobs WHERE id = $culprit")
	case "$s" in
	running\ 0) sleep 0.1 ;;
	running\ *)
		pid=${s#running }
		wait_em "$culprit"
		log "kill -SEGV of worker $pid of job $culprit"
		kill -SEGV "$pid"
		kills=$((kills + 1))
		settled "$culprit" "$pid"
		;;
	queued\ *) sleep 0.1 ;;
	*) break ;;
	esac
done
ck1=$(checkpointer)
[ "$ck1" != "$ck0" ] || fail "no crash-restart after the SIGSEGV"
[ "$kills" = 1 ] || fail "the crashing job ran again $((kills - 1)) time(s) after its crash: $(state_of "$culprit")"
[ "$(q -c "SELECT state || ' ' || attempts FROM corpq.jobs WHERE id = $culprit")" = "failed 1" ] \
	|| fail "culprit: $(state_of "$culprit")"
case "$(q -c "SELECT error FROM corpq.jobs WHERE id = $culprit")" in
"its worker was killed by signal 11 (SIGSEGV)"*) ;;
*) fail "culprit's error: $(state_of "$culprit")" ;;
esac
[ "$(q -c "SELECT corpq.job_wait($victim, '600 s')")" = succeeded ] || fail "victim: $(state_of "$victim")"
[ "$(q -c "SELECT attempts || ' ' || crash_requeues FROM corpq.jobs WHERE id = $victim")" = "2 1" ] \
	|| fail "victim: $(state_of "$victim")"
[ "$(q -c "SELECT count(*) FROM corpq.lexicons WHERE name = 'victim'")" = 1 ] || fail "no lexicon from the victim"
[ "$(checkpointer)" = "$ck1" ] || fail "the server restarted more than once"
if compgen -G "$datadir/pg_corpq/crash.*" >/dev/null; then
	fail "crash records left: $(ls "$datadir/pg_corpq")"
fi
log "one crash-restart; culprit $(state_of "$culprit"); victim $(state_of "$victim")"

# 2. SIGKILL leaves no record: one requeue after a crash-restart, not two
job=$(submit killed 400)
for round in 1 2; do
	wait_em "$job"
	pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job")
	log "kill -9 of worker $pid of job $job ($round)"
	kill -9 "$pid"
	settled "$job" "$pid"
	if [ "$round" = 1 ]; then
		for _ in $(seq 600); do
			[ "$(q -c "SELECT state || attempts FROM corpq.jobs WHERE id = $job")" = running2 ] && break
			sleep 0.1
		done
		[ "$(q -c "SELECT state || attempts FROM corpq.jobs WHERE id = $job")" = running2 ] \
			|| fail "killed once, not run again: $(state_of "$job")"
	fi
done
if [ "$(q -c "SELECT corpq.job_wait($job, '30 s')")" != failed ]; then
	q -c "SELECT corpq.job_cancel($job)" >/dev/null
	fail "killed twice, the job ran on: $(state_of "$job")"
fi
case "$(q -c "SELECT error FROM corpq.jobs WHERE id = $job")" in
"a crash-restart of the server stopped the job a second time"*) ;;
*) fail "twice killed job's error: $(state_of "$job")" ;;
esac
log "killed twice: $(state_of "$job")"
exit 0
