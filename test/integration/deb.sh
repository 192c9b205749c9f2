#!/usr/bin/env bash
# The Debian packages install, pass the regress suite and remove cleanly:
# make deb (lintian clean), make uninstall, apt-get install of
# postgresql-15-corpq and corpq-convert, `make installcheck` against a
# throw-away cluster of the installed files, dpkg -r, no corpq file left
# behind; then the files installed before (the source build) are put back
# whatever happens.  Needs root and the packages' build dependencies
# (test/deps.sh).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$CORPQ_ROOT/test/releases.sh"

packages=(postgresql-15-corpq corpq-convert)
[ "$(id -u)" = 0 ] || fail "needs root: it installs and removes Debian packages"
for p in "${packages[@]}"; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		fail "$p is installed; this test replaces the source build with the package: dpkg -r it first"
	fi
done

work=$(mktemp -d)
snap="$work/before"
installed=0
restore() {
	local rc=$?
	if [ "$installed" = 1 ]; then
		dpkg -r "${packages[@]}" >/dev/null 2>&1 || echo "deb: could not remove ${packages[*]}" >&2
	fi
	extdir_restore "$snap"
	rm -rf "$work"
	exit $rc
}
trap restore EXIT

start=$SECONDS
make -s deb DEB_OUT="$work/debs" || fail "make deb failed"
log "make deb: $((SECONDS - start)) s"

extdir_snapshot "$snap"
make -s uninstall >/dev/null
for f in "$CORPQ_EXTDIR/corpq.control" "$CORPQ_EXTDIR/corpq--$CORPQ_VERSION.sql" \
	"$(pg_config --pkglibdir)/corpq.so" "$(pg_config --bindir)/corpq-convert" "$(pg_config --bindir)/corpq-spm-check" \
	/usr/local/bin/corpq-convert /usr/local/bin/corpq-spm-check; do
	[ ! -e "$f" ] && [ ! -L "$f" ] || fail "make uninstall left $f"
done
# What make uninstall leaves is not this build's (on a shared machine, another
# version's install script, say); it must be there, unchanged, after dpkg -r.
corpq_installed_files > "$work/left"
[ -s "$work/left" ] && log "not from this build, left as they are: $(tr '\n' ' ' < "$work/left")"

debs=("$work"/debs/postgresql-15-corpq_*_amd64.deb "$work"/debs/corpq-convert_*_amd64.deb)
installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${debs[@]}" > "$work/apt.log" 2>&1 \
	|| { cat "$work/apt.log" >&2; fail "apt-get install of the packages failed"; }
so="$(pg_config --pkglibdir)/corpq.so"
[ "$(dpkg -S "$so" 2>/dev/null | cut -d: -f1)" = postgresql-15-corpq ] || fail "$so is not the package's"
[ -f "$CORPQ_EXTDIR/corpq--$CORPQ_VERSION.sql" ] || fail "the package has no corpq--$CORPQ_VERSION.sql"
corpq-convert --help >/dev/null || fail "the packaged corpq-convert does not run"
[ "$(command -v corpq-convert)" = /usr/bin/corpq-convert ] || fail "the packaged corpq-convert is not /usr/bin/corpq-convert"
[ "$(command -v corpq-spm-check)" = /usr/bin/corpq-spm-check ] || fail "corpq-spm-check is not beside the packaged corpq-convert"
in_local=$(dpkg -L "${packages[@]}" | grep '^/usr/local' || true)
[ -z "$in_local" ] || fail "a package installs into /usr/local: $(echo $in_local)"
dpkg -L "${packages[@]}" | while IFS= read -r f; do [ -f "$f" ] && echo "$f"; done | LC_ALL=C sort > "$work/files"
log "installed: $(wc -l < "$work/files") files, e.g. $(grep -m1 'corpq.so$' "$work/files"), $(grep -m1 'bin/corpq-convert$' "$work/files")"

start=$SECONDS
rm -f regression.diffs
if ! pg_virtualenv -t -o max_worker_processes=16 -o max_parallel_workers=8 make -s installcheck > "$work/regress.log" 2>&1; then
	tail -n 40 "$work/regress.log" >&2
	[ -f regression.diffs ] && head -c 20000 regression.diffs >&2
	fail "make installcheck against the packaged files failed"
fi
log "make installcheck on the package: $(grep -Eo '(All|[0-9]+ of) [0-9]+ tests (passed|failed)[^=]*' "$work/regress.log" | head -n 1) in $((SECONDS - start)) s"

dpkg -r "${packages[@]}" > "$work/dpkg-r.log" 2>&1 || { cat "$work/dpkg-r.log" >&2; fail "dpkg -r failed"; }
installed=0
while IFS= read -r f; do
	[ ! -e "$f" ] || fail "$f is still there after dpkg -r"
done < "$work/files"
corpq_installed_files > "$work/after"
diff -u "$work/left" "$work/after" >&2 || fail "dpkg -r left corpq files behind, or removed ones it did not install (diff above)"
log "ok: removed cleanly; the source build is put back"
