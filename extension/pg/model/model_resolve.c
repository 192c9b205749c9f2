/*
 * Model names in the catalog (model_catalog.h): "name" (the latest version)
 * or "name@N" resolved to a version, with the errors that list what exists.
 */
#include "postgres.h"

#include <ctype.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "pg/base/internal_sql.h"
#include "pg/model/model_catalog.h"
#include "pg/text/text_catalog.h"

bool
corpq_model_split_spec(const char *spec, int *name_len, int32 *version)
{
	const char *at = strrchr(spec, '@');
	const char *p;
	int64		v = 0;

	if (at == NULL || at == spec || at[1] == '\0' || at[1] == '0')
		return false;
	for (p = at + 1; *p; p++)
	{
		if (!isdigit((unsigned char) *p))
			return false;
		v = v * 10 + (*p - '0');
		if (v > PG_INT32_MAX)
			return false;
	}
	/* names contain no @ (the catalog's CHECK): "a@1@2" is no name@N */
	if (memchr(spec, '@', at - spec) != NULL)
		return false;
	*name_len = (int) (at - spec);
	*version = (int32) v;
	return true;
}

void
corpq_version_missing(const char *kind, const char *list_sql, int64 id,
					  const char *name, int32 version)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(id)};
	bool		isnull;
	char	   *list = NULL;

	if (corpq_sql_as_caller(list_sql, 1, argtypes, values, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			list = TextDatumGetCString(d);
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("%s \"%s\" has no version %d", kind, name, version),
			 list ? errdetail("Its versions are %s.", list)
			 : errdetail("It has no versions."),
			 errhint("Write \"%s\" for the latest version or \"%s@N\" for version N.",
					 name, name)));
}

void
corpq_model_resolve(const char *spec, bool pinned, CorpqModelRef *ref)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			argtypes[2] = {TEXTOID, INT4OID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	int			name_len;
	int32		version = 0;
	char	   *name;
	bool		isnull;
	HeapTuple	tup;
	TupleDesc	desc;

	if (corpq_model_split_spec(spec, &name_len, &version))
		name = pnstrdup(spec, name_len);
	else if (pinned)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid pinned model \"%s\"", spec),
				 errhint("A pinned model is written name@N with a version N >= 1.")));
	else if (strchr(spec, '@') != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid model version in \"%s\"", spec),
				 errhint("Write a model name for its latest version or name@N for version N >= 1.")));
	else
		name = pstrdup(spec);
	values[0] = CStringGetTextDatum(name);
	values[1] = Int32GetDatum(version);
	if (version == 0)
		nulls[1] = 'n';

	SPI_connect();
	if (corpq_sql_as_caller("SELECT c.id, c.src_vocab, c.tgt_vocab, v.version, v.checksum "
							"FROM corpq.model_catalog c "
							"LEFT JOIN corpq.model_versions v ON v.model OPERATOR(pg_catalog.=) c.id "
							"AND ($2 IS NULL OR v.version OPERATOR(pg_catalog.=) $2) "
							"WHERE c.name OPERATOR(pg_catalog.=) $1 "
							"ORDER BY v.version DESC NULLS LAST LIMIT 1",
							2, argtypes, values, nulls, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.model_catalog");
	if (SPI_processed == 0)
		corpq_undefined_name("model", "corpq.model_catalog", name);
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	ref->id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	ref->version = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
	if (isnull)
		corpq_version_missing("model",
							  "SELECT pg_catalog.string_agg(version::pg_catalog.text, ', ' ORDER BY version) "
							  "FROM corpq.model_versions WHERE model OPERATOR(pg_catalog.=) $1",
							  ref->id, name, version);
	ref->checksum = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
	ref->src_vocab = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 2));
	ref->tgt_vocab = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 3));
	ref->name = MemoryContextStrdup(caller, name);
	SPI_finish();
}
