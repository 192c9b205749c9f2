# A Citus cluster on loopback for test/citus/run.sh and
# test/bench/bench_citus.sh; source it after test/lib.sh.  The servers are
# test/integration/scaleout_fdw.sh's throw-away servers (initdb + pg_ctl in
# one temporary directory, free loopback ports, stopped on exit: its
# start_node, stop_node, restart_node, qn), set up as Citus's documentation
# says for a multi-node cluster:
#   - every node preloads citus (first) and corpq (for restartable jobs), and
#     runs CREATE EXTENSION citus;
#   - the coordinator registers itself (citus_set_coordinator_host) and each
#     worker (citus_add_node), then creates corpq, which Citus propagates to
#     every worker.
# No usage statistics are sent (citus.enable_statistics_collection = off).
#
#   citus_start COORD WORKER... [-- POSTGRES-OPTION...]
#   citus_workers       the workers' "host:port", one a line, as Citus names them
#   citus_copy_catalog  the coordinator's catalog (but lexicons) to every
#                       worker through corpq's export and import functions
#                       (docs/scaling.md, Citus)

CORPQ_SCALEOUT_LIB=1 source "$CORPQ_ROOT/test/integration/scaleout_fdw.sh"

citus_coordinator=
citus_user=postgres	# the role citus_copy_catalog runs as
citus_start() {
	local coord=$1 n port opts=() workers=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		workers+=("$1")
		shift
	done
	[ "${1:-}" = -- ] && shift
	opts=(-c shared_preload_libraries=citus,corpq -c citus.enable_statistics_collection=off "$@")
	for n in "$coord" "${workers[@]}"; do
		start_node "$n" "${opts[@]}" || fail "could not start $n"
		qn "$n" -c "CREATE EXTENSION citus" >/dev/null
	done
	citus_coordinator=$coord
	eval "port=\$port_$coord"
	qn "$coord" -c "SELECT citus_set_coordinator_host('127.0.0.1', $port)" >/dev/null
	for n in "${workers[@]}"; do
		eval "port=\$port_$n"
		qn "$coord" -c "SELECT citus_add_node('127.0.0.1', $port)" >/dev/null
	done
	[ "$(qn "$coord" -c "SELECT count(*) FROM citus_get_active_worker_nodes()")" = ${#workers[@]} ] ||
		fail "Citus does not list ${#workers[@]} active workers"
	qn "$coord" -c "CREATE EXTENSION corpq" >/dev/null
	for n in "${workers[@]}"; do
		[ "$(qn "$n" -c "SELECT count(*) FROM pg_extension WHERE extname = 'corpq'")" = 1 ] ||
			fail "CREATE EXTENSION corpq did not reach worker $n"
	done
}

citus_workers() {
	qn "$citus_coordinator" -c "SELECT node_name || ':' || node_port FROM citus_get_active_worker_nodes() ORDER BY 1"
}

# citus_copy_catalog: the coordinator's segmenters (BPE models, SentencePiece
# and WordPiece models), vocabularies and model versions (in dependency order, versions in order) to every worker, through
# corpq's export functions here and import functions there, each import run by
# run_command_on_workers and its result checked (a worker's failure is a row,
# not an error).  Each command imports only what the worker lacks (by name,
# and version), so the copy can run again after a failure, for new versions
# or for a new worker; what the workers hold is checked by catalog_check(),
# not here.  A worker that lacks an earlier version would number the next one
# differently, and the result says so.  docs/scaling.md, Citus, shows this block with
# the objects chosen by name.
citus_copy_catalog() {
	qn "$citus_coordinator" -U "$citus_user" >/dev/null <<'SQL'
DO $$
DECLARE
    r record;
    w record;
BEGIN
    FOR r IN
        SELECT * FROM (
            -- segmenters: BPE codes, SentencePiece models, WordPiece tokens
            SELECT 1 AS step, 0 AS version, 'segmenter ' || b.name AS what, b.n_merges::text AS expect,
                   format('SELECT CASE WHEN EXISTS (SELECT FROM corpq.bpe_models WHERE name = %1$L) THEN %2$s
                                       ELSE %3$s END',
                          b.name, b.n_merges,
                          CASE b.version
                               WHEN 'sentencepiece' THEN format('corpq.spm_import(%L, %L::bytea)', b.name, s.proto)
                               WHEN 'wordpiece' THEN format('corpq.wordpiece_import(%L, %L, %L::jsonb)', b.name,
                                                            array_to_string(wp.tokens, E'\n'), wp.options)
                               ELSE format('corpq.bpe_import(%L, %L)', b.name, corpq.bpe_export(b.name)) END) AS command
              FROM corpq.bpe_models b
              LEFT JOIN corpq.spm_models s ON s.model = b.name
              LEFT JOIN corpq.wordpiece_models wp ON wp.model = b.name
            UNION ALL
            SELECT 2, 0, 'vocabulary ' || name, size::text,
                   format('SELECT CASE WHEN EXISTS (SELECT FROM corpq.vocabularies WHERE name = %1$L) THEN %2$s
                                       ELSE corpq.vocab_import(%1$L, %3$L) END',
                          name, size, corpq.vocab_export(name))
              FROM corpq.vocabularies
            UNION ALL
            SELECT 3, v.version, format('model %s@%s', c.name, v.version), v.version::text,
                   format('SELECT CASE WHEN EXISTS (SELECT FROM corpq.model_catalog c JOIN corpq.model_versions v ON v.model = c.id
                                                     WHERE c.name = %1$L AND v.version = %2$s) THEN %2$s
                                       ELSE corpq.model_import(%1$L, %3$L::bytea, %4$L, %5$L) END',
                          c.name, v.version, corpq.model_export(format('%s@%s', c.name, v.version)::corpq.pinned_model),
                          c.src_vocab, c.tgt_vocab)
              FROM corpq.model_catalog c JOIN corpq.model_versions v ON v.model = c.id
        ) copies ORDER BY step, version, what
    LOOP
        FOR w IN SELECT * FROM run_command_on_workers(r.command) LOOP
            -- model_import numbers versions in order: a worker out of step gives another number
            IF NOT w.success OR w.result IS DISTINCT FROM r.expect THEN
                RAISE EXCEPTION 'copying % to worker %:%: %', r.what, w.nodename, w.nodeport, w.result;
            END IF;
        END LOOP;
    END LOOP;
END
$$;
SQL
}
