/*
 * The catalog kinds and the checks they share (catalog.h).
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

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
	NULL, "Only members of the model's owner role can drop it.",
	NULL, NULL, NULL, "corpq.model_versions"
};
const CorpqCatalogKind corpq_kind_lexicon = {
	"lexicon", "corpq.lexicons", "corpq.lexicon_drop", false,
	NULL, "Only members of the lexicon's owner role can drop it."
};
const CorpqCatalogKind corpq_kind_antap = {
	"ANTAP model", "corpq.antap_models", "corpq.antap_drop", false,
	NULL, "Only members of the model's owner role can drop it.",
	NULL, NULL, NULL, "corpq.antap_versions"
};
const CorpqCatalogKind corpq_kind_classifier = {
	"classifier", "corpq.classifier_catalog", "corpq.classifier_drop", false,
	NULL, "Only members of the classifier's owner role can drop it.",
	NULL, NULL, NULL, "corpq.classifier_versions"
};

bool
corpq_catalog_exists(const CorpqCatalogKind *k, const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	bool		found;

	SPI_connect();
	if (corpq_sql_as_caller(psprintf("SELECT 1 FROM %s WHERE name OPERATOR(pg_catalog.=) $1",
									 k->table),
							1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read %s", k->table);
	found = SPI_processed > 0;
	SPI_finish();
	return found;
}

void
corpq_check_new_name(const CorpqCatalogKind *k, const char *name)
{
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s name must not be empty", k->kind)));
	if (corpq_catalog_exists(k, name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("%s \"%s\" already exists", k->kind, name),
				 errhint("Drop it first with SELECT %s(%s).", k->drop_fn,
						 quote_literal_cstr(name))));
}

void
corpq_undefined_name(const CorpqCatalogKind *k, const char *name)
{
	char	   *list = NULL;
	int64		total = 0;
	int			rc;
	bool		isnull;

	SPI_connect();
	rc = corpq_sql_as_caller(psprintf("SELECT pg_catalog.string_agg(name, ', ' ORDER BY name) "
									  "FILTER (WHERE n OPERATOR(pg_catalog.<=) 10), pg_catalog.count(*) "
									  "FROM (SELECT name, pg_catalog.row_number() OVER (ORDER BY name) AS n FROM %s) s",
									  k->table),
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
			 errmsg("%s \"%s\" does not exist", k->kind, name),
			 list == NULL ? errdetail("No %s exists yet.", k->kind)
			 : total > 10 ? errdetail("Existing %s names (first 10 of %lld): %s.", k->kind, (long long) total, list)
			 : errdetail("Existing %s names: %s.", k->kind, list),
			 k == &corpq_kind_bpe
			 ? errhint("The name \"%s\" selects whitespace segmentation.", CORPQ_WHITESPACE) : 0));
	pg_unreachable();
}

/* corpq_catalog_row with more parameters than the name ($1). */
static HeapTuple
catalog_row(const CorpqCatalogKind *k, const char *sql, const char *name,
			int nargs, Oid *argtypes, Datum *values, const char *nulls)
{
	if (corpq_sql_as_caller(sql, nargs, argtypes, values, nulls, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read %s", k->table);
	if (SPI_processed == 0)
		corpq_undefined_name(k, name);
	return SPI_tuptable->vals[0];
}

HeapTuple
corpq_catalog_row(const CorpqCatalogKind *k, const char *sql, const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};

	return catalog_row(k, sql, name, 1, argtypes, values, NULL);
}

Datum
corpq_catalog_value(const CorpqCatalogKind *k, const char *column, const char *name,
					bool *isnull)
{
	HeapTuple	row = corpq_catalog_row(k, psprintf("SELECT %s FROM %s c "
													"WHERE c.name OPERATOR(pg_catalog.=) $1",
													column, k->table),
										name);

	return SPI_getbinval(row, SPI_tuptable->tupdesc, 1, isnull);
}

/*
 * ERROR (undefined_object) "<kind> "name" has no version N", the DETAIL
 * listing the versions of the row with this id.
 */
static void
version_missing(const CorpqCatalogKind *k, int64 id, const char *name, int32 version)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(id)};
	bool		isnull;
	char	   *list = NULL;

	if (corpq_sql_as_caller(psprintf("SELECT pg_catalog.string_agg(version::pg_catalog.text, ', ' ORDER BY version) "
									 "FROM %s WHERE model OPERATOR(pg_catalog.=) $1", k->versions),
							1, argtypes, values, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			list = TextDatumGetCString(d);
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("%s \"%s\" has no version %d", k->kind, name, version),
			 list ? errdetail("Its versions are %s.", list)
			 : errdetail("It has no versions."),
			 errhint("Write \"%s\" for the latest version or \"%s@N\" for version N.",
					 name, name)));
}

/*
 * Whether this database's catalog has corpq.issued_versions: not between
 * installing this library and ALTER EXTENSION corpq UPDATE from 0.1.0.
 * Such a catalog kept no dropped number (0.1.0 reused them), so a pin has
 * nothing to be checked against, and reading name@N -- in a view, an index
 * -- keeps working until the update; issuing a version needs the table.
 */
static bool
has_issued_versions(void)
{
	return OidIsValid(get_relname_relid("issued_versions", corpq_schema_oid()));
}

/*
 * ERROR when version of name was issued but is gone: dropped with its row,
 * or pruned.  Its number is never given to other weights, so a pin on it --
 * in an index, a view, a job -- fails rather than compute with others.
 */
static void
check_not_dropped(const CorpqCatalogKind *k, const char *name, int32 version)
{
	Oid			argtypes[3] = {TEXTOID, TEXTOID, INT4OID};
	Datum		values[3] = {CStringGetTextDatum(k->table), CStringGetTextDatum(name),
	Int32GetDatum(version)};

	if (!has_issued_versions())
		return;
	if (corpq_sql_as_caller(psprintf("SELECT 1 FROM corpq.issued_versions n "
									 "WHERE n.catalog OPERATOR(pg_catalog.=) $1 "
									 "AND n.name OPERATOR(pg_catalog.=) $2 "
									 "AND n.last_version OPERATOR(pg_catalog.>=) $3 "
									 "AND NOT EXISTS (SELECT FROM %s c JOIN %s v ON v.model OPERATOR(pg_catalog.=) c.id "
									 "  WHERE c.name OPERATOR(pg_catalog.=) $2 AND v.version OPERATOR(pg_catalog.=) $3)",
									 k->table, k->versions),
							3, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.issued_versions");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("version %d of %s \"%s\" was dropped", version, k->kind, name),
				 errdetail("corpq never gives a version number to other weights: \"%s@%d\" stays an error, "
						   "whatever %s now has the name.", name, version, k->kind),
				 errhint("Pin a version that exists (%s), and rebuild what was computed "
						 "with this one.", k->versions)));
}

int32
corpq_catalog_issue_version(const CorpqCatalogKind *k, int64 id, const char *name)
{
	Oid			argtypes[3] = {INT8OID, TEXTOID, TEXTOID};
	Datum		values[3] = {Int64GetDatum(id), CStringGetTextDatum(name), CStringGetTextDatum(k->table)};
	bool		isnull;

	Assert(k->versions != NULL);
	if (corpq_sql_as_owner(psprintf("INSERT INTO corpq.issued_versions AS n (catalog, name, last_version) "
									"SELECT $3, $2, COALESCE(pg_catalog.max(v.version), 0) OPERATOR(pg_catalog.+) 1 "
									"FROM %s v WHERE v.model OPERATOR(pg_catalog.=) $1 "
									"ON CONFLICT (catalog, name) DO UPDATE SET last_version = "
									"GREATEST(n.last_version OPERATOR(pg_catalog.+) 1, EXCLUDED.last_version) "
									"RETURNING n.last_version", k->versions),
						   3, argtypes, values, NULL, 0) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not number a version of %s \"%s\"", k->kind, name);
	return DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * Before a row with versions is deleted: corpq.issued_versions keeps its
 * highest version, so a row created again under the name numbers after it.
 * Versions corpq wrote are counted there already; this also counts rows a
 * DBA copied into the versions table directly.
 */
static void
retire_versions(const CorpqCatalogKind *k, const char *name)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {CStringGetTextDatum(name), CStringGetTextDatum(k->table)};

	if (corpq_sql_as_owner(psprintf("INSERT INTO corpq.issued_versions AS n (catalog, name, last_version) "
									"SELECT $2, c.name, pg_catalog.max(v.version) FROM %s c "
									"JOIN %s v ON v.model OPERATOR(pg_catalog.=) c.id "
									"WHERE c.name OPERATOR(pg_catalog.=) $1 GROUP BY c.name "
									"ON CONFLICT (catalog, name) DO UPDATE SET last_version = "
									"GREATEST(n.last_version, EXCLUDED.last_version)",
									k->table, k->versions),
						   2, argtypes, values, NULL, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the versions of %s \"%s\"", k->kind, name);
}

HeapTuple
corpq_catalog_version(const CorpqCatalogKind *k, const char *columns,
					  const char *name, int32 version)
{
	Oid			argtypes[2] = {TEXTOID, INT4OID};
	Datum		values[2] = {CStringGetTextDatum(name), Int32GetDatum(version)};
	char		nulls[2] = {' ', version == 0 ? 'n' : ' '};
	HeapTuple	row;
	bool		isnull;

	Assert(k->versions != NULL);
	if (version > 0)
		check_not_dropped(k, name, version);
	/* the catalog row with no version still comes back: an unknown version is not an unknown name */
	row = catalog_row(k, psprintf("SELECT c.id, v.version%s%s FROM %s c "
								  "LEFT JOIN %s v ON v.model OPERATOR(pg_catalog.=) c.id "
								  "AND ($2 IS NULL OR v.version OPERATOR(pg_catalog.=) $2) "
								  "WHERE c.name OPERATOR(pg_catalog.=) $1 "
								  "ORDER BY v.version DESC NULLS LAST LIMIT 1",
								  columns[0] ? ", " : "", columns, k->table, k->versions),
					  name, 2, argtypes, values, nulls);
	(void) SPI_getbinval(row, SPI_tuptable->tupdesc, 2, &isnull);
	if (isnull)
		version_missing(k, DatumGetInt64(SPI_getbinval(row, SPI_tuptable->tupdesc, 1, &isnull)),
						name, version);
	return row;
}

/*
 * Whether name exists in k; when it does, ERROR (hint) unless the caller is
 * a member of its owner role.
 */
static bool
owner_check(const CorpqCatalogKind *k, const char *name, const char *action,
			const char *hint, bool read_only)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	HeapTuple	row;
	bool		isnull;

	if (corpq_sql_as_caller(psprintf("SELECT owner::pg_catalog.text, owner::pg_catalog.oid FROM %s "
									 "WHERE name OPERATOR(pg_catalog.=) $1", k->table),
							1, argtypes, values, NULL, read_only, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read %s", k->table);
	if (SPI_processed == 0)
		return false;
	row = SPI_tuptable->vals[0];
	if (!corpq_caller_is_member(DatumGetObjectId(SPI_getbinval(row, SPI_tuptable->tupdesc, 2, &isnull))))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s %s \"%s\"", action, k->kind, name),
				 k->owner_detail
				 ? errdetail(k->owner_detail, SPI_getvalue(row, SPI_tuptable->tupdesc, 1)) : 0,
				 errhint("%s", hint)));
	return true;
}

void
corpq_catalog_require_owner(const CorpqCatalogKind *k, const char *name, const char *action)
{
	if (owner_check(k, name, action, k->owner_hint, false))
		return;
	if (k->list_names)
		corpq_undefined_name(k, name);
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("%s \"%s\" does not exist", k->kind, name)));
}

bool
corpq_catalog_check_writer(const CorpqCatalogKind *k, const char *name,
						   const char *action, const char *hint)
{
	bool		exists;

	SPI_connect();
	exists = owner_check(k, name, action, hint, true);
	SPI_finish();
	return exists;
}

void
corpq_catalog_store(const char *row_sql, int nargs, Oid *argtypes, Datum *values,
					const char *nulls, const char *items_into, Oid *item_types, Datum *items)
{
	Oid			i_types[3] = {argtypes[0], item_types[0], item_types[1]};
	Datum		i_vals[3] = {values[0], items[0], items[1]};
	int			rc;

	SPI_connect();
	rc = corpq_sql_as_owner(row_sql, nargs, argtypes, values, nulls, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	/* both arrays unnested in step: the ordinality is the position */
	rc = corpq_sql_as_owner(psprintf("INSERT INTO %s "
									 "SELECT $1, (u.o OPERATOR(pg_catalog.-) 1)::pg_catalog.int4, u.a, u.b "
									 "FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3)) "
									 "WITH ORDINALITY AS u(a, b, o)", items_into),
							3, i_types, i_vals, NULL, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	SPI_finish();
}

void
corpq_catalog_delete(const CorpqCatalogKind *k, const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};

	if (k->versions)
		retire_versions(k, name);
	if (corpq_sql_as_owner(psprintf("DELETE FROM %s WHERE name OPERATOR(pg_catalog.=) $1", k->table),
						   1, argtypes, values, NULL, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete %s \"%s\"", k->kind, name);
}

/* ERROR (dependent_objects_still_exist) if rows of other kinds use name. */
static void
check_unused(const CorpqCatalogKind *k, const char *name)
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

void
corpq_catalog_drop(const CorpqCatalogKind *k, const char *name)
{
	SPI_connect();
	corpq_catalog_require_owner(k, name, "drop");
	if (k->users_sql)
		check_unused(k, name);
	corpq_catalog_delete(k, name);
	SPI_finish();
}
