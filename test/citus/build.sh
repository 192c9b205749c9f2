#!/usr/bin/env bash
# Make Citus available to the local PostgreSQL for test/citus/run.sh and
# test/bench/bench_citus.sh.
#
#   build.sh            an installed Citus is used as it is (Citus's own
#                       packages, or an earlier run of this script); else
#                       Citus is built from the release source
#                       ../shared/vendor/citus-13.2.2.tar.gz (found like the
#                       corpora: next to the clone or its main clone) and
#                       installed.  Exit 0 with one line saying which Citus
#                       is used; exit 3 with one line saying why not when
#                       there is neither.
#   build.sh --check    exit 0 when Citus is installed or can be built, else 1
#   build.sh --deps     the Debian packages the build needs (nothing when
#                       Citus is installed or the source is absent), for
#                       test/deps.sh
#
# The build is cached once per machine outside the clone, in
# $CORPQ_CACHE/citus-<version>-<tarball hash>-pg<server version> (CORPQ_CACHE
# defaults to ~/.cache/corpq); a stamp file marks a finished build, a lock
# serialises concurrent runs, and later runs only `make install` from it
# (seconds).  The source is extracted there, never into the project tree.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
CORPQ_TEST_NAME=citus
citus_version=13.2.2
PG_CONFIG=${PG_CONFIG:-pg_config}

citus_installed() {
	command -v "$PG_CONFIG" >/dev/null 2>&1 || return 1
	[ -f "$("$PG_CONFIG" --sharedir)/extension/citus.control" ] &&
		[ -f "$("$PG_CONFIG" --pkglibdir)/citus.so" ]
}

# the tarball as "path|where found", or fail
citus_tarball() {
	if [ -n "${CORPQ_CITUS_TARBALL:-}" ]; then
		[ -f "$CORPQ_CITUS_TARBALL" ] && echo "$CORPQ_CITUS_TARBALL|CORPQ_CITUS_TARBALL"
		return
	fi
	corpq_shared "vendor/citus-$citus_version.tar.gz"
}

# lz4 and zstd for columnar compression, krb5 for linking libpq's GSSAPI; not
# libcurl: it only serves the usage statistics, built out below
build_deps=(liblz4-dev libzstd-dev libkrb5-dev)

if [ "${1:-}" = --check ]; then
	citus_installed || citus_tarball >/dev/null
	exit
fi
if [ "${1:-}" = --deps ]; then
	if ! citus_installed && citus_tarball >/dev/null; then echo "${build_deps[@]}"; fi
	exit 0
fi

if citus_installed; then
	log "using the installed Citus ($("$PG_CONFIG" --pkglibdir)/citus.so)"
	exit 0
fi
if ! where=$(citus_tarball); then
	log "no installed Citus and no ../shared/vendor/citus-$citus_version.tar.gz"
	exit 3
fi
tarball=${where%%|*}
from="$tarball (${where#*|})"

cache=${CORPQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/corpq}
pgver=$("$PG_CONFIG" --version | awk '{ print $2 }')
build=$cache/citus-$citus_version-$(sha256sum "$tarball" | cut -c1-12)-pg$pgver
mkdir -p "$cache"

# Citus 13.2.2's pg_version_compat.h defines a static inline
# have_createdb_privilege() for servers before 16; PostgreSQL 15.20 exports a
# function of that name (commands/dbcommands.h), and C refuses a static
# definition after an extern declaration.  When the server declares it,
# rename the fallback (in the extracted copy, not the tarball).
rename_compat_fallback() {
	local h=src/include/pg_version_compat.h
	grep -q 'have_createdb_privilege' "$("$PG_CONFIG" --includedir-server)/commands/dbcommands.h" || return 0
	sed -i '/^static inline bool$/{N;s/^static inline bool\nhave_createdb_privilege(void)$/#define have_createdb_privilege citus_compat_have_createdb_privilege\n&/}' "$h"
	grep -q '^#define have_createdb_privilege citus_compat' "$h" || fail "the compatibility rename did not apply to $h"
}

build_citus() {
	local log_file=$build.log
	rm -rf "$build"
	mkdir -p "$build"
	log "building Citus $citus_version from $from into $build (once per machine; a few minutes)"
	tar -xzf "$tarball" -C "$build" --strip-components=1
	(
		cd "$build"
		rename_compat_fallback
		# --without-libcurl: no usage statistics sent home from test clusters
		./configure --without-libcurl PG_CONFIG="$PG_CONFIG"
		make -j"$(nproc)"
	) >"$log_file" 2>&1 || { tail -30 "$log_file"; fail "the Citus build failed (log: $log_file)"; }
	touch "$build/.corpq-built"
}

exec 9>"$cache/citus.lock"
flock 9
[ -f "$build/.corpq-built" ] || build_citus
make -C "$build" install >"$build.install.log" 2>&1 ||
	{ tail -20 "$build.install.log"; fail "make install of Citus failed (log: $build.install.log)"; }
flock -u 9
citus_installed || fail "Citus is not installed after make install from $build"
log "using Citus $citus_version built from $from (cache: $build)"
