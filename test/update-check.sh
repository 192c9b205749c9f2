#!/usr/bin/env bash
# The update check (`make update-check`, part of `make test`; after `make
# install`).  For every release in extension/sql/updates/releases: CREATE
# EXTENSION corpq VERSION '<release>' (its install script, assembled from its
# commit's extension/sql/*.sql) then ALTER EXTENSION corpq UPDATE must give
# exactly the catalog of CREATE EXTENSION corpq of this tree
# (test/catalog/describe.sql: every object, definition, column, constraint,
# index, privilege, policy, comment, configuration table).  A difference fails
# and names the objects: a change to extension/sql/*.sql whose statements are
# missing from the update script (docs/architecture.md).
#
# The releases' install scripts are put into PostgreSQL's extension
# directory for the run; the directory is left as it was.  A release's C
# function whose symbol this build's library no longer has is created
# pointing at another symbol (PostgreSQL checks the symbol even with
# check_function_bodies off); the update script must drop or replace it
# either way, so the verdict is the same.  It also checks that corpq.control,
# META.json and debian/changelog name the same version, and that the
# comparison reports each of a few deliberate changes to an updated catalog.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$CORPQ_ROOT/test/releases.sh"

# The version in META.json and debian/changelog is corpq.control's.
check_versions() {
	local meta deb
	meta=$(python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); print(m["version"], m["provides"]["corpq"]["version"])' \
		"$CORPQ_ROOT/META.json") || fail "META.json is unreadable"
	[ "$meta" = "$CORPQ_VERSION $CORPQ_VERSION" ] \
		|| fail "META.json says version $meta, corpq.control $CORPQ_VERSION: make them agree"
	deb=$(sed -n '1s/^[^ ]* (\([^)-]*\)\(-[^)]*\)\?).*/\1/p' "$CORPQ_ROOT/debian/changelog")
	[ "$deb" = "$CORPQ_VERSION" ] \
		|| fail "debian/changelog's last entry is $deb, corpq.control says $CORPQ_VERSION: add an entry (dch -v $CORPQ_VERSION)"
}

if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	check_versions
	installed=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" "$CORPQ_EXTDIR/corpq.control" 2>/dev/null || true)
	[ "$installed" = "$CORPQ_VERSION" ] && [ -f "$CORPQ_EXTDIR/corpq--$CORPQ_VERSION.sql" ] \
		|| fail "corpq $CORPQ_VERSION is not installed (the installed corpq.control says \"$installed\"): run make install first"
	last=$(release_list | tail -n 1 | cut -d' ' -f1)
	[ -n "$last" ] || fail "extension/sql/updates/releases lists no release"
	[ "$last" != "$CORPQ_VERSION" ] \
		|| fail "$CORPQ_VERSION is released (extension/sql/updates/releases): raise default_version in corpq.control and start extension/sql/updates/corpq--$CORPQ_VERSION--<next>.sql"
	[ -f "$CORPQ_ROOT/extension/sql/updates/corpq--$last--$CORPQ_VERSION.sql" ] \
		|| fail "no update script from the last release: create extension/sql/updates/corpq--$last--$CORPQ_VERSION.sql"
	snap=$(mktemp -d)
	trap 'extdir_restore "$snap"; rm -rf "$snap"' EXIT
	extdir_snapshot "$snap"
	while read -r v c; do
		release_install_script "$c" | with_present_symbols "$v" > "$CORPQ_EXTDIR/corpq--$v.sql"
	done < <(release_list)
	rc=0
	corpq_cluster_run -t 300 || rc=$?
	exit $rc
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
createdb fresh
q -d fresh -c "CREATE EXTENSION corpq"
catalog_describe fresh > "$work/fresh"
log "a fresh install of $CORPQ_VERSION: $(cut -f1 "$work/fresh" | sort -u | wc -l) objects, $(wc -l < "$work/fresh") facts"
failed=0
while read -r v c; do
	db="from_${v//./_}"
	createdb "$db"
	q -d "$db" -c "CREATE EXTENSION corpq VERSION '$v'"
	q -d "$db" -c "ALTER EXTENSION corpq UPDATE" || fail "ALTER EXTENSION corpq UPDATE from $v failed"
	catalog_describe "$db" > "$work/$db"
	if catalog_compare "$v updated by ALTER EXTENSION corpq UPDATE" "$work/fresh" "$work/$db"; then
		log "$v (commit ${c:0:12}) + ALTER EXTENSION corpq UPDATE = a fresh install of $CORPQ_VERSION"
	else
		failed=1
	fi
done < <(release_list)
[ "$failed" = 0 ] || exit 1

# The comparison sees what it must: changes of each kind made to an updated
# database are each reported, by object.
q -d "$db" > /dev/null <<'SQL'
ALTER FUNCTION corpq.version() COST 2;
ALTER TABLE corpq.jobs ALTER COLUMN attempts SET DEFAULT 1;
REVOKE SELECT ON corpq.model_catalog FROM PUBLIC;
DROP POLICY bpe_models_read ON corpq.bpe_models;
COMMENT ON TYPE corpq.cav IS 'changed';
CREATE FUNCTION corpq.not_a_member() RETURNS int LANGUAGE sql RETURN 1;
SQL
catalog_describe "$db" > "$work/changed"
if catalog_compare "a changed copy" "$work/fresh" "$work/changed" 2> "$work/report"; then
	fail "the comparison found no difference in a changed catalog"
fi
expected="function corpq.not_a_member(): left over
function corpq.version(): differs
table corpq.bpe_models: differs
table corpq.jobs: differs
table corpq.model_catalog: differs
type corpq.cav: differs"
got=$(sed -n -e 's/^  \(.*\): left over by the update.*/\1: left over/p' -e 's/^  \(.*: differs\)$/\1/p' "$work/report")
[ "$got" = "$expected" ] \
	|| fail "the comparison of a changed catalog reported: $(tr '\n' ';' <<<"$got") (expected: $(tr '\n' ';' <<<"$expected"))"
log "ok (a catalog changed in 6 places is reported as 6 objects that differ)"
