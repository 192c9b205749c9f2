# What test/citus/build.sh and test/pgvector/build.sh share: a third-party
# PostgreSQL extension used as installed, or built once per machine from its
# release source in ../shared/vendor and installed.  Source it after
# test/lib.sh with these set:
#
#   ext_name      its control and library name (citus, vector)
#   ext_label     its name in messages (Citus, pgvector)
#   ext_version   the release (13.2.2)
#   ext_tarball   the tarball's name in ../shared/vendor (citus-13.2.2.tar.gz)
#   ext_env       the variable that may name the tarball (CORPQ_CITUS_TARBALL)
#   build_deps    an array: the Debian packages the build needs
#   ext_build     a function that builds in $build from $tarball, logging to
#                 $build.log, and touches $build/.corpq-built
#
# and then call vendor_build "$@": --check and --deps answer and exit; an
# installed extension is used as it is; else it is built in
# $CORPQ_CACHE/<tarball stem>-<tarball hash>-pg<server version> (CORPQ_CACHE
# defaults to ~/.cache/corpq) under a lock, unless a stamp file says it was,
# and installed from there.  Exit 3 with one line saying why when there is
# neither an installed extension nor the tarball.
PG_CONFIG=${PG_CONFIG:-pg_config}

ext_installed() {
	command -v "$PG_CONFIG" >/dev/null 2>&1 || return 1
	[ -f "$("$PG_CONFIG" --sharedir)/extension/$ext_name.control" ] &&
		[ -f "$("$PG_CONFIG" --pkglibdir)/$ext_name.so" ]
}

# the tarball as "path|where found", or fail
ext_tarball_where() {
	if [ -n "${!ext_env:-}" ]; then
		[ -f "${!ext_env}" ] && echo "${!ext_env}|$ext_env"
		return
	fi
	corpq_shared "vendor/$ext_tarball"
}

vendor_build() {
	local where cache pgver stem=${ext_tarball%.tar.gz}
	if [ "${1:-}" = --check ]; then
		ext_installed || ext_tarball_where >/dev/null
		exit
	fi
	if [ "${1:-}" = --deps ]; then
		if ! ext_installed && ext_tarball_where >/dev/null; then echo "${build_deps[@]}"; fi
		exit 0
	fi
	if ext_installed; then
		log "using the installed $ext_label ($("$PG_CONFIG" --pkglibdir)/$ext_name.so)"
		exit 0
	fi
	if ! where=$(ext_tarball_where); then
		log "no installed $ext_label and no ../shared/vendor/$ext_tarball"
		exit 3
	fi
	tarball=${where%%|*}
	from="$tarball (${where#*|})"
	cache=${CORPQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/corpq}
	pgver=$("$PG_CONFIG" --version | awk '{ print $2 }')
	build=$cache/$stem-$(sha256sum "$tarball" | cut -c1-12)-pg$pgver
	mkdir -p "$cache"
	exec 9>"$cache/$ext_name.lock"
	flock 9
	[ -f "$build/.corpq-built" ] || ext_build
	make -C "$build" install "${ext_make_args[@]}" >"$build.install.log" 2>&1 ||
		{ tail -20 "$build.install.log"; fail "make install of $ext_label failed (log: $build.install.log)"; }
	flock -u 9
	ext_installed || fail "$ext_label is not installed after make install from $build"
	log "using $ext_label $ext_version built from $from (cache: $build)"
}
