# What the update check (test/update-check.sh) and the upgrade test
# (test/integration/upgrade.sh) share.  Source it after test/lib.sh.
#
#   CORPQ_VERSION        this tree's version (corpq.control's default_version)
#   CORPQ_EXTDIR         PostgreSQL's extension directory (pg_config --sharedir)
#   release_list         "version commit" of every release, oldest first
#                        (extension/sql/updates/releases); fails on a bad line
#   release_tree COMMIT DIR
#                        the release's files into DIR (git archive; the
#                        repository is not touched); fails, saying so, when the
#                        commit is not in this clone (a shallow clone)
#   release_install_script COMMIT
#                        its install script on stdout: the commit's
#                        extension/sql/*.sql in name order, as its Makefile
#                        concatenated them
#   catalog_describe DB  test/catalog/describe.sql of database DB on stdout;
#                        fails if it meets an object kind it cannot describe
#   catalog_compare WHAT EXPECTED ACTUAL
#                        nothing when the two descriptions are equal; else
#                        the objects that differ, the diff, and exit 1
#   extdir_snapshot / extdir_restore SNAPSHOT
#                        the corpq files of the extension and library
#                        directories (and bindir) saved to a directory, and
#                        put back as they were (files added since removed)
#   with_present_symbols RELEASE
#                        a release's install script (stdin to stdout) with
#                        the C symbols this build's library lacks replaced
#                        by one it has, so that it installs beside it

CORPQ_VERSION=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" "$CORPQ_ROOT/corpq.control")
CORPQ_EXTDIR="$(pg_config --sharedir)/extension"
CORPQ_RELEASES="$CORPQ_ROOT/extension/sql/updates/releases"

release_list() {
	local v c rest
	while read -r v c rest; do
		case "$v" in '' | '#'*) continue ;; esac
		[[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ && "$c" =~ ^[0-9a-f]{40}$ && -z "$rest" ]] \
			|| fail "extension/sql/updates/releases: bad line \"$v $c $rest\" (want: VERSION COMMIT, 40 hex digits)"
		echo "$v $c"
	done < "$CORPQ_RELEASES"
}

release_need_commit() {
	git -C "$CORPQ_ROOT" cat-file -e "$1^{commit}" 2>/dev/null && return 0
	if [ "$(git -C "$CORPQ_ROOT" rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
		fail "release commit $1 is not in this clone: it is shallow; fetch the history (git fetch --unshallow) to check upgrades from the releases"
	fi
	fail "release commit $1 (extension/sql/updates/releases) is not in this clone (git fetch it, or fix the file)"
}

release_tree() {
	release_need_commit "$1"
	mkdir -p "$2"
	git -C "$CORPQ_ROOT" archive "$1" | tar -x -C "$2" || fail "could not extract release commit $1 into $2"
}

release_install_script() {
	local part
	release_need_commit "$1"
	# the Makefile's $(sort ...) is byte order
	git -C "$CORPQ_ROOT" ls-tree --name-only "$1" extension/sql/ | grep '\.sql$' | LC_ALL=C sort |
		while read -r part; do git -C "$CORPQ_ROOT" show "$1:$part"; done
}

catalog_describe() {
	local out
	out=$(psql -X -v ON_ERROR_STOP=1 -q -d "$1" -f "$CORPQ_ROOT/test/catalog/describe.sql") \
		|| fail "could not describe the catalog of database $1"
	if grep -q $'\tUNDESCRIBED\t' <<<"$out"; then
		grep $'\tUNDESCRIBED\t' <<<"$out" >&2
		fail "the catalog has objects test/catalog/describe.sql cannot describe: teach it their kind"
	fi
	printf '%s\n' "$out"
}

# The objects of a unified diff's changed lines, each with where it is.
catalog_diff_objects() {
	awk -F'\t' '
		/^(---|\+\+\+|@@)/ { next }
		/^-/ { o = substr($1, 2); minus[o] = 1; seen[o] = 1 }
		/^\+/ { o = substr($1, 2); plus[o] = 1; seen[o] = 1 }
		END { for (o in seen) print o }' "$1" | LC_ALL=C sort | while IFS= read -r obj; do
		if ! grep -qF -- "$obj"$'\t' "$3"; then
			echo "  $obj: missing after the update (the update script must create it)"
		elif ! grep -qF -- "$obj"$'\t' "$2"; then
			echo "  $obj: left over by the update (not in a fresh install: the update script must drop it)"
		else
			echo "  $obj: differs"
		fi
	done
}

catalog_compare() {
	local what=$1 expected=$2 actual=$3 diff
	diff=$(mktemp)
	if diff -u --label "fresh install of $CORPQ_VERSION" --label "$what" "$expected" "$actual" > "$diff"; then
		rm -f "$diff"
		return 0
	fi
	{
		echo "$CORPQ_TEST_NAME: FAIL: $what does not give the catalog of a fresh install of $CORPQ_VERSION."
		echo "Objects that differ:"
		catalog_diff_objects "$diff" "$expected" "$actual"
		echo "Each change to extension/sql/*.sql needs its statements in the update script"
		echo "extension/sql/updates/corpq--$(release_list | tail -n 1 | cut -d' ' -f1)--$CORPQ_VERSION.sql"
		echo "(docs/architecture.md, \"A change to the catalog\").  The difference, line by line"
		echo "(object, attribute, value; - a fresh install, + after the update):"
		head -n 300 "$diff"
		[ "$(wc -l < "$diff")" -le 300 ] || echo "... ($(wc -l < "$diff") lines in all)"
	} >&2
	rm -f "$diff"
	return 1
}

# corpq's installed files: the extension directory, the module, the programs
# and their links on users' PATH (the Makefile's USER_BINDIR).
corpq_installed_files() {
	find "$CORPQ_EXTDIR" "$(pg_config --pkglibdir)" "$(pg_config --bindir)" /usr/local/bin -maxdepth 1 \
		\( -name 'corpq*' -o -name 'corpq-*' \) \( -type f -o -type l \) 2>/dev/null | LC_ALL=C sort
}

extdir_snapshot() {
	local f
	mkdir -p "$1/files"
	corpq_installed_files > "$1/list"
	while IFS= read -r f; do
		mkdir -p "$1/files$(dirname "$f")"
		cp -a "$f" "$1/files$f"
	done < "$1/list"
}

extdir_restore() {
	local f
	[ -f "$1/list" ] || return 0
	corpq_installed_files | while IFS= read -r f; do
		grep -qxF -- "$f" "$1/list" || rm -f "$f"
	done
	# copied beside and renamed: a running server may have the module mapped
	while IFS= read -r f; do
		cp -a "$1/files$f" "$f.corpq-restore" && mv -f "$f.corpq-restore" "$f"
	done < "$1/list"
}

# The install script of a release on stdin, with the symbols this library
# lacks replaced (named on stderr).
with_present_symbols() {
	local lib present
	lib="$(pg_config --pkglibdir)/corpq.so"
	present=$(nm -D --defined-only "$lib" | awk '$3 ~ /^pg_finfo_/ { print substr($3, 10) }')
	[ -n "$present" ] || fail "no SQL-callable symbols in $lib"
	awk -v present="$present" -v release="$1" '
		BEGIN { n = split(present, p, "\n"); for (i = 1; i <= n; i++) have[p[i]] = 1; stand_in = p[1] }
		match($0, /'"'"'MODULE_PATHNAME'"'"', *'"'"'[A-Za-z0-9_]+'"'"'/) {
			s = substr($0, RSTART, RLENGTH); sub(/.*, *'"'"'/, "", s); sub(/'"'"'$/, "", s)
			if (!(s in have)) {
				printf "%s names C symbol %s, which this library lacks: created with %s instead\n", release, s, stand_in > "/dev/stderr"
				sub("'"'"'" s "'"'"'", "'"'"'" stand_in "'"'"'")
			}
		}
		{ print }'
}
