#!/usr/bin/env bash
# A schema or an object planted before corpq is installed or updated must not
# give its planter the extension owner's rights (CVE-2022-2625's class; issue
# 50; docs/security.md).  An ordinary role owning a database -- the common
# case of a role with CREATE on it -- tries each route; every one must end in
# an error before any of its objects runs, and the role must stay ordinary:
#
#   1. install: it creates schema corpq first (and, in it, an operator
#      corpq.>(float8, integer) that the prob > 0 CHECKs would bind to);
#      CREATE EXTENSION corpq must refuse the schema;
#   2. install: a DBA creates schema corpq and grants CREATE on it; the role
#      plants the operator; CREATE EXTENSION corpq must refuse;
#   3. update: release 0.1.0 (which had no check) was installed into the
#      role's schema; the role plants corpq.cardinality(text[]), which the
#      wordpiece_models CHECK cardinality(tokens) >= 1 would bind to;
#      ALTER EXTENSION corpq UPDATE must refuse, and the new library's
#      functions must refuse to run on such a catalog;
#   4. the library: on a correct install a superuser hands the schema to the
#      role (a mistake); the role renames it, makes a schema corpq of its own
#      whose vocabularies table has a trigger, and calls vocab_build through
#      the renamed schema: corpq must refuse before writing.
# Needs this tree installed (make install) and root (the release's install
# script is put into the extension directory for the run, then removed).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$CORPQ_ROOT/test/releases.sh"

if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	[ "$(id -u)" = 0 ] || fail "needs root: it puts release 0.1.0's install script into PostgreSQL"
	snap=$(mktemp -d)
	trap 'extdir_restore "$snap"; rm -rf "$snap"' EXIT
	extdir_snapshot "$snap"
	read -r rel commit < <(release_list | head -n 1)
	release_install_script "$commit" | with_present_symbols "$rel" 2>/dev/null > "$CORPQ_EXTDIR/corpq--$rel.sql"
	export CORPQ_FIRST_RELEASE=$rel
	rc=0
	corpq_cluster_run -t 600 || rc=$?
	exit $rc
fi

qa() { psql -X -v ON_ERROR_STOP=1 -Atq -U alice "$@"; }
# expect_error DB PATTERN SQL: the superuser's statement must fail with PATTERN
expect_error() {
	local out
	if out=$(q -d "$1" -c "$3" 2>&1); then
		fail "this succeeded and must not have: $3"
	fi
	grep -q -- "$2" <<<"$out" || fail "\"$3\" failed, but not with \"$2\": $out"
	log "refused as it should be: $(grep -m1 ERROR <<<"$out")"
}
still_ordinary() {
	[ "$(q -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'alice'")" = f ] \
		|| fail "alice became superuser ($1)"
	[ "$(q -d "$2" -c "SELECT count(*) FROM public.fired" 2>/dev/null || echo 0)" = 0 ] \
		|| fail "alice's planted code ran ($1)"
}
fresh_db() {
	q -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1 OWNER alice"
	qa -d "$1" -c "CREATE TABLE public.fired (at timestamptz DEFAULT now())"
}

q -c "CREATE ROLE alice LOGIN PASSWORD '$PGPASSWORD'"
# What every planted object does: record that it ran, and try to make alice
# superuser (which works only if it runs as a superuser).
plant_body="INSERT INTO public.fired DEFAULT VALUES; ALTER ROLE alice SUPERUSER;"

log "route 1: schema corpq created first by alice, with an operator >(float8, integer) in it"
fresh_db r1
qa -d r1 <<SQL
CREATE SCHEMA corpq;
CREATE FUNCTION corpq.gt(float8, integer) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN $plant_body RETURN \$1 > \$2; END \$\$;
CREATE OPERATOR corpq.> (LEFTARG = float8, RIGHTARG = integer, FUNCTION = corpq.gt);
SQL
expect_error r1 "schema corpq already exists and is owned by role alice" "CREATE EXTENSION corpq"
still_ordinary "route 1" r1
[ "$(q -d r1 -c "SELECT count(*) FROM pg_extension WHERE extname = 'corpq'")" = 0 ] \
	|| fail "route 1: the extension was installed"

log "route 2: schema corpq made by the DBA, CREATE granted to alice, who plants the operator"
fresh_db r2
q -d r2 -c "CREATE SCHEMA corpq" -c "GRANT CREATE, USAGE ON SCHEMA corpq TO alice"
qa -d r2 <<SQL
CREATE FUNCTION corpq.gt(float8, integer) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN $plant_body RETURN \$1 > \$2; END \$\$;
CREATE OPERATOR corpq.> (LEFTARG = float8, RIGHTARG = integer, FUNCTION = corpq.gt);
SQL
expect_error r2 "schema corpq grants CREATE to a role other than its owner" "CREATE EXTENSION corpq"
q -d r2 -c "REVOKE CREATE ON SCHEMA corpq FROM alice"
expect_error r2 "schema corpq already holds 2 objects" "CREATE EXTENSION corpq"
still_ordinary "route 2" r2
# an empty schema the DBA made is fine, and nothing is bound to a planted object
q -d r2 -c "DROP SCHEMA corpq CASCADE" -c "CREATE SCHEMA corpq" -c "CREATE EXTENSION corpq"
bad=$(q -d r2 -c "SELECT count(*) FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid
	WHERE e.extname = 'corpq' AND d.classid = 'pg_proc'::regclass
	  AND d.objid IN (SELECT oid FROM pg_proc WHERE pronamespace = 'pg_catalog'::regnamespace)")
[ "$bad" = 0 ] || fail "route 2: corpq created $bad functions in pg_catalog"
# what the catalog's CHECKs, defaults, views, indexes and SQL bodies bound to:
# only pg_catalog's functions, operators and types, or corpq's own
foreign=$(q -d r2 -c "WITH n AS (SELECT 'corpq'::regnamespace AS nsp),
	mine AS (SELECT 'pg_constraint'::regclass AS cls, c.oid FROM pg_constraint c, n WHERE c.connamespace = n.nsp
	         UNION ALL SELECT 'pg_attrdef'::regclass, a.oid FROM pg_attrdef a JOIN pg_class t ON t.oid = a.adrelid, n WHERE t.relnamespace = n.nsp
	         UNION ALL SELECT 'pg_rewrite'::regclass, r.oid FROM pg_rewrite r JOIN pg_class t ON t.oid = r.ev_class, n WHERE t.relnamespace = n.nsp
	         UNION ALL SELECT 'pg_policy'::regclass, p.oid FROM pg_policy p JOIN pg_class t ON t.oid = p.polrelid, n WHERE t.relnamespace = n.nsp
	         UNION ALL SELECT 'pg_proc'::regclass, p.oid FROM pg_proc p, n WHERE p.pronamespace = n.nsp
	         UNION ALL SELECT 'pg_class'::regclass, t.oid FROM pg_class t, n WHERE t.relnamespace = n.nsp),
	refs AS (SELECT DISTINCT d.refclassid, d.refobjid FROM pg_depend d JOIN mine m ON m.cls = d.classid AND m.oid = d.objid
	          WHERE d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass, 'pg_type'::regclass))
	SELECT string_agg(pg_describe_object(r.refclassid, r.refobjid, 0), ', ') FROM refs r
	 WHERE COALESCE((SELECT pronamespace FROM pg_proc WHERE r.refclassid = 'pg_proc'::regclass AND oid = r.refobjid),
	                (SELECT oprnamespace FROM pg_operator WHERE r.refclassid = 'pg_operator'::regclass AND oid = r.refobjid),
	                (SELECT typnamespace FROM pg_type WHERE r.refclassid = 'pg_type'::regclass AND oid = r.refobjid))
	       NOT IN ('pg_catalog'::regnamespace, 'corpq'::regnamespace)")
[ -z "$foreign" ] || fail "corpq's catalog depends on objects outside pg_catalog and corpq: $foreign"
log "an empty schema corpq made by the superuser is accepted; the catalog binds only pg_catalog's and its own objects"

log "route 3: release $CORPQ_FIRST_RELEASE installed into alice's schema; alice plants corpq.cardinality(text[])"
fresh_db r3
qa -d r3 -c "CREATE SCHEMA corpq"
q -d r3 -c "CREATE EXTENSION corpq VERSION '$CORPQ_FIRST_RELEASE'"
qa -d r3 <<SQL
CREATE FUNCTION corpq.cardinality(text[]) RETURNS int LANGUAGE plpgsql AS \$\$
BEGIN $plant_body RETURN pg_catalog.cardinality(\$1); END \$\$;
SQL
# the new library refuses to write a catalog in a schema alice owns
if out=$(qa -d r3 -c "SELECT corpq.bpe_learn('b', 'SELECT ''a b''', 10)" 2>&1); then
	fail "route 3: the library wrote a catalog whose schema alice owns"
fi
grep -q 'schema "corpq" of extension corpq is owned by role "alice"' <<<"$out" \
	|| fail "route 3: bpe_learn failed, but not with the schema check: $out"
log "the library refuses the schema: $(grep -m1 ERROR <<<"$out")"
expect_error r3 "schema corpq of extension corpq is owned by role alice" "ALTER EXTENSION corpq UPDATE"
still_ordinary "route 3" r3
# as the DBA would: take the schema, and the planted function still blocks the update
q -d r3 -c "ALTER SCHEMA corpq OWNER TO CURRENT_USER"
expect_error r3 "holds corpq.cardinality(text\[\]), which is not part of the extension" "ALTER EXTENSION corpq UPDATE"
q -d r3 -c "DROP FUNCTION corpq.cardinality(text[])" -c "ALTER EXTENSION corpq UPDATE"
[ "$(q -d r3 -c "SELECT extversion FROM pg_extension WHERE extname = 'corpq'")" = "$CORPQ_VERSION" ] \
	|| fail "route 3: the update did not run once the schema was clean"
still_ordinary "route 3, after the update" r3
log "after the DBA took the schema and dropped the planted function, the update ran"

log "route 4: a correct install, the schema handed to alice, who swaps in a schema of her own"
fresh_db r4
q -d r4 -c "CREATE EXTENSION corpq" -c "ALTER SCHEMA corpq OWNER TO alice"
qa -d r4 <<SQL
ALTER SCHEMA corpq RENAME TO corpq_real;
CREATE SCHEMA corpq;
CREATE TABLE corpq.vocabularies (LIKE corpq_real.vocabularies INCLUDING DEFAULTS);
CREATE FUNCTION corpq.steal() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN $plant_body RETURN NEW; END \$\$;
CREATE TRIGGER steal AFTER INSERT ON corpq.vocabularies FOR EACH ROW EXECUTE FUNCTION corpq.steal();
SQL
if out=$(qa -d r4 -c "SELECT corpq_real.vocab_build('v', 'SELECT ''a b c''')" 2>&1); then
	fail "route 4: vocab_build ran with the schema swapped"
fi
grep -q 'of extension corpq is owned by role "alice"' <<<"$out" \
	|| fail "route 4: vocab_build failed, but not with the schema check: $out"
log "refused: $(grep -m1 ERROR <<<"$out")"
still_ordinary "route 4" r4
# the superuser takes the schema back but leaves it renamed: still refused
q -d r4 -c "ALTER SCHEMA corpq_real OWNER TO CURRENT_USER"
if out=$(qa -d r4 -c "SELECT corpq_real.vocab_build('v', 'SELECT ''a b c''')" 2>&1); then
	fail "route 4: vocab_build ran with the extension's schema renamed"
fi
grep -q 'schema "corpq" is not the schema of extension corpq' <<<"$out" \
	|| fail "route 4: vocab_build failed, but not with the rename check: $out"
log "refused: $(grep -m1 ERROR <<<"$out")"
still_ordinary "route 4, renamed" r4
q -d r4 -c "DROP SCHEMA corpq CASCADE" -c "ALTER SCHEMA corpq_real RENAME TO corpq"
[ "$(qa -d r4 -c "SELECT corpq.vocab_build('v', 'SELECT ''a b c''')")" -ge 4 ] \
	|| fail "route 4: vocab_build does not work once the schema is back"
log "with the schema back, vocab_build works"
log "passed"
