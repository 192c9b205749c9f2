#!/usr/bin/env bash
# corpq-convert and corpq-spm-check run by their names after make install:
# they are installed beside PostgreSQL's programs (pg_config --bindir,
# /usr/lib/postgresql/15/bin on Debian), which is not on users' PATH, so
# make install links them into USER_BINDIR (/usr/local/bin).  A staged
# install (DESTDIR) makes the links, to the bindir's programs; USER_BINDIR=
# makes none; make uninstall removes them but not another install's link;
# then the installed programs (make test installs before the integration
# tests) run by name on the PATH Debian gives users.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

bindir=$(pg_config --bindir)
tools=(corpq-convert corpq-spm-check)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

make -s install DESTDIR="$work/a" >/dev/null
for f in "${tools[@]}"; do
	l="$work/a/usr/local/bin/$f"
	[ -L "$l" ] || fail "make install made no link $l"
	[ "$(readlink "$l")" = "$bindir/$f" ] || fail "$l links to $(readlink "$l"), not $bindir/$f"
	[ -x "$work/a$bindir/$f" ] || fail "make install put no $bindir/$f"
done
make -s uninstall DESTDIR="$work/a" >/dev/null
for f in "${tools[@]}"; do
	[ ! -e "$work/a/usr/local/bin/$f" ] && [ ! -L "$work/a/usr/local/bin/$f" ] \
		|| fail "make uninstall left /usr/local/bin/$f"
done
log "a staged install links both into /usr/local/bin; make uninstall removes the links"

make -s install DESTDIR="$work/b" USER_BINDIR= >/dev/null
[ -x "$work/b$bindir/corpq-convert" ] || fail "make install USER_BINDIR= put no $bindir/corpq-convert"
[ ! -e "$work/b/usr/local" ] || fail "make install USER_BINDIR= still made $(find "$work/b/usr/local" | tr '\n' ' ')"

# a link to another install's converter is not this build's to remove
mkdir -p "$work/c/usr/local/bin"
ln -s /opt/other/bin/corpq-convert "$work/c/usr/local/bin/corpq-convert"
make -s uninstall DESTDIR="$work/c" >/dev/null
[ -L "$work/c/usr/local/bin/corpq-convert" ] || fail "make uninstall removed a link to another install's converter"
log "USER_BINDIR= makes no links; make uninstall keeps another install's link"

# Debian's /etc/profile: the PATH of every user but root
userpath=/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games
for f in "${tools[@]}"; do
	found=$(PATH=$userpath command -v "$f") || fail "$f is not on users' PATH ($userpath) after make install"
	[ "$(readlink -f "$found")" = "$(readlink -f "$bindir/$f")" ] \
		|| fail "$f on users' PATH is $found, not this install's $bindir/$f"
done
PATH=$userpath corpq-convert --help >/dev/null || fail "corpq-convert --help fails when run by its name"
printf 'not a SentencePiece model' > "$work/bad.spm"
rc=0
err=$(PATH=$userpath corpq-spm-check "$work/bad.spm" 2>&1 >/dev/null) || rc=$?
[ "$rc" = 1 ] && [[ $err == "$work/bad.spm: "* ]] \
	|| fail "corpq-spm-check by its name on a bad model: exit status $rc, '$err' (expected 1 and 'FILE: reason')"
# The converter run through its link finds its check beside the program the
# link points to (not on PATH: here PATH lacks /usr/local/bin).
said=$(env -u CORPQ_SPM_CHECK PATH=/usr/bin:/bin /usr/bin/python3 - \
	"$(PATH=$userpath command -v corpq-convert)" "$work/bad.spm" <<'PY'
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.SourceFileLoader("corpq_convert", sys.argv[1])
m = importlib.util.module_from_spec(importlib.util.spec_from_loader("corpq_convert", loader))
loader.exec_module(m)
try:
    m.check_spm(sys.argv[2])
    print("accepted")
except m.ConvertError as e:
    print(e)
PY
) || fail "could not load the converter through its link"
[[ $said == *"is not a SentencePiece model corpq can load"* ]] \
	|| fail "the converter run through its link did not run its check: $said"
log "ok: corpq-convert and corpq-spm-check run by name on users' PATH ($(PATH=$userpath command -v corpq-convert) -> $bindir)"
