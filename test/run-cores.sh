#!/usr/bin/env bash
# The numeric checks under every OpenBLAS core Debian's DYNAMIC_ARCH build
# carries for x86-64 machines, plus this machine's default (the extension's
# own choice): test/ref/test_nn.py (the core against PyTorch, batch
# invariance), test/regress/sql/score_batch.sql (batched score() = per-row functions,
# bitwise) and test/integration/scoring_torch.sh (SQL scoring against PyTorch
# and the core), all in one throw-away cluster.  The Python side gets the core
# through OPENBLAS_CORETYPE; the server through both of its paths: score_batch
# sets corpq.blas_core (PGOPTIONS), scoring_torch runs after a restart with
# OPENBLAS_CORETYPE in the server's environment file (pg_ctlcluster passes
# only that file's variables on).  A core this CPU cannot execute is skipped
# with a line naming the missing feature.  Needs `make install` done.
#   usage: run-cores.sh [core ...]     (default: default Prescott Sandybridge Haswell SkylakeX Zen)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	make -s test/blas_core test/libcorpqcore.so || exit 1
	unset OPENBLAS_CORETYPE
fi
corpq_in_cluster -t 1200 -o "max_worker_processes=16" -- "$@"
py=${PYTHON:-/usr/bin/python3}
cores=${*:-default Prescott Sandybridge Haswell SkylakeX Zen}
failed=0 ran=0 skipped=0

run_one() {	# core label, then the command
	local label=$1; shift
	if "$@" > "/tmp/corpq_cores_$$.log" 2>&1; then
		echo "  ok   $label"
	else
		echo "  FAIL $label"; tail -n 30 "/tmp/corpq_cores_$$.log"; failed=$((failed + 1))
		case $label in score_batch*) [ -s regression.diffs ] && head -c 4000 regression.diffs ;; esac
	fi
	rm -f "/tmp/corpq_cores_$$.log"
}

# The server's environment: OPENBLAS_CORETYPE = $1 (none if empty), restarted.
server_env() {
	local f=$PG_CLUSTER_CONF_ROOT/$PGVERSION/regress/environment
	sed -i '/^OPENBLAS_CORETYPE/d' "$f"
	[ -z "$1" ] || echo "OPENBLAS_CORETYPE = '$1'" >> "$f"
	pg_ctlcluster "$PGVERSION" regress restart
}

for core in $cores; do
	if [ "$core" = default ]; then
		name=$(test/blas_core) setting=auto
		echo "== default: $(test/blas_core -v | cut -f1,2 --output-delimiter=' by ')"
	elif ! why=$(test/blas_core "$core" 2>&1); then
		echo "== skip $core: $why"; skipped=$((skipped + 1)); continue
	else
		name=$core setting=$core
		echo "== $core"
	fi
	ran=$((ran + 1))
	run_one "test_nn.py" env OPENBLAS_CORETYPE="$name" CORPQ_CORE_LIB="$PWD/test/libcorpqcore.so" \
		"$py" test/ref/test_nn.py
	run_one "score_batch.sql (corpq.blas_core = $setting)" env PGOPTIONS="-c corpq.blas_core=$setting" \
		make -s installcheck REGRESS=score_batch
	server_env "$([ "$core" = default ] || echo "$name")"
	createdb "cores_$core"
	run_one "scoring_torch.sh (server OPENBLAS_CORETYPE=${setting/auto/unset})" \
		env PGDATABASE="cores_$core" OPENBLAS_CORETYPE="$name" bash test/integration/scoring_torch.sh
done
server_env ""
echo "cores: $ran run, $skipped skipped, $failed checks failed"
[ "$failed" = 0 ]
