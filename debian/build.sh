#!/usr/bin/env bash
# make deb [DEB_OUT=dir]: the Debian packages postgresql-15-corpq and
# corpq-convert from this tree, into DIR (default build/deb), then lintian,
# which must report no error (its warnings are printed).
#
# dpkg-buildpackage builds in a copy of the tree (the files git tracks plus new
# ones it does not ignore, as they are now): a package build cleans its tree,
# and this one's objects belong to `make`.  The copy carries the tree's build
# (git describe) in build-id for corpq.version().  Needs the build
# dependencies of debian/control (test/deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build/deb}")
version=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" corpq.control)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src="$work/corpq-$version"
mkdir -p "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		tar --null -T - -cf - | tar -x -C "$src"
	git describe --always --dirty --abbrev=12 > "$src/build-id"
else
	tar --exclude=./build -cf - . | tar -x -C "$src"
	make -C "$src" clean >/dev/null
fi
jobs=$(nproc)
echo "make deb: building corpq $version in $src"
(cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=$jobs" dpkg-buildpackage -b --no-sign) > "$work/build.log" 2>&1 \
	|| { tail -n 60 "$work/build.log" >&2; echo "make deb: dpkg-buildpackage failed (the end of its log is above)" >&2; exit 1; }
changes=$(ls "$work"/corpq_*.changes)
echo "make deb: lintian"
lintian --fail-on error --suppress-tags-from-file /dev/null "$changes" | tee "$work/lintian.log" \
	|| { echo "make deb: lintian found errors (above)" >&2; exit 1; }
mkdir -p "$out"
rm -f "$out"/*.deb
cp "$work"/*.deb "$out"/
echo "make deb: $(cd "$out" && ls *.deb | tr '\n' ' ')in $out; lintian: $(grep -c '^E:' "$work/lintian.log" || true) errors, $(grep -c '^W:' "$work/lintian.log" || true) warnings"
