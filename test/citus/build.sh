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
ext_name=citus ext_label=Citus ext_version=13.2.2
ext_tarball=citus-$ext_version.tar.gz ext_env=CORPQ_CITUS_TARBALL
# lz4 and zstd for columnar compression, krb5 for linking libpq's GSSAPI; not
# libcurl: it only serves the usage statistics, built out below
build_deps=(liblz4-dev libzstd-dev libkrb5-dev)
ext_make_args=()

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

ext_build() {
	local log_file=$build.log
	rm -rf "$build"
	mkdir -p "$build"
	log "building Citus $ext_version from $from into $build (once per machine; a few minutes)"
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

. test/vendor_build.sh
vendor_build "$@"
