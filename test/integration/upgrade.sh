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
# Between the restart under the new library and ALTER EXTENSION corpq UPDATE
# the server calls the new library's C functions through the release's SQL
# definitions, with the release's number of arguments: every function whose
# signature or definition changed since is called so (scoring, batch
# scoring, filters, score_histogram, and the whole probe), must give the
# release's bits, a too-long pair NULL (no rows), and the server must not
# crash (the checkpointer's start time: pg_postmaster_start_time() survives a
# crash-restart).
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
-- a finished row job: its chunk rows must reach corpq.row_job_chunks with their values
CREATE TABLE u_done (id bigint, hyp text, score float8);
SELECT corpq.translate_job('u_m', 'SELECT id, src FROM dev ORDER BY id', 'u_done',
                           '{"chunk_rows": 20, "threads": 1}') AS job \gset
SELECT pg_temp.must(corpq.job_wait(:job, '600 s') = 'succeeded', 'the translate job under the release failed');
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
# the release's chunk table, which the update replaces by corpq.row_job_chunks
chunks_query="SELECT job, chunk, rows_done, %s, rows_hash, %s, owner, committed FROM corpq.%s ORDER BY job, chunk"
q -c "$(printf "$chunks_query" "translated, tokens" decode_seconds translate_chunks)" > "$work/chunks-before"
[ "$(wc -l < "$work/chunks-before")" -ge 3 ] || fail "the release's translate job left too few chunks: $(cat "$work/chunks-before")"
[ "$(wc -l < "$work/before")" -gt 200 ] || fail "the probe found too little: $(head "$work/before")"

# The functions whose signature or definition changed since the release, as
# the release defines them.  The lines before "---" keep their meaning in
# the new version (the release's signatures stay); the rest, score_histogram
# and filter_defaults, are the release's until the update replaces them.
u_m_float() { q -c "SELECT max(version) - 1 FROM corpq.model_versions v JOIN corpq.model_catalog c ON c.id = v.model WHERE c.name = 'u_m'"; }
calls() {
	q -v fv="$(u_m_float)" <<'SQL'
-- pm, pb: the pinned names; p_m, p_b: them as corpq.pinned_model in SQL
SELECT 'u_m@' || :fv AS pm, 'u_back@1' AS pb, format('%L::corpq.pinned_model', 'u_m@' || :fv) AS p_m,
       format('%L::corpq.pinned_model', 'u_back@1') AS p_b \gset
SELECT id, corpq.sent_prob(:p_m, src, tgt), corpq.sent_logprob('u_m', src, tgt),
       corpq.sent_logprob(:p_m, src, tgt), corpq.dual_xent(:p_m, :p_b, src, tgt),
       corpq.uncertainty('u_m', src, tgt, 'entsent', 3, 7), corpq.uncertainty(:p_m, src, tgt, 'vartp', 2)
  FROM dev ORDER BY id;
SELECT id, corpq.uncertainty('u_m', src, tgt) FROM dev WHERE id < 100 ORDER BY id;
SELECT 'token_scores', m, md5(string_agg(concat_ws(' ', d.id, t.pos, t.token, t.logprob, t.pred_token, t.pred_prob, t.entropy),
                                         '|' ORDER BY d.id, t.pos))
  FROM (VALUES ('name'), ('pinned')) v(m), dev d,
       LATERAL (SELECT * FROM corpq.token_scores('u_m', d.src, d.tgt) WHERE v.m = 'name'
                UNION ALL SELECT * FROM corpq.token_scores(:p_m, d.src, d.tgt) WHERE v.m = 'pinned') t
 GROUP BY m ORDER BY m;
SELECT 'token_hits', count(*), count(*) FILTER (WHERE h.hit), count(*) FILTER (WHERE p.hit)
  FROM dev d, corpq.token_hits('u_m', d.src, d.tgt) h, corpq.token_hits(:p_m, d.src, d.tgt) p WHERE p.pos = h.pos;
SELECT 'score', w, md5(string_agg(s.id || ' ' || s.score, '|' ORDER BY s.id))
  FROM unnest('{sent_prob,sent_logprob,uncertainty}'::text[]) w,
       LATERAL corpq.score('u_m', 'SELECT id, src, tgt FROM dev', w, 16, 'comev', 2, 3) s
 GROUP BY w ORDER BY w;
SELECT 'score default', md5(string_agg(s.id || ' ' || s.score, '|' ORDER BY s.id))
  FROM corpq.score('u_m', 'SELECT id, src, tgt FROM dev') s;
SELECT 'dual_xent_scores', md5(string_agg(s.id || ' ' || s.score, '|' ORDER BY s.id))
  FROM corpq.dual_xent_scores('u_m', 'u_back', 'SELECT id, src, tgt FROM dev') s;
-- filters with the model filter (args written out: a spec's defaults may change)
SELECT percentile_disc(0.4) WITHIN GROUP (ORDER BY corpq.dual_xent(:p_m, :p_b, src, tgt)) AS thr FROM dev \gset
SELECT format('[{"name": "length_ratio", "args": {"unit": "word"}, "threshold": 1.5},
                {"name": "dual_xent", "args": {"forward": "%s", "backward": "%s"}, "threshold": %s}]', :'pm', :'pb', :'thr')
       AS spec \gset
SELECT 'filter_report', filter, kept, rejected FROM corpq.filter_report('SELECT src, tgt FROM dev', :'spec', 0) ORDER BY filter;
SELECT 'filter_keeps', count(*) FILTER (WHERE corpq.filter_keeps(src, tgt, :'spec')),
       md5(string_agg(id || ' ' || array_to_string(corpq.filter_rejects(src, tgt, :'spec'), ','), '|' ORDER BY id))
  FROM dev;
SELECT corpq.filter_predicate(:'spec') AS pred \gset
SELECT format('SELECT ''filter_predicate'', count(*), md5(string_agg(id::text, '','' ORDER BY id)) FROM dev WHERE %s', :'pred') \gexec
SELECT '---';
SELECT 'score_histogram', h.* FROM corpq.score_histogram('SELECT id % 2, corpq.sent_prob(''u_m'', src, tgt) FROM dev', 5) h;
SELECT 'score_histogram', h.* FROM corpq.score_histogram('SELECT 1, corpq.sent_logprob(''u_m'', src, tgt) FROM dev', 4, -60, 0) h;
SELECT 'filter_defaults', corpq.filter_defaults();
SELECT 'filter_report', filter, kept, rejected FROM corpq.filter_report('SELECT src, tgt FROM dev') ORDER BY filter;
SQL
}
calls > "$work/calls-before"
sed '/^---$/,$d' "$work/calls-before" > "$work/calls-kept"
[ "$(wc -l < "$work/calls-kept")" -gt 70 ] || fail "the calls found too little: $(head "$work/calls-kept")"
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

# Before the update: the new library through the release's definitions.
checkpointer_start() { q -d postgres -c "SELECT backend_start FROM pg_stat_activity WHERE backend_type = 'checkpointer'"; }
started=$(checkpointer_start)
[ -n "$started" ] || fail "no checkpointer in pg_stat_activity"
[ "$(q -c "SELECT extversion FROM pg_extension WHERE extname = 'corpq'")" = "$rel" ] || fail "the catalog is not $rel's before the update"
[ "$(q -c "SELECT to_regprocedure('corpq.sent_prob(text, text, text, text)') IS NULL AND to_regprocedure('corpq.sent_prob(text, text, text)') IS NOT NULL")" = t ] \
	|| fail "the catalog before the update does not have the release's signatures"
calls > "$work/calls-old-catalog" 2>&1 \
	|| fail "calls through $rel's definitions failed under the new library: $(tail -n 5 "$work/calls-old-catalog")"
diff -u --label "$rel" --label "the new library through $rel's definitions" "$work/calls-before" "$work/calls-old-catalog" >&2 \
	|| fail "the new library gives other results through $rel's definitions (diff above)"
probe > "$work/probe-old-catalog" 2>&1 || fail "the probe through $rel's definitions failed: $(tail -n 5 "$work/probe-old-catalog")"
diff -u --label "$rel" --label "the new library through $rel's definitions" "$work/before" "$work/probe-old-catalog" >&2 \
	|| fail "the new library gives other results through $rel's definitions (diff above)"
# a pair longer than u_m accepts (31 tokens): NULL, no rows, rejected; not an ERROR
long=$(q -v fv="$(u_m_float)" 2>&1 <<'SQL'
SET client_min_messages = warning;
SELECT 'u_m@' || :fv AS pm, format('%L::corpq.pinned_model', 'u_m@' || :fv) AS p_m \gset
SELECT concat_ws(' ', corpq.sent_prob('u_m', l.src, 'v1') IS NULL, corpq.sent_prob(:p_m, 'w1', l.tgt) IS NULL,
                 corpq.sent_logprob('u_m', 'w1', l.tgt) IS NULL, corpq.sent_logprob(:p_m, l.src, 'v1') IS NULL,
                 corpq.uncertainty('u_m', l.src, 'v1', 'enteos', 2) IS NULL, corpq.uncertainty(:p_m, 'w1', l.tgt) IS NULL,
                 corpq.dual_xent('u_m', 'u_back', 'w1', l.tgt) IS NULL,
                 corpq.dual_xent(:p_m, 'u_back@1'::corpq.pinned_model, l.src, 'v1') IS NULL,
                 (SELECT count(*) FROM corpq.token_scores('u_m', l.src, 'v1')) = 0,
                 (SELECT count(*) FROM corpq.token_scores(:p_m, 'w1', l.tgt)) = 0,
                 (SELECT count(*) FROM corpq.token_hits('u_m', 'w1', l.tgt)) = 0,
                 (SELECT count(*) FROM corpq.token_hits(:p_m, l.src, 'v1')) = 0,
                 (SELECT array_agg(s.score IS NULL ORDER BY s.id) = '{t,f}'
                    FROM corpq.score('u_m', format('SELECT 1, %L, ''v1'' UNION ALL SELECT 2, ''w1'', ''v1''', l.src),
                                     'uncertainty', 8, 'enteos', 2) s),
                 (SELECT array_agg(s.score IS NULL ORDER BY s.id) = '{t,f}'
                    FROM corpq.dual_xent_scores('u_m', 'u_back',
                                                format('SELECT 1, ''w1'', %L UNION ALL SELECT 2, ''w1'', ''v1''', l.tgt)) s),
                 NOT corpq.filter_keeps(l.src, 'v1', format('[{"name": "dual_xent", "args": {"forward": "%s", "backward": "u_back@1"}, "threshold": 0}]', :'pm')::jsonb))
  FROM (SELECT rtrim(repeat('w1 ', 40)) AS src, rtrim(repeat('v1 ', 40)) AS tgt) l;
SQL
) || fail "a too-long pair through $rel's definitions failed: $long"
[ "$long" = "t t t t t t t t t t t t t t t" ] \
	|| fail "a too-long pair through $rel's definitions: $long (expected NULL, no rows, rejected: 15 times t)"
[ "$(checkpointer_start)" = "$started" ] || fail "the server crashed and restarted during the calls through $rel's definitions"
log "the new library through $rel's definitions: the release's bits ($(wc -l < "$work/calls-old-catalog") + $(wc -l < "$work/probe-old-catalog") lines), a too-long pair NULL in 15 calls, no crash"

q -c "ALTER EXTENSION corpq UPDATE"
[ "$(q -c "SELECT extversion FROM pg_extension WHERE extname = 'corpq'")" = "$CORPQ_VERSION" ] \
	|| fail "ALTER EXTENSION corpq UPDATE did not reach $CORPQ_VERSION"
[ "$(q -c "SELECT extension || ' ' || library FROM corpq.version()")" = "$CORPQ_VERSION $CORPQ_VERSION" ] \
	|| fail "corpq.version() after the update: $(q -c "SELECT corpq.version()")"
log "updated $rel -> $CORPQ_VERSION"
# version identity starts from the versions the release stored
issued=$(q -c "SELECT string_agg(catalog || ' ' || name || ' ' || last_version, ', ' ORDER BY name) FROM corpq.issued_versions")
stored=$(q -c "SELECT string_agg('corpq.model_catalog ' || name || ' ' || v, ', ' ORDER BY name)
                 FROM (SELECT c.name, max(v.version) AS v FROM corpq.model_catalog c
                         JOIN corpq.model_versions v ON v.model = c.id GROUP BY c.name) m")
[ -n "$issued" ] && [ "$issued" = "$stored" ] || fail "corpq.issued_versions after the update: $issued (expected $stored)"
[ "$(q -c "SELECT state FROM corpq.jobs WHERE id = $queued")" = queued ] || fail "job $queued left the queue too early"
probe > "$work/after"
q -c "$(printf "$chunks_query" "(counters ->> 'translated')::bigint, (counters ->> 'tokens')::bigint" seconds row_job_chunks)" \
	| diff -u --label "corpq.translate_chunks under $rel" --label "corpq.row_job_chunks after the update" "$work/chunks-before" - >&2 \
	|| fail "the update did not move the chunk rows with their values (diff above)"
[ "$(q -c "SELECT to_regclass('corpq.translate_chunks') IS NULL")" = t ] || fail "corpq.translate_chunks is left after the update"
log "$(wc -l < "$work/chunks-before") chunk rows moved to corpq.row_job_chunks"
diff -u --label "under $rel" --label "after the update" "$work/before" "$work/after" >&2 \
	|| fail "objects give different results after the upgrade (diff above)"
calls | sed '/^---$/,$d' > "$work/calls-after"
diff -u --label "under $rel" --label "after the update" "$work/calls-kept" "$work/calls-after" >&2 \
	|| fail "the release's signatures give different results after the upgrade (diff above)"
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
