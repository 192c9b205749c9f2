#!/usr/bin/env bash
# An upgrade from the last release with data: the release (the last line of
# extension/sql/updates/releases) is built from its commit and installed;
# under it a database gets a BPE model, vocabularies, a trained model, its
# int8 version (model_quantize), an imported model, a lexicon, a CAV column,
# a view written by filter_predicate (which pins a model version), a finished
# job and a queued one; then this tree's build is installed and ALTER
# EXTENSION corpq UPDATE run, as a DBA would (docs/install.md).  Every object
# must give the same bits as before (sent_prob, translate, dual_xent through
# the view's rows, align, the CAVs, segmentation), the queued job must run
# under the new version and translate as translate() did before, and the
# updated catalog must equal a fresh install's (test/catalog/describe.sql).
#
# The queued job is honestly queued: it was submitted while its database
# accepted no connections, so its worker could not start (as when a server
# stops before a job starts); the job waits in corpq.jobs until a server start
# finds it.  Needs this tree installed (make install) and root; the installed
# files are put back as they were whatever happens.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$CORPQ_ROOT/test/releases.sh"

if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	[ "$(id -u)" = 0 ] || fail "needs root: it installs the previous release into PostgreSQL"
	installed=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" "$CORPQ_EXTDIR/corpq.control" 2>/dev/null || true)
	[ "$installed" = "$CORPQ_VERSION" ] && [ -f "$CORPQ_EXTDIR/corpq--$CORPQ_VERSION.sql" ] \
		|| fail "corpq $CORPQ_VERSION is not installed (the installed corpq.control says \"$installed\"): run make install first"
	read -r rel commit < <(release_list | tail -n 1)
	work=$(mktemp -d)
	export CORPQ_UPGRADE_WORK=$work CORPQ_UPGRADE_RELEASE=$rel
	trap 'extdir_restore "$work/current"; rm -rf "$work"' EXIT
	release_tree "$commit" "$work/old"
	start=$SECONDS
	make -C "$work/old" -s -j"$(nproc)" > "$work/old-build.log" 2>&1 \
		|| { tail -n 30 "$work/old-build.log" >&2; fail "release $rel (commit $commit) does not build"; }
	log "release $rel built from commit ${commit:0:12} in $((SECONDS - start)) s"
	# this tree's installed files, to install again later (and at the end)
	extdir_snapshot "$work/current"
	make -s uninstall >/dev/null
	make -C "$work/old" -s install >/dev/null || fail "release $rel does not install"
	rc=0
	corpq_cluster_run -t 900 -o shared_preload_libraries=corpq -o max_worker_processes=16 || rc=$?
	exit $rc
fi

work=$CORPQ_UPGRADE_WORK
rel=$CORPQ_UPGRADE_RELEASE
# The restarted server inherits no descriptor of ours beyond stdio: were it
# left running (this script killed), it must not hold a lock its caller took.
start_server() {
	local fd
	for fd in $(ls /proc/$BASHPID/fd); do
		[ "$fd" -gt 2 ] && eval "exec $fd>&-"
	done
	pg_ctlcluster "$PGVERSION" regress start 2>/dev/null
}
restart() {
	pg_ctlcluster "$PGVERSION" regress stop
	for _ in $(seq 50); do
		(start_server) && { PGDATABASE=postgres cluster_ready; return 0; }
		sleep 0.2
	done
	fail "the server did not start again"
}

createdb upg
export PGDATABASE=upg
q -c "CREATE EXTENSION corpq"
[ "$(q -c "SELECT extversion FROM pg_extension WHERE extname = 'corpq'")" = "$rel" ] || fail "the release did not install as $rel"
log "under $rel: building the data"
# A generated word-translation task (test/sql/int8.sql's): deterministic.
q > /dev/null <<'SQL'
SET client_min_messages = warning;
CREATE FUNCTION pg_temp.must(ok boolean, what text) RETURNS void LANGUAGE plpgsql
AS $$ BEGIN IF ok IS NOT TRUE THEN RAISE EXCEPTION 'upgrade: %', what; END IF; END $$;
CREATE TABLE pairs AS
SELECT g AS id,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729 + (g % 13) * k * k) % 40), ' ' ORDER BY k)
          FROM generate_series(1, 3 + g % 6) k) AS src
  FROM generate_series(1, 1200) g;
ALTER TABLE pairs ADD COLUMN tgt text;
UPDATE pairs SET tgt = (SELECT string_agg('v' || ((substr(w, 2)::int * 7 + 3) % 40), ' ' ORDER BY o)
                          FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
CREATE VIEW dev AS SELECT id, src, tgt FROM pairs WHERE id % 20 = 7;
SELECT corpq.bpe_learn('u_bpe', 'SELECT src FROM pairs UNION ALL SELECT tgt FROM pairs', 30);
SELECT corpq.vocab_build('u_src', 'SELECT src FROM pairs', 'u_bpe'),
       corpq.vocab_build('u_tgt', 'SELECT tgt FROM pairs', 'u_bpe');
SELECT corpq.model_create('u_m', '{"preset": "tiny", "max_positions": 32}', 'u_src', 'u_tgt', 1);
SELECT corpq.train('u_m', 'SELECT src, tgt FROM pairs WHERE id % 20 <> 7 ORDER BY id', NULL,
                   '{"steps": 60, "max_tokens": 1024, "lr": 0.003, "warmup": 20, "seed": 3,
                     "checkpoint_every": 60, "threads": 1}') AS job \gset
SELECT pg_temp.must(corpq.job_wait(:job, '600 s') = 'succeeded', 'training under the release failed');
SELECT corpq.lexicon_train('u_lex', 'SELECT src, tgt FROM pairs', '{"iterations": 3}') AS job \gset
SELECT pg_temp.must(corpq.job_wait(:job, '300 s') = 'succeeded', 'the lexicon job under the release failed');
SELECT max(version) AS fv FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model
 WHERE c.name = 'u_m' \gset
-- the int8 version, an imported copy of the float one, a backward model
SELECT corpq.model_quantize('u_m');
SELECT corpq.model_import('u_imp', corpq.model_export('u_m@' || :fv), 'u_src', 'u_tgt');
SELECT corpq.model_create('u_back', '{"preset": "tiny", "max_positions": 32}', 'u_tgt', 'u_src', 2);
CREATE TABLE cavs AS SELECT id % 3 AS part, corpq.cav_accumulate(src, tgt, 8) AS c FROM pairs GROUP BY 1;
-- a view of the pairs dual_xent keeps, the models pinned by filter_predicate
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY corpq.dual_xent('u_m', 'u_back', src, tgt)) AS thr FROM dev \gset
SELECT corpq.filter_predicate(format('[{"name": "dual_xent", "args": {"forward": "u_m", "backward": "u_back"}, "threshold": %s}]',
                                     :'thr')::jsonb) AS pred \gset
SELECT format('CREATE VIEW clean AS SELECT id, src, tgt FROM dev WHERE %s', :'pred') \gexec
CREATE TABLE hyps (id bigint, hyp text, score float8);
SQL
q -c "SELECT pg_get_viewdef('clean')" | grep -q "u_m@" || fail "filter_predicate did not pin the model: $(q -c "SELECT pg_get_viewdef('clean')")"
kept=$(q -c "SELECT count(*) || ' of ' || (SELECT count(*) FROM dev) FROM clean")
log "the view keeps $kept dev pairs"

# What must give the same bits after the upgrade.  (The names resolve as
# before: u_m is its int8 version, the latest.)
probe() {
	q -v fv="$(q -c "SELECT max(version) - 1 FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model WHERE c.name = 'u_m'")" <<'SQL'
SELECT c.name, v.version, v.source, v.precision, v.bytes, v.checksum
  FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model ORDER BY 1, 2;
SELECT id, corpq.sent_prob('u_m@' || :fv, src, tgt), corpq.sent_prob('u_m', src, tgt),
       corpq.sent_prob('u_imp', src, tgt), corpq.dual_xent('u_m', 'u_back', src, tgt)
  FROM dev ORDER BY id;
SELECT id, corpq.translate('u_m@' || :fv, src), corpq.translate('u_m', src) FROM dev ORDER BY id;
SELECT 'view', count(*), md5(string_agg(id || ' ' || src || ' ' || tgt, '|' ORDER BY id)) FROM clean;
SELECT id, corpq.align('u_lex', src, tgt), corpq.align_score('u_lex', src, tgt) FROM dev ORDER BY id;
SELECT 'translation table', count(*), md5(string_agg(concat_ws(' ', direction, src, tgt, prob), '|'
                                                     ORDER BY direction, src, tgt))
  FROM corpq.lexicon_translations;
SELECT part, md5(corpq.cav_to_bytea(c)), (SELECT string_agg(token || ' ' || cosine, ', ' ORDER BY cosine DESC, token)
                                           FROM corpq.cav_similar(c, 'v3', 5)) FROM cavs ORDER BY part;
SELECT id, corpq.bpe_apply('u_bpe', src), corpq.vocab_encode('u_src', src), corpq.vocab_encode('u_tgt', tgt)
  FROM dev ORDER BY id;
SELECT id, kind, state FROM corpq.jobs WHERE state <> 'queued' ORDER BY id;
SQL
}
probe > "$work/before"
[ "$(wc -l < "$work/before")" -gt 200 ] || fail "the probe found too little: $(head "$work/before")"
# the translations the queued job must write
q -c "SELECT id, corpq.translate('u_m', src) FROM dev ORDER BY id" > "$work/translations"

# The queued job: submitted while its database accepts no connections, its
# worker cannot connect and exits; the row stays queued.  The session that
# submits it connects first (a database cannot refuse connections to the
# session that says so); nobody can connect to look until the upgrade.
mkfifo "$work/in"
q -F ' ' < "$work/in" > "$work/queued" &
session=$!
exec 9> "$work/in"
echo "SELECT 'connected';" >&9
for _ in $(seq 100); do grep -q connected "$work/queued" && break; sleep 0.1; done
q -d postgres -c "ALTER DATABASE upg ALLOW_CONNECTIONS false"
cat >&9 <<'SQL'
SET client_min_messages = warning;
SELECT corpq.translate_job('u_m', 'SELECT id, src FROM dev ORDER BY id', 'hyps', '{"threads": 1}') AS job \gset
SELECT pg_sleep(2) \g /dev/null
SELECT :job, (SELECT state FROM corpq.jobs WHERE id = :job),
       (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'corpq job');
SQL
exec 9>&-
wait "$session" || fail "the submitting session failed: $(cat "$work/queued")"
read -r queued state workers < <(tail -n 1 "$work/queued")
[ "$state $workers" = "queued 0" ] || fail "job $queued should be queued with no worker: $state, $workers workers"
log "job $queued queued (its worker could not connect); $(grep -c '|succeeded$' "$work/before") jobs finished"

# The upgrade: this tree's files, a restart (the new library), the update.
extdir_restore "$work/current"
restart
[ "$(q -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'corpq job'")" = 0 ] \
	|| fail "a job started while its database accepted no connections"
q -d postgres -c "ALTER DATABASE upg ALLOW_CONNECTIONS true"
q -c "ALTER EXTENSION corpq UPDATE"
[ "$(q -c "SELECT extversion FROM pg_extension WHERE extname = 'corpq'")" = "$CORPQ_VERSION" ] \
	|| fail "ALTER EXTENSION corpq UPDATE did not reach $CORPQ_VERSION"
[ "$(q -c "SELECT extension || ' ' || library FROM corpq.version()")" = "$CORPQ_VERSION $CORPQ_VERSION" ] \
	|| fail "corpq.version() after the update: $(q -c "SELECT corpq.version()")"
log "updated $rel -> $CORPQ_VERSION"
[ "$(q -c "SELECT state FROM corpq.jobs WHERE id = $queued")" = queued ] || fail "job $queued left the queue too early"
probe > "$work/after"
diff -u --label "under $rel" --label "after the update" "$work/before" "$work/after" >&2 \
	|| fail "objects give different results after the upgrade (diff above)"
log "the same bits: $(wc -l < "$work/after") lines (model versions, sent_prob, dual_xent, translate, the view, align, the lexicon's table, CAVs, segmentation, jobs)"

# The next server start finds the queued job and runs it, under the new version.
restart
[ "$(q -c "SELECT corpq.job_wait($queued, '300 s')")" = succeeded ] \
	|| fail "the queued job did not run: $(q -c "SELECT state || ' ' || coalesce(error, '') FROM corpq.jobs WHERE id = $queued")"
q -c "SELECT id, hyp FROM hyps ORDER BY id" | diff -u --label "translate() under $rel" --label "the queued job" \
	"$work/translations" - >&2 || fail "the queued job's translations differ from translate()'s before the upgrade"
log "the queued job ran: $(q -c "SELECT count(*) FROM hyps") translations, as translate() gave under $rel"

# The updated catalog equals a fresh install's.
catalog_describe upg > "$work/upgraded"
createdb fresh
q -d fresh -c "CREATE EXTENSION corpq"
catalog_describe fresh > "$work/fresh"
catalog_compare "$rel with data, updated by ALTER EXTENSION corpq UPDATE" "$work/fresh" "$work/upgraded" || exit 1
log "ok"
