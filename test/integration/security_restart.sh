#!/usr/bin/env bash
# Security across restarts (issue 18), corpq preloaded, two ordinary login
# roles: alice (the victim) and bob (the attacker).  One restart -m immediate
# settles everything planted before it:
#   1. forged job rows: bob cannot insert one.  A row planted by a superuser
#      (a restored dump, a hand edit) with the superuser as login role, bob as
#      owner and a corpus query that makes bob superuser is refused by its
#      worker after the restart; bob's own job with that query fails harmlessly.
#   2. a hostile database search_path: bob owns a database whose search_path
#      puts his schema first, where now(), pg_postmaster_start_time(),
#      pg_backend_pid(), = and pg_stat_activity record the call and make him
#      superuser when a superuser calls them.  His job there runs across the
#      restart (recovery runs as the bootstrap superuser) and a superuser
#      waits for it in that database: none of them is called.
#   3. poisoned resume: bob cannot insert checkpoints.  Under alice's job A1,
#      rows with bob's model and weights (another architecture) are ignored:
#      A1 resumes from its own checkpoint, trains on, and every version of her
#      model keeps her architecture.  A2's own checkpoint with bob's state in
#      it fails A2 instead of being used; A3's cursor {"prob": [0, 0]} fails A3
#      with data_corrupted, and the server does not crash.
# After each part: bob is not superuser.  Last, DROP EXTENSION during a job
# does not crash the server.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	CORPQ_CLUSTER_MODE=preload corpq_cluster_run -t 900 \
		-o shared_preload_libraries=corpq -o max_worker_processes=20
	log ok
	exit 0
fi

# q (lib.sh) runs as the superuser
qa() { psql -X -v ON_ERROR_STOP=1 -Atq -U alice "$@"; }
qb() { psql -X -v ON_ERROR_STOP=1 -Atq -U bob "$@"; }
not_super() {
	[ "$(q -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'bob'")" = f ] || fail "bob is superuser ($1)"
}
# bob_denied SQL...: bob's statement fails with permission denied
bob_denied() {
	local out
	if out=$(qb "$@" 2>&1); then fail "bob could run: $*"; fi
	case "$out" in *"permission denied"*) ;; *) fail "bob: unexpected error: $out" ;; esac
}
state_of() { q "${2:--dpostgres}" -c "SELECT state || ' attempts=' || attempts || coalesce(' error=' || error, '') FROM corpq.jobs WHERE id = $1"; }
wait_final() {
	local job=$1 db=${2:-postgres} s
	for _ in $(seq 3000); do
		s=$(q -d "$db" -c "SELECT state FROM corpq.jobs WHERE id = $job")
		case "$s" in succeeded|failed|cancelled) echo "$s"; return 0 ;; esac
		sleep 0.1
	done
	fail "job $job in $db never ended: $(state_of "$job" "-d$db")"
}

su=$(q -c "SELECT current_user")
q <<SQL
CREATE EXTENSION corpq;
CREATE ROLE alice LOGIN PASSWORD '$PGPASSWORD';
CREATE ROLE bob LOGIN PASSWORD '$PGPASSWORD';
CREATE SCHEMA bob AUTHORIZATION bob;
CREATE TABLE pairs AS
SELECT g AS id, (ARRAY['news', 'web'])[1 + g % 2] AS domain,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729) % 30), ' ' ORDER BY k)
          FROM generate_series(1, 3 + g % 5) k) AS src
  FROM generate_series(1, 600) g;
ALTER TABLE pairs ADD COLUMN tgt text;
UPDATE pairs SET tgt = (SELECT string_agg('v' || ((substr(w, 2)::int * 7 + 3) % 30), ' ' ORDER BY o)
                          FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
GRANT SELECT ON pairs TO alice, bob;
SQL
# part 4's jobs (run now, while slots are free; orphaned before the restart)
q -c "CREATE ROLE carol LOGIN PASSWORD '$PGPASSWORD'" -c "CREATE ROLE dave LOGIN PASSWORD '$PGPASSWORD'" \
	-c "CREATE TABLE cd_pairs AS SELECT 'a b'::text AS src, 'x y'::text AS tgt FROM generate_series(1, 50)" \
	-c "GRANT SELECT ON cd_pairs TO carol, dave"
carol_job=$(psql -X -Atq -U carol -c "SELECT corpq.lexicon_train('carol_lex', 'SELECT src, tgt FROM public.cd_pairs', '{\"iterations\": 1}')")
dave_job=$(psql -X -Atq -U dave -c "SELECT corpq.lexicon_train('dave_lex', 'SELECT src, tgt FROM public.cd_pairs', '{\"iterations\": 1}')")
wait_final "$carol_job" >/dev/null
wait_final "$dave_job" >/dev/null
qa >/dev/null <<'SQL'
SELECT corpq.vocab_build('a_src', 'SELECT src FROM pairs');
SELECT corpq.vocab_build('a_tgt', 'SELECT tgt FROM pairs');
SELECT corpq.model_create('alice_m', '{"preset": "tiny", "d_model": 8, "heads": 2, "ffn_dim": 16,
                          "encoder_layers": 1, "decoder_layers": 1, "max_positions": 16}', 'a_src', 'a_tgt', 1);
SQL
qb -c "SELECT corpq.model_create('bob_m', '{\"preset\": \"tiny\", \"d_model\": 16, \"heads\": 2, \"ffn_dim\": 32,
       \"encoder_layers\": 1, \"decoder_layers\": 1, \"max_positions\": 16}', 'a_src', 'a_tgt', 2)" >/dev/null

# ---- the training jobs part 3 will poison, run to completion first ----
train_opts() { echo "{\"steps\": $1, \"checkpoint_every\": 20, \"keep_checkpoints\": 100, \"max_tokens\": 128, \"warmup\": 5, \"seed\": 3${2:-}}"; }
bob_job=$(qb -c "SELECT corpq.train('bob_m', 'SELECT src, tgt FROM pairs ORDER BY id', NULL, '$(train_opts 20)')")
a1=$(qa -c "SELECT corpq.train('alice_m', 'SELECT src, tgt FROM pairs ORDER BY id', NULL, '$(train_opts 60)')")
a2=$(qa -c "SELECT corpq.train('alice_m', 'SELECT src, tgt FROM pairs ORDER BY id', NULL, '$(train_opts 20)')")
a3=$(qa -c "SELECT corpq.train('alice_m', 'SELECT src, tgt, domain FROM pairs ORDER BY id', NULL,
                               '$(train_opts 40 ', "strategy": "temperature", "tau": 2')')")
for j in "$bob_job" "$a1" "$a2" "$a3"; do
	[ "$(wait_final "$j")" = succeeded ] || fail "training job $j: $(state_of "$j")"
done
alice_id=$(q -c "SELECT id FROM corpq.model_catalog WHERE name = 'alice_m'")
alice_bytes=$(q -c "SELECT bytes FROM corpq.model_versions WHERE model = $alice_id AND version = 1")
log "trained: bob $bob_job, alice $a1 (60 steps), $a2 (20), $a3 (40, temperature)"

# ---- part 1: forged job rows ----
qb <<'SQL'
CREATE FUNCTION bob.escalate() RETURNS TABLE (src text, tgt text) LANGUAGE plpgsql AS $$
BEGIN
    RESET ROLE;
    ALTER ROLE bob SUPERUSER;
    RETURN QUERY SELECT 'a b'::text, 'c d'::text FROM generate_series(1, 50);
END
$$;
SQL
forged_args='{"name": "forged", "corpus": "SELECT * FROM bob.escalate()", "options": {"iterations": 2}}'
bob_denied -c "INSERT INTO corpq.jobs (kind, owner, session_role, state, args)
               VALUES ('lexicon_train', 'bob', '$su', 'running', '$forged_args')"
bob_denied -c "UPDATE corpq.jobs SET session_role = '$su'"
own=$(qb -c "SELECT corpq.lexicon_train('bob_own', 'SELECT * FROM bob.escalate()')")
[ "$(wait_final "$own")" = failed ] || fail "bob's own escalating job: $(state_of "$own")"
not_super "his own job"
forged=$(q -c "INSERT INTO corpq.jobs (kind, owner, session_role, state, args, started, worker_pid, server_start)
               VALUES ('lexicon_train', 'bob', '$su', 'running', '$forged_args', now(), 0, '2000-01-01')
               RETURNING id")
log "part 1: bob cannot forge rows; his own job failed: $(state_of "$own"); planted forged job $forged"

# ---- part 2: a hostile search_path in bob's database ----
q -c "CREATE DATABASE bobdb OWNER bob"
q -d bobdb -c "CREATE EXTENSION corpq"
qb -d bobdb <<'SQL'
CREATE SCHEMA bob;
CREATE TABLE bob.calls (what text, by_role name DEFAULT current_user);
GRANT INSERT ON bob.calls TO PUBLIC;
CREATE FUNCTION bob.trap(what text) RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO bob.calls (what) VALUES (what);
    IF (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user) THEN
        EXECUTE 'ALTER ROLE bob SUPERUSER';
    END IF;
END
$$;
CREATE FUNCTION bob.now() RETURNS timestamptz LANGUAGE plpgsql SET search_path = pg_catalog AS
$$BEGIN PERFORM bob.trap('now'); RETURN pg_catalog.now(); END$$;
CREATE FUNCTION bob.pg_postmaster_start_time() RETURNS timestamptz LANGUAGE plpgsql SET search_path = pg_catalog AS
$$BEGIN PERFORM bob.trap('pg_postmaster_start_time'); RETURN pg_catalog.pg_postmaster_start_time(); END$$;
CREATE FUNCTION bob.pg_backend_pid() RETURNS integer LANGUAGE plpgsql SET search_path = pg_catalog AS
$$BEGIN PERFORM bob.trap('pg_backend_pid'); RETURN pg_catalog.pg_backend_pid(); END$$;
CREATE FUNCTION bob.eq_text(text, text) RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog AS
$$BEGIN PERFORM bob.trap('text ='); RETURN pg_catalog.texteq($1, $2); END$$;
CREATE FUNCTION bob.eq_int8(bigint, bigint) RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog AS
$$BEGIN PERFORM bob.trap('bigint ='); RETURN pg_catalog.int8eq($1, $2); END$$;
CREATE OPERATOR bob.= (LEFTARG = text, RIGHTARG = text, FUNCTION = bob.eq_text);
CREATE OPERATOR bob.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = bob.eq_int8);
CREATE VIEW bob.pg_stat_activity AS
    SELECT a.pid, a.backend_type FROM pg_catalog.pg_stat_activity a, LATERAL bob.trap('pg_stat_activity') t;
ALTER DATABASE bobdb SET search_path = bob, pg_catalog;
CREATE TABLE bob.bitext AS SELECT 'a b c'::text AS src, 'x y z'::text AS tgt FROM generate_series(1, 800);
SQL
# the traps are reachable: an unqualified call in bobdb lands in them
qb -d bobdb -c "SELECT now() IS NOT NULL" >/dev/null
[ "$(qb -d bobdb -c "SELECT count(*) FROM bob.calls WHERE what = 'now'")" = 1 ] || fail "the trap is not reached"
qb -d bobdb -c "DELETE FROM bob.calls"
# a job that reads for about 8 s, running when the server restarts
bobdb_job=$(qb -d bobdb -c "SELECT corpq.lexicon_train('slow', 'SELECT src, tgt FROM bob.bitext
                                                                WHERE pg_catalog.pg_sleep(0.01) IS NOT NULL')")
for _ in $(seq 300); do
	[ "$(q -d bobdb -c "SELECT state FROM corpq.jobs WHERE id = $bobdb_job")" = running ] && break
	sleep 0.1
done
[ "$(q -d bobdb -c "SELECT state FROM corpq.jobs WHERE id = $bobdb_job")" = running ] || fail "bobdb job did not start"

# ---- part 3: poisoned resume ----
bob_denied -c "INSERT INTO corpq.train_checkpoints (job, step, model, version, state, cursor, owner)
               SELECT $a1, 1000000, model, version, state, cursor, 'alice' FROM corpq.train_checkpoints"
bob_denied -c "INSERT INTO corpq.train_log (job, step, epoch, lr, tokens, owner) VALUES ($a1, 61, 0, 0, 0, 'alice')"
q <<SQL
-- A1: rows it did not write (bob's model and state; alice's model with a
-- version it did not write; its own version under another owner), newer than
-- its own checkpoint at step 60; then it is orphaned with 120 steps to go
INSERT INTO corpq.train_checkpoints (job, step, model, version, state, cursor, owner)
SELECT $a1, 1000000, b.model, b.version, b.state, b.cursor, 'alice'
  FROM corpq.train_checkpoints b WHERE b.job = $bob_job AND b.step = 20;
INSERT INTO corpq.train_checkpoints (job, step, model, version, state, cursor, owner)
SELECT $a1, 1000001, $alice_id, 1, b.state, b.cursor, 'alice'
  FROM corpq.train_checkpoints b WHERE b.job = $bob_job AND b.step = 20;
INSERT INTO corpq.train_checkpoints (job, step, model, version, state, cursor, owner)
SELECT $a1, 1000002, a.model, a.version, b.state, b.cursor, 'bob'
  FROM corpq.train_checkpoints a, corpq.train_checkpoints b
 WHERE a.job = $a1 AND a.step = 60 AND b.job = $bob_job AND b.step = 20;
UPDATE corpq.jobs SET args = jsonb_set(args, '{options,steps}', '120') WHERE id = $a1;
-- A2: its own checkpoint row (step 20) holding bob's state of step 20
UPDATE corpq.train_checkpoints SET state = (SELECT b.state FROM corpq.train_checkpoints b
                                             WHERE b.job = $bob_job AND b.step = 20)
 WHERE job = $a2 AND step = 20;
-- A3: its last checkpoint's sampler distribution zeroed
UPDATE corpq.train_checkpoints SET cursor = jsonb_set(cursor, '{prob}', '[0, 0]')
 WHERE job = $a3 AND step = 40;
-- orphaned, as if the server had stopped during them
UPDATE corpq.jobs SET state = 'running', finished = NULL, result = NULL, worker_pid = 0,
                      server_start = '2000-01-01', attempts = 1
 WHERE id IN ($a1, $a2, $a3);
SQL
log "part 3: bob cannot plant checkpoints or log rows; planted rows under $a1, $a2, $a3"

# ---- part 4: jobs of a dropped role and of a role that can no longer log in ----
# (issue 31) their workers would die at connection and the jobs stay queued
# for ever, holding corpq.max_jobs slots: recovery must fail them, saying why
q <<SQL
-- orphaned, as if the server had stopped during them
UPDATE corpq.jobs SET state = 'running', finished = NULL, result = NULL, worker_pid = 0,
                      server_start = '2000-01-01', attempts = 1
 WHERE id IN ($carol_job, $dave_job);
REVOKE ALL ON cd_pairs FROM carol, dave;
-- (owning corpq objects locks the role: the DBA unlocks it on purpose)
REVOKE ALL ON corpq.object_owners FROM carol;
DROP ROLE carol;
ALTER ROLE dave NOLOGIN;
SQL
log "part 4: carol (dropped) job $carol_job, dave (NOLOGIN) job $dave_job orphaned"

# ---- the restart ----
start1=$(q -c "SELECT pg_postmaster_start_time()")
log "restarting (immediate) with bobdb job $bobdb_job running"
pg_ctlcluster "$PGVERSION" regress stop -m immediate
# pg_ctlcluster may still see the old postmaster for a moment
for _ in $(seq 50); do
	pg_ctlcluster "$PGVERSION" regress start 2>/dev/null && break
	sleep 0.2
done
cluster_ready
start2=$(q -c "SELECT pg_postmaster_start_time()")
[ "$start2" != "$start1" ] || fail "the server did not restart"

# part 4: both jobs failed with the reason, none stays queued
for j in "$carol_job" "$dave_job"; do
	[ "$(wait_final "$j")" = failed ] || fail "job $j: $(state_of "$j")"
done
case "$(state_of "$carol_job")" in *"role was dropped"*) ;; *) fail "carol's job: $(state_of "$carol_job")" ;; esac
case "$(state_of "$dave_job")" in *"can no longer log in"*) ;; *) fail "dave's job: $(state_of "$dave_job")" ;; esac
log "part 4: $(state_of "$carol_job"); $(state_of "$dave_job")"

# part 1: the forged job is refused by its worker, bob stays ordinary
[ "$(wait_final "$forged")" = failed ] || fail "forged job: $(state_of "$forged")"
case "$(state_of "$forged")" in *"refused: a superuser session"*) ;; *) fail "forged job: $(state_of "$forged")" ;; esac
not_super "forged job after the restart"
[ "$(q -c "SELECT count(*) FROM corpq.lexicons WHERE name = 'forged'")" = 0 ] || fail "the forged job wrote a lexicon"
log "part 1: forged job $forged: $(state_of "$forged")"

# part 2: bob's job ran again and succeeded; no trap was called by anyone
[ "$(q -d bobdb -c "SHOW search_path")" = "bob, pg_catalog" ] || fail "bobdb's search_path is not bob's"
[ "$(q -d bobdb -c "SELECT corpq.job_wait($bobdb_job, '300 s')")" = succeeded ] || fail "bobdb job: $(state_of "$bobdb_job" -dbobdb)"
[ "$(q -d bobdb -c "SELECT attempts FROM corpq.jobs WHERE id = $bobdb_job")" = 2 ] || fail "bobdb job: $(state_of "$bobdb_job" -dbobdb)"
q -d bobdb -c "SELECT corpq.job_cancel($bobdb_job), corpq.align('slow', 'a b', 'x y') IS NOT NULL" >/dev/null
calls=$(q -d bobdb -c "SELECT coalesce(string_agg(what || ' by ' || by_role, ', '), '') FROM bob.calls")
[ -z "$calls" ] || fail "corpq called bob's objects: $calls"
not_super "recovery and job_wait in bobdb"
log "part 2: bobdb job $bobdb_job: $(state_of "$bobdb_job" -dbobdb); no call into bob's schema"

# part 3: A1 resumed from its own step 60, trained to 120, alice's architecture only
[ "$(wait_final "$a1")" = succeeded ] || fail "A1: $(state_of "$a1")"
[ "$(q -c "SELECT result ->> 'resumed_from_step' FROM corpq.jobs WHERE id = $a1")" = 60 ] ||
	fail "A1 did not resume from its own checkpoint: $(q -c "SELECT result FROM corpq.jobs WHERE id = $a1")"
[ "$(q -c "SELECT (result ->> 'steps') || ' ' || attempts FROM corpq.jobs WHERE id = $a1")" = "120 2" ] ||
	fail "A1: $(q -c "SELECT result FROM corpq.jobs WHERE id = $a1")"
[ "$(q -c "SELECT count(*) || ' ' || max(step) FROM corpq.train_log WHERE job = $a1")" = "120 120" ] ||
	fail "A1's log: $(q -c "SELECT count(*), max(step) FROM corpq.train_log WHERE job = $a1")"
[ "$(q -c "SELECT count(*) FROM corpq.model_versions WHERE model = $alice_id AND bytes <> $alice_bytes")" = 0 ] ||
	fail "alice's model has versions of another architecture"
for v in $(q -c "SELECT version FROM corpq.model_versions WHERE model = $alice_id ORDER BY version"); do
	q -c "SELECT corpq.sent_prob('alice_m@$v'::corpq.pinned_model, 'w1 w2', 'v1 v2') > 0" >/dev/null ||
		fail "alice_m@$v does not load"
done
log "part 3: A1 $(state_of "$a1"), resumed from its step 60 to 120; $(q -c "SELECT count(*) FROM corpq.model_versions WHERE model = $alice_id") versions, all ${alice_bytes} bytes"
# A2 refused bob's state in its own row; A3 refused the zeroed distribution
[ "$(wait_final "$a2")" = failed ] || fail "A2: $(state_of "$a2")"
case "$(state_of "$a2")" in *"does not fit model"*) ;; *) fail "A2: $(state_of "$a2")" ;; esac
[ "$(wait_final "$a3")" = failed ] || fail "A3: $(state_of "$a3")"
case "$(state_of "$a3")" in *"invalid cursor"*) ;; *) fail "A3: $(state_of "$a3")" ;; esac
[ "$(q -c "SELECT pg_postmaster_start_time()")" = "$start2" ] || fail "the server crashed while resuming"
[ "$(q -c "SELECT count(*) FROM corpq.model_versions WHERE model = $alice_id AND bytes <> $alice_bytes")" = 0 ] ||
	fail "alice's model has versions of another architecture"
log "part 3: A2 $(state_of "$a2")"
log "part 3: A3 $(state_of "$a3")"
# DROP EXTENSION during a job: the job fails, the server does not crash
late=$(qb -d bobdb -c "SELECT corpq.lexicon_train('dropped', 'SELECT src, tgt FROM bob.bitext
                                                             WHERE pg_catalog.pg_sleep(0.005) IS NOT NULL')")
for _ in $(seq 300); do
	[ "$(q -d bobdb -c "SELECT state FROM corpq.jobs WHERE id = $late")" = running ] && break
	sleep 0.1
done
q -d bobdb -c "DROP EXTENSION corpq CASCADE" >/dev/null 2>&1
for _ in $(seq 600); do
	# (asked in postgres: bobdb's search_path would find bob's traps)
	[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'corpq job'")" = 0 ] && break
	sleep 0.1
done
[ "$(q -c "SELECT pg_postmaster_start_time()")" = "$start2" ] || fail "the server crashed after DROP EXTENSION"
log "DROP EXTENSION during job $late: its worker ended, no crash"
not_super "the end"
exit 0
