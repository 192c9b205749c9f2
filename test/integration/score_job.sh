#!/usr/bin/env bash
# Scoring jobs (corpq and pg_cron preloaded), run by an ordinary login role
# into its own tables, on a random tiny model; every table is compared with
# corpq.sent_prob() row by row, bit for bit, and must hold every id once:
#   progress: live pairs/s, tokens/s and ETA while a job runs, whose worker
#             runs the job's 2 threads;
#   stopped:  pg_ctl stop -m immediate twice in one job (after its first
#             chunks, and after two more chunks of its second run), and once
#             in another job while its query is read (before any chunk):
#             each resumes after its last committed chunk (attempts,
#             resumed_from_row);
#   skip_existing: a job stopped mid-run resumes by leaving out the ids it
#             wrote (no hash check, no order needed);
#   cancelled: job_cancel after some chunks: the committed chunks stay,
#             nothing else;
#   pg_cron:  a score_job with skip_existing, scheduled every minute through
#             pg_cron (guarded against overlapping runs, as docs/models.md
#             shows), scores only the rows a growing corpus gained.
# SCORE_JOB_PAIRS sets the corpus size: 200,000 by default, issue 40's
# figure (61 s on 2 cores otherwise idle, 3 minutes beside other work).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 2400 -o shared_preload_libraries=corpq,pg_cron -o max_worker_processes=24 \
	-o cron.database_name=postgres -o cron.use_background_workers=on

N=${SCORE_JOB_PAIRS:-200000}
CHUNK=$((N / 80))
OPTS="{\"chunk_rows\": $CHUNK, \"batch_size\": 64, \"threads\": 2}"
qa() { psql -X -v ON_ERROR_STOP=1 -Atq -U sj_alice "$@"; }

[ "$(q -c "SELECT current_database()")" = postgres ] || fail "pg_cron is set up for database postgres"
q -c "CREATE EXTENSION corpq" -c "CREATE EXTENSION pg_cron"
q <<SQL
CREATE ROLE sj_alice LOGIN PASSWORD '$PGPASSWORD';
GRANT CREATE ON SCHEMA public TO sj_alice;
GRANT USAGE ON SCHEMA cron TO sj_alice;
SQL
# N pairs of 4..12 words; the reference: sent_prob row by row
t0=$(date +%s)
qa >/dev/null <<SQL
CREATE TABLE sj_pairs AS
SELECT g::bigint AS id,
       array_to_string((ARRAY['w' || g % 97, 'w' || g * 7 % 89, 'w' || g * 13 % 83, 'w' || g * 17 % 79,
                              'w' || g * 19 % 73, 'w' || g * 23 % 71, 'w' || g * 29 % 67, 'w' || g * 31 % 61,
                              'w' || g * 37 % 59, 'w' || g * 41 % 53, 'w' || g * 43 % 47, 'w' || g * 47 % 43])[1:4 + g % 9], ' ') AS src,
       array_to_string((ARRAY['v' || g % 89, 'v' || g * 3 % 83, 'v' || g * 11 % 79, 'v' || g * 13 % 73,
                              'v' || g * 17 % 71, 'v' || g * 19 % 67, 'v' || g * 23 % 61, 'v' || g * 29 % 59,
                              'v' || g * 31 % 53, 'v' || g * 37 % 47, 'v' || g * 41 % 43])[1:3 + g % 8], ' ') AS tgt
  FROM generate_series(1, $N) g;
SELECT corpq.vocab_build('sj_sv', 'SELECT src FROM sj_pairs');
SELECT corpq.vocab_build('sj_tv', 'SELECT tgt FROM sj_pairs');
SELECT corpq.model_create('sj_m', '{"preset": "tiny", "max_positions": 40}', 'sj_sv', 'sj_tv', 5);
CREATE TABLE sj_ref AS SELECT id, corpq.sent_prob('sj_m', src, tgt) AS score FROM sj_pairs;
CREATE TABLE stopped (id bigint, score double precision, who text DEFAULT current_user);
CREATE TABLE early (LIKE stopped INCLUDING DEFAULTS);
CREATE TABLE growing (LIKE stopped INCLUDING DEFAULTS);
CREATE INDEX ON growing (id);
CREATE TABLE cancelled (LIKE stopped INCLUDING DEFAULTS);
CREATE TABLE cron_scores (id bigint, score double precision);
CREATE INDEX ON cron_scores (id);
INSERT INTO cron_scores SELECT id, score FROM sj_ref WHERE id <= 200;
SQL
log "$N pairs, the reference sent_prob in $(($(date +%s) - t0)) s; chunks of $CHUNK rows"

# ---- pg_cron: every minute, a guarded score_job with skip_existing ----
# (the corpus grew by the ids 201..300 since cron_scores was filled)
qa >/dev/null <<'SQL'
SELECT cron.schedule('sj_growing', '* * * * *', $$
  SELECT corpq.score_job('sj_m', 'SELECT id, src, tgt FROM sj_pairs WHERE id <= 300', 'cron_scores',
                         '{"skip_existing": true}')
   WHERE NOT EXISTS (SELECT FROM corpq.jobs WHERE kind = 'score' AND state IN ('queued', 'running')
                        AND args ->> 'target_name' = 'public.cron_scores')$$);
SQL
cron_since=$(date +%s)

QUERY='SELECT id, src, tgt FROM sj_pairs ORDER BY id'
submit() { qa -c "SELECT corpq.score_job('sj_m', '${3:-$QUERY}', '$1', '$2')"; }
chunks_of() { q -c "SELECT count(*) FROM corpq.row_job_chunks WHERE job = $1"; }
state_of() {
	q -c "SELECT format('%s, %s attempt(s), %s chunks%s', state, attempts,
	                    (SELECT count(*) FROM corpq.row_job_chunks WHERE job = id), ', error ' || error)
	        FROM corpq.jobs WHERE id = $1"
}
# until job $1 has committed $2 chunks (fail when it ends first, or after 10 minutes)
wait_chunks() {
	local s i=0
	while s=$(q -c "SELECT CASE WHEN (SELECT count(*) FROM corpq.row_job_chunks WHERE job = id) >= $2 THEN 'ok'
	                            WHEN state IN ('queued', 'running') THEN 'wait' ELSE 'ended' END
	                  FROM corpq.jobs WHERE id = $1") && [ "$s" = wait ] && [ $((i += 1)) -lt 12000 ]; do
		sleep 0.05
	done
	[ "$s" = ok ] || fail "job $1 did not commit $2 chunks: $(state_of "$1")"
}
# table $1 against the reference: rows, duplicates, missing, extra, other scores
compare() {
	q -c "SELECT (SELECT count(*) FROM $1) || ' rows, ' ||
	             (SELECT count(*) - count(DISTINCT id) FROM $1) || ' duplicated, ' ||
	             (SELECT count(*) FROM sj_ref r WHERE r.id <= $2 AND NOT EXISTS (SELECT FROM $1 t WHERE t.id = r.id)) || ' missing, ' ||
	             (SELECT count(*) FROM $1 t WHERE NOT EXISTS (SELECT FROM sj_ref r WHERE r.id = t.id AND r.id <= $2)) || ' extra, ' ||
	             (SELECT count(*) FROM $1 t JOIN sj_ref r USING (id) WHERE t.score IS DISTINCT FROM r.score) || ' other score'"
}
# table $1 holds the reference's rows with ids up to $2 (default: all), once each
same_rows() {
	local c n=${2:-$N}
	c=$(compare "$1" "$n")
	[ "$c" = "$n rows, 0 duplicated, 0 missing, 0 extra, 0 other score" ] || fail "$1 differs from sent_prob: $c"
}
stop_after_chunks() {
	wait_chunks "$1" "$2"
	log "stop -m immediate during job $1 after $(chunks_of "$1") or more chunks"
	restart_immediate
	cluster_ready
}
wait_attempt() {
	local s
	for _ in $(seq 1200); do
		s=$(q -c "SELECT state || attempts FROM corpq.jobs WHERE id = $1")
		[ "$s" = "running$2" ] && return 0
		case "$s" in failed* | cancelled* | succeeded*) fail "job $1 after the restart: $(state_of "$1")" ;; esac
		sleep 0.1
	done
	fail "job $1 not restarted: $(state_of "$1")"
}
threads_of() { ls "/proc/$1/task" | wc -l; }

# ---- progress, then two stops -m immediate in one job ----
job=$(submit stopped "$OPTS")
# its first report with pairs done (5 minutes at most)
i=0
until p=$(q -c "SELECT concat_ws(' ', phase, total, (figures ->> 'pairs_per_s')::float8 > 0,
	                             (figures ->> 'tokens_per_s')::float8 > 0, eta IS NOT NULL)
	              FROM corpq.job_progress WHERE id = $job AND phase = 'scoring' AND done > 0") \
	&& { [ -n "$p" ] || [ $((i += 1)) -ge 6000 ]; }; do
	sleep 0.05
done
[ "$p" = "scoring $N t t t" ] || fail "progress of job $job: '$p' ($(state_of "$job"))"
pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job")
nt=$(threads_of "$pid")
[ "$nt" -ge 2 ] || fail "the worker of job $job (threads 2) runs $nt thread"
log "live progress: $(q -c "SELECT done || ' of ' || total || ' pairs, ETA ' || eta || ', figures ' || figures
                             FROM corpq.job_progress WHERE id = $job"); the worker runs $nt threads"
stop_after_chunks "$job" 2
wait_attempt "$job" 2
c=$(chunks_of "$job")
stop_after_chunks "$job" $((c + 2))
[ "$(q -c "SELECT corpq.job_wait($job, '1200 s')")" = succeeded ] || fail "stopped: $(state_of "$job")"
r=$(q -c "SELECT attempts || ' ' || (result ->> 'resumed_from_row') || ' ' || (result ->> 'rows') || ' '
                 || (result ->> 'scored') || ' ' || (result ->> 'threads') FROM corpq.jobs WHERE id = $job")
read -r attempts from rows scored pool <<<"$r"
[ "$attempts" = 3 ] && [ "$from" -ge $(((c + 2) * CHUNK)) ] && [ $((from % CHUNK)) = 0 ] \
	&& [ "$rows" = "$N" ] && [ "$scored" = "$N" ] && [ "$pool" = 2 ] || fail "stopped: result '$r'"
same_rows stopped
[ "$(qa -c "SELECT count(*) FILTER (WHERE who = 'sj_alice') FROM stopped")" = "$N" ] || fail "stopped: rows not written as sj_alice"
log "stopped twice: 3 attempts, the last resumed from row $from; every id once, equal to sent_prob"

# ---- a stop while the query is read (it takes 2 s more): before any chunk ----
job=$(submit early "$OPTS" 'SELECT p.id, p.src, p.tgt FROM sj_pairs p, (SELECT pg_sleep(2)) s ORDER BY p.id')
for _ in $(seq 6000); do
	[ "$(q -c "SELECT phase FROM corpq.job_progress WHERE id = $job")" = reading ] && break
	sleep 0.01
done
sleep 0.5
[ "$(q -c "SELECT phase FROM corpq.job_progress WHERE id = $job")" = reading ] || fail "early: not reading: $(state_of "$job")"
log "stop -m immediate during job $job while it reads its query"
restart_immediate
cluster_ready
[ "$(q -c "SELECT corpq.job_wait($job, '1200 s')")" = succeeded ] || fail "early: $(state_of "$job")"
from=$(q -c "SELECT coalesce(result ->> 'resumed_from_row', 'none') || ' ' || attempts FROM corpq.jobs WHERE id = $job")
[ "$from" = "none 2" ] || fail "early: resumed from row / attempts '$from'"
same_rows early
log "stopped while reading: started again (attempts 2, no chunk to resume from); every id once, equal to sent_prob"

# ---- skip_existing: stopped mid-run, resumes without the ids it wrote ----
job=$(qa -c "SELECT corpq.score_job('sj_m', 'SELECT id, src, tgt FROM sj_pairs', 'growing',
                                    '$OPTS'::jsonb || '{\"skip_existing\": true}')")
stop_after_chunks "$job" 3
[ "$(q -c "SELECT corpq.job_wait($job, '1200 s')")" = succeeded ] || fail "growing: $(state_of "$job")"
r=$(q -c "SELECT attempts || ' ' || (result ->> 'rows') || ' ' || (result ->> 'resumed_from_row') FROM corpq.jobs WHERE id = $job")
[ "${r%% *}" = 2 ] && [ "$(echo "$r" | cut -d' ' -f2)" = "$N" ] || fail "growing: attempts, rows, resumed '$r'"
same_rows growing
log "skip_existing, stopped: attempts, rows, resumed from: $r; every id once, equal to sent_prob"

# ---- cancel: the committed chunks stay ----
job=$(submit cancelled "{\"chunk_rows\": $CHUNK, \"threads\": 1}")
wait_chunks "$job" 2
pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job")
nt=$(threads_of "$pid")
[ "$(qa -c "SELECT corpq.job_cancel($job)")" = running ] || fail "cancel: the job was not running"
[ "$(q -c "SELECT corpq.job_wait($job, '120 s')")" = cancelled ] || fail "cancel: $(state_of "$job")"
done_rows=$(q -c "SELECT coalesce(max(rows_done), 0) FROM corpq.row_job_chunks WHERE job = $job")
[ "$done_rows" -ge $((2 * CHUNK)) ] && [ "$done_rows" -lt "$N" ] || fail "cancel: $done_rows rows committed"
same_rows cancelled "$done_rows"
[ "$nt" = 1 ] || fail "the worker of job $job (threads 1) runs $nt threads"
log "cancelled after $done_rows rows: they stay, equal to sent_prob (its worker ran $nt thread)"

# ---- pg_cron's run: the 100 new rows, once ----
# A run that came during the restarts above may have submitted its job but
# be recorded as failed ("server restarted": its status was still running),
# so wait for a run pg_cron records as succeeded too: the next minute's.
for _ in $(seq 1500); do
	[ "$(q -c "SELECT count(*) FROM corpq.jobs WHERE kind = 'score' AND state = 'succeeded'
	             AND args ->> 'target_name' = 'public.cron_scores'")" -ge 1 ] &&
		[ "$(q -c "SELECT count(*) FROM cron.job_run_details WHERE status = 'succeeded'")" -ge 1 ] && break
	sleep 0.1
done
runs=$(q -c "SELECT count(*) FROM cron.job_run_details WHERE status = 'succeeded'")
cron_jobs=$(q -c "SELECT string_agg(state || ':' || coalesce(result ->> 'rows', '-'), ' ' ORDER BY id) FROM corpq.jobs
                  WHERE kind = 'score' AND args ->> 'target_name' = 'public.cron_scores'")
[ "$runs" -ge 1 ] || fail "pg_cron ran no command in $(($(date +%s) - cron_since)) s: $(q -c "SELECT string_agg(status || ' ' || coalesce(return_message, ''), '; ') FROM cron.job_run_details")"
[ "${cron_jobs%% *}" = succeeded:100 ] || fail "pg_cron's score jobs: $cron_jobs"
same_rows cron_scores 300
qa -c "SELECT cron.unschedule('sj_growing')" >/dev/null
log "pg_cron: $runs run(s), score jobs $cron_jobs; the 100 new rows scored once"
log ok
