/*
 * corpq's own SQL statements: the fixed search_path and, for catalog
 * writes, the switch to the extension's owner.  See internal_sql.h for the
 * pattern every catalog table follows.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "storage/proc.h"
#include "utils/builtins.h"

#include "pg/base/internal_sql.h"

/*
 * The extension's schema and owner, checked once per transaction and again
 * whenever a schema changes (a rename, an owner change, a drop).  Every
 * statement corpq runs names its tables as corpq.<table>; that text must
 * reach the schema pg_extension records for corpq, and that schema must
 * belong to the extension's owner.  Otherwise a role that owns the schema
 * (one created before CREATE EXTENSION, say) could rename it and put a
 * schema of its own named corpq in its place, whose tables and triggers
 * corpq would then write as the extension's owner (docs/security.md).
 */
static Oid	cached_schema = InvalidOid;
static Oid	cached_owner = InvalidOid;
static LocalTransactionId cached_lxid = InvalidLocalTransactionId;
static bool callback_registered = false;

static void
forget_schema(Datum arg, int cacheid, uint32 hashvalue)
{
	cached_schema = InvalidOid;
	cached_owner = InvalidOid;
}

/* pg_extension's row of corpq: its owner and schema (ERROR when absent). */
static void
read_extension_row(Oid *owner, Oid *schema)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	*owner = InvalidOid;
	*schema = InvalidOid;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("corpq"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		*owner = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
		*schema = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (!OidIsValid(*owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"corpq\" is not installed in this database")));
}

static const char *
role_name(Oid role)
{
	char	   *name = GetUserNameFromId(role, true);

	return name ? name : psprintf("oid %u", role);
}

/* ERROR unless schema is named corpq and owned by owner. */
static void
check_schema(Oid owner, Oid schema)
{
	HeapTuple	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(schema));
	Form_pg_namespace nsp;
	char	   *name;
	Oid			nspowner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for schema %u", schema);
	nsp = (Form_pg_namespace) GETSTRUCT(tup);
	name = pstrdup(NameStr(nsp->nspname));
	nspowner = nsp->nspowner;
	ReleaseSysCache(tup);
	if (nspowner != owner)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("schema \"%s\" of extension corpq is owned by role \"%s\", not by the extension's owner \"%s\"",
						name, role_name(nspowner), role_name(owner)),
				 errdetail("corpq writes its catalog as the extension's owner and refuses a schema another role controls."),
				 errhint("A superuser should check that the schema holds only corpq's objects, then run ALTER SCHEMA %s OWNER TO the extension's owner (docs/security.md).",
						 quote_identifier(name))));
	if (strcmp(name, "corpq") != 0 || get_namespace_oid("corpq", true) != schema)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("schema \"corpq\" is not the schema of extension corpq"),
				 errdetail("The extension's objects are in schema \"%s\".", name),
				 errhint("A superuser should rename the extension's schema back to corpq (docs/security.md).")));
}

/* Fill the cache for this transaction, checking the schema. */
static void
resolve_schema(void)
{
	Oid			owner;
	Oid			schema;

	if (OidIsValid(cached_schema) && cached_lxid == MyProc->lxid)
		return;
	if (!callback_registered)
	{
		CacheRegisterSyscacheCallback(NAMESPACEOID, forget_schema, (Datum) 0);
		callback_registered = true;
	}
	read_extension_row(&owner, &schema);
	check_schema(owner, schema);
	cached_owner = owner;
	cached_schema = schema;
	cached_lxid = MyProc->lxid;
}

Oid
corpq_catalog_owner(void)
{
	resolve_schema();
	return cached_owner;
}

Oid
corpq_schema_oid(void)
{
	resolve_schema();
	return cached_schema;
}

bool
corpq_caller_is_member(Oid role)
{
	return is_member_of_role(GetUserId(), role);
}

/*
 * Run one statement with search_path = pg_catalog, pg_temp, as user (or the
 * current user when invalid).  The GUC nest level and the user are restored
 * on return; on ERROR the (sub)transaction abort restores both, as for
 * SECURITY DEFINER functions (fmgr_security_definer does the same).
 */
static int
run_snapshot(Oid user, const char *sql, int nargs, Oid *argtypes, Datum *values,
			 const char *nulls, bool read_only, long count, bool latest)
{
	Oid			saved_user;
	int			saved_context;
	int			nestlevel;
	int			rc;

	resolve_schema();
	GetUserIdAndSecContext(&saved_user, &saved_context);
	if (OidIsValid(user))
		SetUserIdAndSecContext(user, saved_context | SECURITY_LOCAL_USERID_CHANGE);
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", CORPQ_SAFE_SEARCH_PATH,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	if (latest)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

		if (plan == NULL)
			elog(ERROR, "could not prepare corpq statement: %s", SPI_result_code_string(SPI_result));
		rc = SPI_execute_snapshot(plan, values, nulls, GetLatestSnapshot(), InvalidSnapshot,
								  read_only, false, count);
		SPI_freeplan(plan);
	}
	else
		rc = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, read_only, count);
	AtEOXact_GUC(true, nestlevel);
	SetUserIdAndSecContext(saved_user, saved_context);
	return rc;
}

static int
run(Oid user, const char *sql, int nargs, Oid *argtypes, Datum *values,
	const char *nulls, bool read_only, long count)
{
	return run_snapshot(user, sql, nargs, argtypes, values, nulls, read_only, count, false);
}

int
corpq_sql_as_owner_latest(const char *sql, int nargs, Oid *argtypes, Datum *values,
						  const char *nulls, long count)
{
	return run_snapshot(corpq_catalog_owner(), sql, nargs, argtypes, values, nulls, true, count,
						true);
}

int
corpq_sql_as_caller(const char *sql, int nargs, Oid *argtypes, Datum *values,
					const char *nulls, bool read_only, long count)
{
	return run(InvalidOid, sql, nargs, argtypes, values, nulls, read_only, count);
}

int
corpq_sql_as_owner(const char *sql, int nargs, Oid *argtypes, Datum *values,
				   const char *nulls, long count)
{
	return run(corpq_catalog_owner(), sql, nargs, argtypes, values, nulls, false, count);
}
