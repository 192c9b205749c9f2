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
ext_name=vector ext_label=pgvector ext_version=0.8.6
ext_tarball=pgvector-$ext_version.tar.gz ext_env=CORPQ_PGVECTOR_TARBALL
# nothing beyond what corpq's own build needs
build_deps=()
# no -march=native: the cached build runs on any x86-64 that shares the cache
ext_make_args=(OPTFLAGS="" PG_CONFIG="${PG_CONFIG:-pg_config}")

ext_build() {
	local log_file=$build.log
	rm -rf "$build"
	mkdir -p "$build"
	log "building pgvector $ext_version from $from into $build (once per machine; about a minute)"
	tar -xzf "$tarball" -C "$build" --strip-components=1
	make -C "$build" -j"$(nproc)" "${ext_make_args[@]}" >"$log_file" 2>&1 ||
		{ tail -30 "$log_file"; fail "the pgvector build failed (log: $log_file)"; }
	touch "$build/.corpq-built"
}

. test/vendor_build.sh
vendor_build "$@"
