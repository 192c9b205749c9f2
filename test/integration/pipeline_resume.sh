#!/usr/bin/env bash
# Pipeline jobs (corpq preloaded), run by ordinary login roles on a generated
# word-translation task with 10% noise and tiny models:
#   progress: while stage 1 trains, corpq.job_progress shows the pipeline's
#             stage ("1/5 identification: training"), the sub-job's units
#             done of total, a rate and an ETA;
#   killed:   the pipeline's worker is killed with SIGKILL (a crash-restart)
#             while stage 3's train sub-job runs: recovery requeues both; the
#             pipeline resumes at stage 3 (stages 1-2 not run again: their
#             rows and tables untouched), waits for the same sub-job, and
#             finishes; no row twice in any table;
#   privileges: a second role's pipeline reads with its rights (no SELECT on
#             the first role's table: stage 1 fails, named) and writes tables
#             it owns, in its schema.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 1500 -o shared_preload_libraries=corpq -o max_worker_processes=16

qa() { psql -X -v ON_ERROR_STOP=1 -Atq -U pl_alice "$@"; }
qb() { psql -X -v ON_ERROR_STOP=1 -Atq -U pl_bob "$@"; }
state_of() { q -c "SELECT state || ' attempts=' || attempts || coalesce(' error=' || error, '') FROM corpq.jobs WHERE id = $1"; }

q -c "CREATE EXTENSION corpq"
q <<SQL
CREATE ROLE pl_alice LOGIN PASSWORD '$PGPASSWORD';
CREATE ROLE pl_bob LOGIN PASSWORD '$PGPASSWORD';
GRANT CREATE ON SCHEMA public TO pl_alice;
CREATE SCHEMA bob AUTHORIZATION pl_bob;
SQL
qa >/dev/null <<SQL
CREATE TABLE pairs AS
SELECT g::bigint AS id,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729 + (g % 13) * k * k) % 30), ' ' ORDER BY k)
          FROM generate_series(1, 3 + g % 5) k) AS src
  FROM generate_series(1, 1000) g;
ALTER TABLE pairs ADD COLUMN tgt text;
UPDATE pairs SET tgt = (SELECT string_agg('v' || ((substr(w, 2)::int * 7 + 3) % 30), ' ' ORDER BY o)
                          FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
UPDATE pairs p SET tgt = q.tgt FROM pairs q WHERE p.id % 10 = 3 AND q.id = (p.id * 37) % 1000 + 1;
SELECT corpq.vocab_build('pl_sv', 'SELECT src FROM pairs');
SELECT corpq.vocab_build('pl_tv', 'SELECT tgt FROM pairs');
SQL

OPTS='{"name": "rj", "src_vocab": "pl_sv", "tgt_vocab": "pl_tv", "model": {"preset": "tiny", "max_positions": 32},
       "train": {"steps": 400, "max_tokens": 1024, "lr": 0.003, "warmup": 20, "seed": 3, "threads": 1,
                 "checkpoint_every": 50},
       "translate": {"batch": 16, "threads": 1, "chunk_rows": 16}}'
job=$(qa -c "SELECT corpq.rejuvenate('SELECT id, src, tgt FROM pairs', NULL, '$OPTS')")

# ---- live progress of stage 1's training ----
p=
for _ in $(seq 6000); do
	p=$(qa -c "SELECT phase || ' | ' || (figures ->> 'stage') || ' ' || (figures ->> 'subjob' IS NOT NULL) || ' '
	                  || (total > 0) || ' ' || (eta > '0 s')
	             FROM corpq.job_progress
	            WHERE id = $job AND phase LIKE '1/5 identification: train%' AND done > 0 AND eta IS NOT NULL")
	[ -n "$p" ] && break
	sleep 0.05
done
[[ "$p" == "1/5 identification: train"*" | 1 true true true" ]] || fail "progress of job $job: '$p' ($(state_of "$job"))"
log "live progress: $(qa -c "SELECT phase || ', ' || done || ' of ' || total || ' ' || coalesce(unit, '') || ', ETA ' || eta
                             || ', figures ' || figures FROM corpq.job_progress WHERE id = $job")"

# ---- kill -9 of the pipeline's worker while stage 3's sub-job runs ----
for _ in $(seq 12000); do
	[ "$(q -c "SELECT count(*) FROM corpq.pipeline_stages WHERE pipeline = 'rj' AND stage = 3 AND subjob IS NOT NULL")" = 1 ] && break
	case "$(q -c "SELECT state FROM corpq.jobs WHERE id = $job")" in
	succeeded | failed | cancelled) fail "job $job ended before stage 3: $(state_of "$job")" ;;
	esac
	sleep 0.05
done
before=$(q -c "SELECT string_agg(stage || ':' || finished, ',' ORDER BY stage) FROM corpq.pipeline_stages
               WHERE pipeline = 'rj' AND finished IS NOT NULL")
sub=$(q -c "SELECT subjob FROM corpq.pipeline_stages WHERE pipeline = 'rj' AND stage = 3")
pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job")
kill -9 "$pid"
log "kill -9 of worker $pid of pipeline job $job while stage 3 waits for sub-job $sub (finished: $before)"
sleep 1
cluster_ready
[ "$(q -c "SELECT corpq.job_wait($job, '1200 s')")" = succeeded ] || fail "killed: $(state_of "$job")"
[ "$(q -c "SELECT attempts FROM corpq.jobs WHERE id = $job")" = 2 ] || fail "killed: not 2 attempts: $(state_of "$job")"
after=$(q -c "SELECT string_agg(stage || ':' || finished, ',' ORDER BY stage) FROM corpq.pipeline_stages
              WHERE pipeline = 'rj' AND stage <= 2")
[ "$after" = "$before" ] || fail "stages 1-2 ran again: before $before, after $after"
[ "$(q -c "SELECT subjob FROM corpq.pipeline_stages WHERE pipeline = 'rj' AND stage = 3")" = "$sub" ] \
	|| fail "stage 3 submitted another sub-job"
[ "$(q -c "SELECT count(*) FROM corpq.pipeline_stages WHERE pipeline = 'rj' AND finished IS NOT NULL")" = 5 ] \
	|| fail "not every stage finished"
c=$(qa -c "SELECT (SELECT count(*) FROM rj_pairs) || ' ' ||
                  (SELECT count(*) - count(DISTINCT id) FROM rj_translations) || ' ' ||
                  ((SELECT count(*) FROM rj_rejuvenated) = (SELECT count(*) FROM rj_pairs WHERE inactive)) || ' ' ||
                  (SELECT count(*) FROM rj_bins WHERE pairs > 0 OR pairs = 0)")
[[ "$c" == "1000 0 true "* ]] || fail "tables after resume: $c"
log "resumed: attempts 2, stages 1-2 untouched, stage 3 waited for sub-job $sub ($(state_of "$sub")), no row twice"
log "stage times: $(q -c "SELECT string_agg(stage || ' ' || name || ' ' || round(extract(epoch FROM finished - started)::numeric, 1) || ' s', '; ' ORDER BY stage) FROM corpq.pipeline_stages WHERE pipeline = 'rj'")"

# ---- privileges: bob's pipelines read and write as bob ----
GIVEN='{"identifier": "rj_identifier", "rejuvenator": "rj_rejuvenator", "train_final": false, "translate": {"threads": 1}}'
bjob=$(qb -c "SET search_path = bob; SELECT corpq.rejuvenate('SELECT id, src, tgt FROM public.pairs', NULL,
                                                             '$GIVEN'::jsonb || '{\"name\": \"bob_denied\"}')")
[ "$(q -c "SELECT corpq.job_wait($bjob, '300 s')")" = failed ] || fail "bob read alice's table: $(state_of "$bjob")"
err=$(q -c "SELECT error FROM corpq.jobs WHERE id = $bjob")
[[ "$err" == 'pipeline "bob_denied" stage 1 (identification) failed: permission denied for table pairs' ]] \
	|| fail "bob's error: $err"
qb -c "CREATE TABLE bob.mine AS SELECT * FROM (VALUES (1::bigint, 'w1 w2', 'v10 v17'), (2, 'w3', 'v24')) v(id, src, tgt)"
bjob=$(qb -c "SET search_path = bob; SELECT corpq.rejuvenate('SELECT id, src, tgt FROM mine', NULL,
                                                             '$GIVEN'::jsonb || '{\"name\": \"bob_own\"}')")
[ "$(q -c "SELECT corpq.job_wait($bjob, '300 s')")" = succeeded ] || fail "bob's own: $(state_of "$bjob")"
owners=$(q -c "SELECT string_agg(tablename || '=' || tableowner, ' ' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'bob'")
# (a pipeline's tables are created at submission, the failed one's too)
[ "$owners" = "bob_denied_bins=pl_bob bob_denied_pairs=pl_bob bob_denied_rejuvenated=pl_bob bob_denied_translations=pl_bob bob_own_bins=pl_bob bob_own_pairs=pl_bob bob_own_rejuvenated=pl_bob bob_own_translations=pl_bob mine=pl_bob" ] \
	|| fail "bob's tables: $owners"
[ "$(qa -c "SELECT count(*) FROM corpq.pipeline_stages WHERE pipeline LIKE 'bob%'")" = 0 ] || fail "alice sees bob's stages"
log "privileges: stage 1 failed reading alice's table as bob; bob's tables are bob's, in schema bob; alice sees none of his stages"
log ok
