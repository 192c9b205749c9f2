/*
 * Model names in the catalog (model.h): "name" (the latest version)
 * or "name@N" resolved to a version, with the errors that list what exists.
 */
#include "postgres.h"

#include <ctype.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "pg/base/catalog.h"
#include "pg/base/internal_sql.h"
#include "pg/model/model.h"
#include "pg/text/text.h"

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
corpq_model_resolve(const char *spec, bool pinned, CorpqModelRef *ref)
{
	MemoryContext caller = CurrentMemoryContext;
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

	SPI_connect();
	tup = corpq_catalog_version(&corpq_kind_model, "c.src_vocab, c.tgt_vocab, v.checksum, v.tableoid",
								name, version);
	desc = SPI_tuptable->tupdesc;
	ref->id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	ref->version = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
	ref->src_vocab = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 3));
	ref->tgt_vocab = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 4));
	ref->checksum = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
	ref->catalog = DatumGetObjectId(SPI_getbinval(tup, desc, 6, &isnull));
	ref->name = MemoryContextStrdup(caller, name);
	SPI_finish();
}
