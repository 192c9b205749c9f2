# What the integration tests and benchmarks share.  Source it first thing
# (before any cd), from a folder of test/ (integration/, bench/, citus/, ...):
#
#   . "$(dirname "$0")/../lib.sh"
#
# It makes the repository the working directory and defines:
#
#   CORPQ_ROOT          the repository
#   corpq_in_cluster [-t SECONDS] [PG_VIRTUALENV_OPTION...] [-- ARGUMENT...]
#                       run this script again inside a throw-away cluster
#                       (pg_virtualenv -t, with the extension this build
#                       installed) and exit with its status; inside the
#                       cluster it returns at once.  -t stops the run after
#                       SECONDS (default: no limit); the options go to
#                       pg_virtualenv (-o max_worker_processes=16, ...); the
#                       arguments to the script.  The inside run sees
#                       CORPQ_IN_CLUSTER set (to CORPQ_CLUSTER_MODE, default 1).
#   corpq_cluster_run   the same, but returns the status instead of exiting
#                       (a script that runs itself in several clusters)
#   q ARG...            psql on the cluster: no psqlrc, unaligned, tuples
#                       only, quiet, stop at the first error
#   log MESSAGE         "name: MESSAGE" on stdout
#   fail MESSAGE        "name: FAIL: MESSAGE" on stderr, exit 1
#   cluster_ready       wait up to 60 s until the server answers (after a
#                       crash or a restart), else fail
#   restart_immediate   stop the throw-away cluster -m immediate (as a
#                       crash would) and start it again
#   corpq_corpora       find the corpora (below), say which, and set
#                       CORPQ_CORPORA (the directory) and CORPQ_PARALLEL (an
#                       array of parallel TSV files: id, domain, src, tgt,
#                       with a header line)
#   corpq_shared NAME   ../shared/NAME next to the clone or its main clone
#                       (the corpora, third-party sources in vendor/), as
#                       "path|where found"; fails when there is none
#   corpq_copy_parallel TABLE
#                       psql \copy commands (for a script or a heredoc) that
#                       load every file of CORPQ_PARALLEL into TABLE's columns
#                       (id, domain, src, tgt)
#   corpq_pgvector VAR  before the cluster starts: pgvector installed into the
#                       server (test/pgvector/build.sh) and VAR exported as
#                       "yes", or as why it cannot be (no package, no source)
#   corpq_backend_pid CONDITION SECONDS
#                       the pid of the backend of pg_stat_activity WHERE
#                       CONDITION (another session's), waiting up to SECONDS
#                       for it; fails when there is none by then
#   corpq_peak_kb PSQL_ARGUMENT...
#                       the peak memory (VmHWM, kB) of a fresh backend that
#                       ran psql with these arguments (-c, -f), read while it
#                       sleeps after them; fails when they fail
#
# "name" is CORPQ_TEST_NAME, by default the script's name without .sh.
#
# Corpora, first found: $CORPQ_CORPORA; ../shared/corpora next to the clone
# (for a git worktree, next to its main clone too); the corpus that
# test/data/make-corpus.sh builds in test/data/corpus (built on first use).
# A directory with en-es/ holds the parallel files there (the shared
# corpora's layout, with mono/en.txt beside it); otherwise its *.tsv are them.

CORPQ_SCRIPT="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
CORPQ_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CORPQ_TEST_NAME=${CORPQ_TEST_NAME:-$(basename "$0" .sh)}
cd "$CORPQ_ROOT"

q() { psql -X -v ON_ERROR_STOP=1 -Atq "$@"; }
log() { echo "$CORPQ_TEST_NAME: $*"; }
fail() { echo "$CORPQ_TEST_NAME: FAIL: $*" >&2; exit 1; }

cluster_ready() {
	local _
	for _ in $(seq 600); do
		q -c "SELECT 1" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "the server did not come back"
}

# pg_ctlcluster may still see the old postmaster for a moment after the stop
# ("Cluster is already running"), so start again
restart_immediate() {
	local _
	pg_ctlcluster "$PGVERSION" regress stop -m immediate
	for _ in $(seq 50); do
		pg_ctlcluster "$PGVERSION" regress start 2>/dev/null && return 0
		sleep 0.2
	done
	fail "the server did not start again"
}

corpq_cluster_run() {
	local limit=0 opts=()
	if [ "${1:-}" = -t ]; then
		limit=$2
		shift 2
	fi
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ "${1:-}" = -- ] && shift
	# timeout 0 means no limit
	CORPQ_IN_CLUSTER=${CORPQ_CLUSTER_MODE:-1} timeout "$limit" \
		pg_virtualenv -t "${opts[@]}" bash "$CORPQ_SCRIPT" "$@"
}

corpq_in_cluster() {
	[ -n "${CORPQ_IN_CLUSTER:-}" ] && return 0
	local rc=0
	corpq_cluster_run "$@" || rc=$?
	exit $rc
}

# corpq_shared NAME: ../shared/NAME next to the clone, else (for a git
# worktree) next to its main clone, as "path|source"; fails when neither exists.
corpq_shared() {
	local common
	if [ -e "$CORPQ_ROOT/../shared/$1" ]; then
		echo "$(cd "$CORPQ_ROOT/../shared" && pwd)/$1|../shared/$1 next to the clone"
		return
	fi
	common=$(git -C "$CORPQ_ROOT" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
	if [ -n "$common" ] && [ -e "$common/../../shared/$1" ]; then
		echo "$(cd "$common/../../shared" && pwd)/$1|../shared/$1 next to the main clone"
		return
	fi
	return 1
}

# The first candidate directory that exists, and what it is, as "dir|source".
corpq_corpora_where() {
	if [ -n "${CORPQ_CORPORA:-}" ]; then
		echo "$CORPQ_CORPORA|CORPQ_CORPORA"
		return
	fi
	corpq_shared corpora && return
	echo "$CORPQ_ROOT/test/data/corpus|test/data/make-corpus.sh"
}

corpq_corpora() {
	local where dir source
	where=$(corpq_corpora_where)
	dir=${where%%|*}
	source=${where#*|}
	if [ "$source" = test/data/make-corpus.sh ] && [ ! -f "$dir/parallel.tsv" ]; then
		bash "$CORPQ_ROOT/test/data/make-corpus.sh" "$dir" >&2 || fail "could not build the corpus in $dir"
	fi
	[ -d "$dir" ] || fail "no corpora at $dir (from $source)"
	if [ -d "$dir/en-es" ]; then
		CORPQ_PARALLEL=("$dir"/en-es/*.tsv)
	else
		CORPQ_PARALLEL=("$dir"/*.tsv)
	fi
	[ -f "${CORPQ_PARALLEL[0]}" ] || fail "no parallel TSV files in $dir (from $source)"
	# the run inside a cluster finds the same ones, and says so only once
	export CORPQ_CORPORA=$dir
	if [ -z "${CORPQ_CORPORA_SAID:-}" ]; then
		log "corpora: $dir (from $source): $(basename -a "${CORPQ_PARALLEL[@]}" | tr '\n' ' ')" >&2
		export CORPQ_CORPORA_SAID=1
	fi
}

corpq_copy_parallel() {
	local f
	for f in "${CORPQ_PARALLEL[@]}"; do
		# csv with a quote byte that never occurs: fields are taken verbatim
		printf "\\\\copy %s (id, domain, src, tgt) FROM '%s' WITH (FORMAT csv, DELIMITER E'\\\\t', QUOTE E'\\\\b', HEADER)\n" "$1" "$f"
	done
}

# CREATE EXTENSION in a cluster that preloads corpq (checked), and a table
# raw (id, domain, src, tgt) holding every line of the shared corpora
# (corpq_corpora first).
corpq_preloaded_raw() {
	q -c "CREATE EXTENSION corpq"
	[ "$(q -c "SHOW shared_preload_libraries")" = corpq ] || fail "corpq not preloaded"
	{
		echo "CREATE TABLE raw (id text, domain text, src text, tgt text);"
		corpq_copy_parallel raw
	} | q >/dev/null
}

corpq_backend_pid() {
	local pid="" _
	for _ in $(seq "$(($2 * 10))"); do
		pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE $1 AND pid <> pg_backend_pid()")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	[ -n "$pid" ] && echo "$pid"
}

corpq_peak_kb() {
	local pid bg _ marker="SELECT pg_sleep(2) -- corpq_peak_kb $$"
	q "$@" -c "$marker" >/dev/null &
	bg=$!
	pid=$(corpq_backend_pid "query = '$marker'" 3600) || fail "the backend never reached its sleep"
	awk '/^VmHWM/ {print $2}' "/proc/$pid/status"
	wait $bg || fail "failed: $*"
}

corpq_pgvector() {
	if bash test/pgvector/build.sh --check; then
		bash test/pgvector/build.sh || fail "pgvector could not be built or installed"
		export "$1=yes"
	else
		export "$1=no installed pgvector and no pgvector 0.8.6 release source (../shared/vendor/pgvector-0.8.6.tar.gz, or CORPQ_PGVECTOR_TARBALL)"
	fi
}
