/*
 * The catalog kinds and the checks they share (catalog.h).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "pg/base/catalog.h"
#include "pg/base/internal_sql.h"

const CorpqCatalogKind corpq_kind_bpe = {
	"BPE model", "corpq.bpe_models", "corpq.bpe_drop", true,
	"The model is owned by role %s.", "Only members of the owning role can drop or replace a model.",
	"SELECT pg_catalog.string_agg(name, ', ' ORDER BY name) "
	"FROM corpq.vocabularies WHERE bpe OPERATOR(pg_catalog.=) $1",
	"vocabularies", "Drop those vocabularies first with corpq.vocab_drop()."
};
/* any role's model may use a vocabulary: name them rather than fail on the foreign key */
const CorpqCatalogKind corpq_kind_vocabulary = {
	"vocabulary", "corpq.vocabularies", "corpq.vocab_drop", true,
	"The vocabulary is owned by role %s.",
	"Only members of the owning role can drop or replace a vocabulary.",
	"SELECT pg_catalog.string_agg(name OPERATOR(pg_catalog.||) "
	"CASE WHEN pg_catalog.pg_has_role(current_user, owner, 'MEMBER') THEN '' "
	"ELSE pg_catalog.format(' (owned by %s)', owner) END, ', ' ORDER BY name) "
	"FROM corpq.model_catalog "
	"WHERE src_vocab OPERATOR(pg_catalog.=) $1 OR tgt_vocab OPERATOR(pg_catalog.=) $1",
	"models", "Drop those models first with corpq.model_drop(), or ask their owners to."
};
const CorpqCatalogKind corpq_kind_model = {
	"model", "corpq.model_catalog", "corpq.model_drop", true,
	NULL, "Only members of the model's owner role can drop it."
};
const CorpqCatalogKind corpq_kind_lexicon = {
	"lexicon", "corpq.lexicons", "corpq.lexicon_drop", false,
	NULL, "Only members of the lexicon's owner role can drop it."
};
const CorpqCatalogKind corpq_kind_antap = {
	"ANTAP model", "corpq.antap_models", "corpq.antap_drop", false,
	NULL, "Only members of the model's owner role can drop it."
};

void
corpq_check_new_name(const char *kind, const char *table,
					 const char *drop_fn, const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	int			rc;

	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s name must not be empty", kind)));
	values[0] = CStringGetTextDatum(name);
	SPI_connect();
	rc = corpq_sql_as_caller(psprintf("SELECT 1 FROM %s WHERE name OPERATOR(pg_catalog.=) $1",
									  table),
							 1, argtypes, values, NULL, true, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("%s \"%s\" already exists", kind, name),
				 errhint("Drop it first with SELECT %s(%s).", drop_fn,
						 quote_literal_cstr(name))));
	SPI_finish();
}

void
corpq_undefined_name(const char *kind, const char *table, const char *name)
{
	char	   *list = NULL;
	int64		total = 0;
	int			rc;
	bool		isnull;
	bool		is_bpe = strcmp(table, "corpq.bpe_models") == 0;

	SPI_connect();
	rc = corpq_sql_as_caller(psprintf("SELECT pg_catalog.string_agg(name, ', ' ORDER BY name) "
									  "FILTER (WHERE n OPERATOR(pg_catalog.<=) 10), pg_catalog.count(*) "
									  "FROM (SELECT name, pg_catalog.row_number() OVER (ORDER BY name) AS n FROM %s) s",
									  table),
							 0, NULL, NULL, NULL, true, 0);
	if (rc == SPI_OK_SELECT && SPI_processed == 1)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			list = TextDatumGetCString(d);
		total = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("%s \"%s\" does not exist", kind, name),
			 list == NULL ? errdetail("No %s exists yet.", kind)
			 : total > 10 ? errdetail("Existing %s names (first 10 of %lld): %s.", kind, (long long) total, list)
			 : errdetail("Existing %s names: %s.", kind, list),
			 is_bpe ? errhint("The name \"%s\" selects whitespace segmentation.", CORPQ_WHITESPACE) : 0));
	pg_unreachable();
}


void
corpq_catalog_require_owner(const CorpqCatalogKind *k, const char *name, const char *action)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	bool		isnull;

	if (corpq_sql_as_caller(psprintf("SELECT owner::pg_catalog.text, owner::pg_catalog.oid FROM %s "
									 "WHERE name OPERATOR(pg_catalog.=) $1", k->table),
							1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read %s", k->table);
	if (SPI_processed == 0)
	{
		if (k->list_names)
			corpq_undefined_name(k->kind, k->table, name);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("%s \"%s\" does not exist", k->kind, name)));
	}
	if (!corpq_caller_is_member(DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
															   SPI_tuptable->tupdesc, 2, &isnull))))
	{
		char	   *owner = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s %s \"%s\"", action, k->kind, name),
				 k->owner_detail ? errdetail(k->owner_detail, owner) : 0,
				 errhint("%s", k->owner_hint)));
	}
}

void
corpq_catalog_delete(const CorpqCatalogKind *k, const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};

	if (corpq_sql_as_owner(psprintf("DELETE FROM %s WHERE name OPERATOR(pg_catalog.=) $1", k->table),
						   1, argtypes, values, NULL, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete %s \"%s\"", k->kind, name);
}

void
corpq_catalog_drop(const CorpqCatalogKind *k, const char *name)
{
	corpq_catalog_require_owner(k, name, "drop");
	if (k->users_sql)
	{
		Oid			argtypes[1] = {TEXTOID};
		Datum		values[1] = {CStringGetTextDatum(name)};
		char	   *users;

		if (corpq_sql_as_caller(k->users_sql, 1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not look for what uses %s \"%s\"", k->kind, name);
		users = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		if (users != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("cannot drop %s \"%s\" because %s use it", k->kind, name, k->users),
					 errdetail("%c%s using it: %s.", pg_toupper((unsigned char) k->users[0]),
							   k->users + 1, users),
					 errhint("%s", k->users_hint)));
	}
	corpq_catalog_delete(k, name);
}
