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
#   citus_copy_models MODEL FROM_VERSION
#                       model_export on the coordinator, model_import on every
#                       worker through run_command_on_workers, version by
#                       version from FROM_VERSION on (README, Citus)

CORPQ_SCALEOUT_LIB=1 source "$CORPQ_ROOT/test/integration/scaleout_fdw.sh"

citus_coordinator=
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

citus_copy_models() {
	qn "$citus_coordinator" >/dev/null <<SQL
DO \$\$
DECLARE
    v record;
    w record;
BEGIN
    FOR v IN SELECT c.name, m.version, c.src_vocab, c.tgt_vocab
               FROM corpq.model_catalog c JOIN corpq.model_versions m ON m.model = c.id
              WHERE c.name = '$1' AND m.version >= $2 ORDER BY m.version
    LOOP
        FOR w IN SELECT * FROM run_command_on_workers(format(
                     'SELECT corpq.model_import(%L, %L::bytea, %L, %L)', v.name,
                     corpq.model_export(format('%s@%s', v.name, v.version)::corpq.pinned_model),
                     v.src_vocab, v.tgt_vocab))
        LOOP
            -- a worker out of step would number the version differently
            IF NOT w.success OR w.result <> v.version::text THEN
                RAISE EXCEPTION 'copying %@% to worker %:%: %', v.name, v.version,
                    w.nodename, w.nodeport, w.result;
            END IF;
        END LOOP;
    END LOOP;
END
\$\$;
SQL
}
