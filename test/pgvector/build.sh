#!/usr/bin/env bash
# Make pgvector available to the local PostgreSQL for the tests and the
# benchmark that use it (test/integration/mining.sh, test/bench/bench_mine.sh).
# corpq itself never needs it.
#
#   build.sh            an installed pgvector is used as it is (a package, or
#                       an earlier run of this script); else pgvector is
#                       built from the release source
#                       ../shared/vendor/pgvector-0.8.6.tar.gz (found like the
#                       corpora: next to the clone or its main clone) and
#                       installed.  Exit 0 with one line saying which pgvector
#                       is used; exit 3 with one line saying why not when
#                       there is neither.
#   build.sh --check    exit 0 when pgvector is installed or can be built, else 1
#   build.sh --deps     the Debian packages the build needs beyond corpq's own
#                       (none: PostgreSQL's server headers, gcc and make), for
#                       test/deps.sh
#
# The build is cached once per machine outside the clone, in
# $CORPQ_CACHE/pgvector-<version>-<tarball hash>-pg<server version>
# (CORPQ_CACHE defaults to ~/.cache/corpq); a stamp file marks a finished
# build, a lock serialises concurrent runs, and later runs only `make install`
# from it (a second).  The source is extracted there, never into the project
# tree.  It is built as Debian packages pgvector (OPTFLAGS empty: no
# -march=native, so the cached build runs on any x86-64 that shares the cache).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
CORPQ_TEST_NAME=pgvector
pgvector_version=0.8.6
PG_CONFIG=${PG_CONFIG:-pg_config}

pgvector_installed() {
	command -v "$PG_CONFIG" >/dev/null 2>&1 || return 1
	[ -f "$("$PG_CONFIG" --sharedir)/extension/vector.control" ] &&
		[ -f "$("$PG_CONFIG" --pkglibdir)/vector.so" ]
}

# the tarball as "path|where found", or fail
pgvector_tarball() {
	if [ -n "${CORPQ_PGVECTOR_TARBALL:-}" ]; then
		[ -f "$CORPQ_PGVECTOR_TARBALL" ] && echo "$CORPQ_PGVECTOR_TARBALL|CORPQ_PGVECTOR_TARBALL"
		return
	fi
	corpq_shared "vendor/pgvector-$pgvector_version.tar.gz"
}

# nothing beyond what corpq's own build needs
build_deps=()

if [ "${1:-}" = --check ]; then
	pgvector_installed || pgvector_tarball >/dev/null
	exit
fi
if [ "${1:-}" = --deps ]; then
	if ! pgvector_installed && pgvector_tarball >/dev/null; then echo "${build_deps[@]}"; fi
	exit 0
fi

if pgvector_installed; then
	log "using the installed pgvector ($("$PG_CONFIG" --pkglibdir)/vector.so)"
	exit 0
fi
if ! where=$(pgvector_tarball); then
	log "no installed pgvector and no ../shared/vendor/pgvector-$pgvector_version.tar.gz"
	exit 3
fi
tarball=${where%%|*}
from="$tarball (${where#*|})"

cache=${CORPQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/corpq}
pgver=$("$PG_CONFIG" --version | awk '{ print $2 }')
build=$cache/pgvector-$pgvector_version-$(sha256sum "$tarball" | cut -c1-12)-pg$pgver
mkdir -p "$cache"

build_pgvector() {
	local log_file=$build.log
	rm -rf "$build"
	mkdir -p "$build"
	log "building pgvector $pgvector_version from $from into $build (once per machine; about a minute)"
	tar -xzf "$tarball" -C "$build" --strip-components=1
	make -C "$build" -j"$(nproc)" OPTFLAGS="" PG_CONFIG="$PG_CONFIG" >"$log_file" 2>&1 ||
		{ tail -30 "$log_file"; fail "the pgvector build failed (log: $log_file)"; }
	touch "$build/.corpq-built"
}

exec 9>"$cache/pgvector.lock"
flock 9
[ -f "$build/.corpq-built" ] || build_pgvector
make -C "$build" install OPTFLAGS="" PG_CONFIG="$PG_CONFIG" >"$build.install.log" 2>&1 ||
	{ tail -20 "$build.install.log"; fail "make install of pgvector failed (log: $build.install.log)"; }
flock -u 9
pgvector_installed || fail "pgvector is not installed after make install from $build"
log "using pgvector $pgvector_version built from $from (cache: $build)"
