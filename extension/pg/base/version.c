/*
 * corpq.version(): which corpq this is, for a DBA's bug report and for the
 * upgrade checks (docs/install.md).
 *
 * The catalog's version (pg_extension.extversion, what CREATE or ALTER
 * EXTENSION last installed) and the library's (the version it was built as)
 * differ after a new package or `make install` until ALTER EXTENSION corpq
 * UPDATE runs, so both are shown.  The build is `git describe` of the tree it
 * was built from, or the release when the tree was not a git checkout
 * (Makefile: CORPQ_BUILD).  The CPU paths are the variants this process picks:
 * the float inference kernel (nn/ops/rowgemm.h), the int8 kernel
 * (nn/ops/qgemm.h) and OpenBLAS's core for training (loaded if needed).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "nn/ops/qgemm.h"
#include "nn/ops/rowgemm.h"
#include "pg/base/base.h"

#ifndef CORPQ_VERSION
#error "CORPQ_VERSION must be defined by the Makefile"
#endif
#ifndef CORPQ_BUILD
#define CORPQ_BUILD CORPQ_VERSION
#endif

/* extversion of the corpq extension in this database; NULL if not created. */
static text *
catalog_version(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	text	   *version = NULL;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("corpq"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = DatumGetTextPCopy(d);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

const char *
corpq_library_version(void)
{
	return CORPQ_VERSION;
}

PG_FUNCTION_INFO_V1(corpq_version);

Datum
corpq_version(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {false};
	text	   *extension = catalog_version();

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = extension ? PointerGetDatum(extension) : (Datum) 0;
	nulls[0] = extension == NULL;
	values[1] = CStringGetTextDatum(CORPQ_VERSION);
	values[2] = CStringGetTextDatum(CORPQ_BUILD);
	values[3] = CStringGetTextDatum(cq_rowgemm_isa_name(cq_rowgemm_machine()));
	values[4] = CStringGetTextDatum(cq_qgemm_isa_name(cq_qgemm_machine()));
	values[5] = CStringGetTextDatum(corpq_blas_core_name());
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
