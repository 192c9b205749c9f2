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
#include "catalog/pg_extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "pg/base/internal_sql.h"

Oid
corpq_catalog_owner(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			owner = InvalidOid;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("corpq"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		owner = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (!OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"corpq\" is not installed in this database")));
	return owner;
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
run(Oid user, const char *sql, int nargs, Oid *argtypes, Datum *values,
	const char *nulls, bool read_only, long count)
{
	Oid			saved_user;
	int			saved_context;
	int			nestlevel;
	int			rc;

	GetUserIdAndSecContext(&saved_user, &saved_context);
	if (OidIsValid(user))
		SetUserIdAndSecContext(user, saved_context | SECURITY_LOCAL_USERID_CHANGE);
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", CORPQ_SAFE_SEARCH_PATH,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	rc = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, read_only, count);
	AtEOXact_GUC(true, nestlevel);
	SetUserIdAndSecContext(saved_user, saved_context);
	return rc;
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
