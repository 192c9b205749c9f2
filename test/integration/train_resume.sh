#!/usr/bin/env bash
# Training jobs survive crashes (corpq preloaded): a tiny model is trained on a
# generated corpus three times with the same seed --
#   ref:    uninterrupted;
#   killed: its worker is killed with SIGKILL after the first checkpoint (a
#           crash-restart of the whole server, same postmaster start time);
#   stopped: the server is stopped with -m immediate after the first
#           checkpoint and started again;
#   early:  its worker is killed before its first checkpoint (it starts
#           over: log rows of the dead run are replaced, not duplicated);
#   budget: only a time budget, so the job calibrates and derives its
#           schedule (warm-up, checkpoints); its worker is killed after the
#           first checkpoint: the resumed run must keep the first attempt's
#           schedule (result and train_log), every lr must follow its
#           warm-up, and the final weights must equal those of a run given
#           the same number of steps and that warm-up explicitly;
# each interrupted job must be requeued, resume from its last checkpoint
# (attempts = 2, resumed_from_step >= checkpoint interval), reach the
# requested step count with a finite loss, leave a log without gaps, and end
# with weights byte-identical to ref's (the core's resume is exact and the
# data cursor is saved with the optimizer state).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	CORPQ_CLUSTER_MODE=preload corpq_cluster_run -t 900 \
		-o shared_preload_libraries=corpq -o max_worker_processes=16
	log ok
	exit 0
fi

# wait for the first checkpoint of job $1; fail if the job ends before
wait_checkpoint() {
	for _ in $(seq 3000); do
		[ "$(q -c "SELECT count(*) FROM corpq.train_checkpoints WHERE job = $1")" -ge 1 ] && return 0
		sleep 0.1
	done
	fail "job $1 wrote no checkpoint: $(q -c "SELECT state, error FROM corpq.jobs WHERE id = $1")"
}

STEPS=240
EVERY=20
OPTS="{\"steps\": $STEPS, \"checkpoint_every\": $EVERY, \"validate_every\": 40, \"max_tokens\": 512, \"lr\": 0.003, \"warmup\": 20, \"seed\": 5, \"threads\": 1, \"keep_checkpoints\": 2}"

q -c "CREATE EXTENSION corpq"
q <<'SQL'
CREATE TABLE pairs AS
SELECT g AS id,
       (ARRAY['news', 'web', 'bible'])[1 + g % 3] AS domain,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729 + (g % 13) * k * k) % 40), ' ' ORDER BY k)
          FROM generate_series(1, 3 + g % 6) k) AS src
  FROM generate_series(1, 1500) g;
ALTER TABLE pairs ADD COLUMN tgt text;
UPDATE pairs SET tgt = (SELECT string_agg('v' || ((substr(w, 2)::int * 7 + 3) % 40), ' ' ORDER BY o)
                          FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
SELECT corpq.vocab_build('tr_src', 'SELECT src FROM pairs');
SELECT corpq.vocab_build('tr_tgt', 'SELECT tgt FROM pairs');
SELECT corpq.model_create(m, '{"preset": "tiny", "max_positions": 32}', 'tr_src', 'tr_tgt', 1)
  FROM unnest(ARRAY['ref', 'killed', 'stopped', 'early', 'budget', 'budget_ref']) m;
SQL
submit() {
	q -c "SELECT corpq.train('$1', 'SELECT src, tgt, domain FROM pairs WHERE id % 10 <> 0 ORDER BY id',
	                         'SELECT src, tgt, domain FROM pairs WHERE id % 10 = 0 ORDER BY id', '${2:-$OPTS}')"
}
final_md5() {
	q -c "SELECT md5(corpq.model_export('$1'))"
}
check_job() {
	local job=$1 model=$2
	local st
	st=$(q -c "SELECT state || ' attempts=' || attempts || coalesce(' error=' || error, '') FROM corpq.jobs WHERE id = $job")
	[ "$(q -c "SELECT state FROM corpq.jobs WHERE id = $job")" = succeeded ] || fail "job $job ($model): $st"
	[ "$(q -c "SELECT (result ->> 'steps')::int FROM corpq.jobs WHERE id = $job")" = "$STEPS" ] \
		|| fail "job $job ($model) did not reach $STEPS steps"
	[ "$(q -c "SELECT (result ->> 'final_train_loss')::float8 BETWEEN 0 AND 100 FROM corpq.jobs WHERE id = $job")" = t ] \
		|| fail "job $job ($model): final loss not finite"
	# the log: steps 1..STEPS, each once, finite losses
	[ "$(q -c "SELECT count(*) = $STEPS AND min(step) = 1 AND max(step) = $STEPS
	             AND bool_and(train_loss BETWEEN 0 AND 100) FROM corpq.train_log WHERE job = $job")" = t ] \
		|| fail "job $job ($model): the log has gaps: $(q -c "SELECT count(*), min(step), max(step) FROM corpq.train_log WHERE job = $job")"
	# pruning: keep_checkpoints state rows
	[ "$(q -c "SELECT count(*) FROM corpq.train_checkpoints WHERE job = $job")" = 2 ] \
		|| fail "job $job ($model): not 2 checkpoints kept"
}

ref=$(submit ref)
[ "$(q -c "SELECT corpq.job_wait($ref, '600 s')")" = succeeded ] || fail "ref: $(q -c "SELECT error FROM corpq.jobs WHERE id = $ref")"
check_job "$ref" ref
log "uninterrupted run: $(q -c "SELECT result ->> 'steps', result ->> 'final_train_loss', result -> 'dev' ->> 'final_loss' FROM corpq.jobs WHERE id = $ref")"

# ---- kill -9 of the worker: crash-restart ----
job=$(submit killed)
wait_checkpoint "$job"
pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job")
at=$(q -c "SELECT max(step) FROM corpq.train_checkpoints WHERE job = $job")
log "kill -9 of worker $pid of job $job after its checkpoint at step $at"
kill -9 "$pid"
sleep 1
cluster_ready
[ "$(q -c "SELECT corpq.job_wait($job, '600 s')")" = succeeded ] || fail "killed: $(q -c "SELECT state, error FROM corpq.jobs WHERE id = $job")"
check_job "$job" killed
[ "$(q -c "SELECT attempts FROM corpq.jobs WHERE id = $job")" = 2 ] || fail "killed: not 2 attempts"
from=$(q -c "SELECT result ->> 'resumed_from_step' FROM corpq.jobs WHERE id = $job")
[ "$from" -ge "$EVERY" ] || fail "killed: resumed from step '$from'"
[ "$(final_md5 killed)" = "$(final_md5 ref)" ] || fail "killed: final weights differ from the uninterrupted run"
log "killed: resumed from step $from, final weights identical to the uninterrupted run"

# ---- the whole server stopped -m immediate ----
job=$(submit stopped)
wait_checkpoint "$job"
at=$(q -c "SELECT max(step) FROM corpq.train_checkpoints WHERE job = $job")
log "stopping the server (-m immediate) during job $job, checkpoint at step $at"
pg_ctlcluster "$PGVERSION" regress stop -m immediate
pg_ctlcluster "$PGVERSION" regress start
cluster_ready
[ "$(q -c "SELECT corpq.job_wait($job, '600 s')")" = succeeded ] || fail "stopped: $(q -c "SELECT state, error FROM corpq.jobs WHERE id = $job")"
check_job "$job" stopped
from=$(q -c "SELECT result ->> 'resumed_from_step' FROM corpq.jobs WHERE id = $job")
[ "$from" -ge "$EVERY" ] || fail "stopped: resumed from step '$from'"
[ "$(final_md5 stopped)" = "$(final_md5 ref)" ] || fail "stopped: final weights differ from the uninterrupted run"
log "stopped: resumed from step $from, final weights identical to the uninterrupted run"

# no torn models: every version loads (the scoring path checks the CRC)
[ "$(q -c "SELECT count(*) FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model,
             LATERAL corpq.sent_prob(c.name || '@' || v.version, 'w1 w2', 'v10 v17') p WHERE p > 0")" \
  = "$(q -c "SELECT count(*) FROM corpq.model_versions")" ] || fail "a version does not load"

# ---- kill -9 before the first checkpoint: the job starts over ----
job=$(submit early "${OPTS/\"checkpoint_every\": $EVERY/\"checkpoint_every\": 120}")
for _ in $(seq 3000); do
	[ "$(q -c "SELECT count(*) FROM corpq.train_log WHERE job = $job")" -ge 2 ] && break
	sleep 0.05
done
[ "$(q -c "SELECT count(*) FROM corpq.train_checkpoints WHERE job = $job")" = 0 ] || fail "early: a checkpoint came first"
pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job")
log "kill -9 of worker $pid of job $job at step $(q -c "SELECT max(step) FROM corpq.train_log WHERE job = $job"), before any checkpoint"
kill -9 "$pid"
sleep 1
cluster_ready
[ "$(q -c "SELECT corpq.job_wait($job, '600 s')")" = succeeded ] || fail "early: $(q -c "SELECT state, error FROM corpq.jobs WHERE id = $job")"
check_job "$job" early
[ "$(q -c "SELECT attempts || ' ' || coalesce(result ->> 'resumed_from_step', 'none') FROM corpq.jobs WHERE id = $job")" = "2 none" ] \
	|| fail "early: expected a second attempt from scratch"
[ "$(final_md5 early)" = "$(final_md5 ref)" ] || fail "early: final weights differ from the uninterrupted run"
log "early: started over, final weights identical to the uninterrupted run"

# ---- a derived schedule survives a crash and the resume stays exact ----
BOPTS='{"max_seconds": 20, "max_tokens": 512, "lr": 0.003, "seed": 5, "threads": 1, "keep_checkpoints": 2}'
job=$(submit budget "$BOPTS")
wait_checkpoint "$job"
sched=$(q -c "SELECT schedule FROM corpq.train_log WHERE job = $job AND step = 1")
[ -n "$sched" ] || fail "budget: no schedule on the first log row"
pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job")
log "kill -9 of worker $pid of job $job (schedule $sched) after its checkpoint at step $(q -c "SELECT max(step) FROM corpq.train_checkpoints WHERE job = $job")"
kill -9 "$pid"
sleep 1
cluster_ready
[ "$(q -c "SELECT corpq.job_wait($job, '600 s')")" = succeeded ] || fail "budget: $(q -c "SELECT state, error FROM corpq.jobs WHERE id = $job")"
[ "$(q -c "SELECT attempts = 2 AND (result ->> 'resumed_from_step')::int >= 1 FROM corpq.jobs WHERE id = $job")" = t ] \
	|| fail "budget: not resumed: $(q -c "SELECT attempts, result ->> 'resumed_from_step' FROM corpq.jobs WHERE id = $job")"
[ "$(q -c "SELECT result -> 'schedule' = '$sched'::jsonb AND (result ->> 'warmup')::int = ('$sched'::jsonb ->> 'warmup')::int
             AND (SELECT schedule FROM corpq.train_log WHERE job = $job AND step = 1) = '$sched'::jsonb
             FROM corpq.jobs WHERE id = $job")" = t ] \
	|| fail "budget: the resumed run changed its schedule: $(q -c "SELECT result -> 'schedule' FROM corpq.jobs WHERE id = $job")"
steps=$(q -c "SELECT result ->> 'steps' FROM corpq.jobs WHERE id = $job")
warmup=$(q -c "SELECT '$sched'::jsonb ->> 'warmup'")
[ "$(q -c "SELECT count(*) = $steps AND min(step) = 1 AND max(step) = $steps
             AND bool_and(abs(lr - CASE WHEN step - 1 < $warmup THEN 1e-7 + (0.003 - 1e-7) * (step - 1) / $warmup
                                        ELSE 0.003 * sqrt($warmup.0 / (step - 1)) END) < 1e-12)
             FROM corpq.train_log WHERE job = $job")" = t ] || fail "budget: the log has gaps or an lr off the schedule"
ref=$(submit budget_ref "{\"steps\": $steps, \"warmup\": $warmup, \"max_tokens\": 512, \"lr\": 0.003, \"seed\": 5, \"threads\": 1, \"keep_checkpoints\": 2}")
[ "$(q -c "SELECT corpq.job_wait($ref, '600 s')")" = succeeded ] || fail "budget_ref: $(q -c "SELECT error FROM corpq.jobs WHERE id = $ref")"
[ "$(final_md5 budget)" = "$(final_md5 budget_ref)" ] || fail "budget: final weights differ from a run of $steps steps with warm-up $warmup"
log "budget: resumed with its schedule ($steps updates, warm-up $warmup), final weights identical to a run given both explicitly"
