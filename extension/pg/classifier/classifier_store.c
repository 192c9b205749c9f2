/*
 * Classifiers in the catalog: the job's final write of a new version (the
 * catalog row created on first use and locked, the next version number the
 * name never issued (corpq_catalog_issue_version), the serialised
 * classifier with its CRC-32 trailer, features, pinned models, options and
 * report), and corpq.classifier_drop().  Checks first, then every write as
 * the catalog owner with the job's owner bound from its corpq.jobs row
 * (base/internal_sql.h).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "pg/base/catalog.h"
#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "curate/classifier.h"
#include "pg/classifier/classifier.h"

/* The catalog row's id, created if needed and locked; ERROR unless the job's owner may write it. */
static int64
lock_classifier(CorpqJob *job, const char *name)
{
	Oid			t1[2] = {TEXTOID, OIDOID};
	Datum		a1[2] = {CStringGetTextDatum(name), ObjectIdGetDatum(job->owner)};
	bool		isnull;
	Oid			owner;

	if (corpq_sql_as_owner("INSERT INTO corpq.classifier_catalog (name, owner) "
						   "VALUES ($1, $2::pg_catalog.regrole) ON CONFLICT (name) DO NOTHING",
						   2, t1, a1, NULL, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into corpq.classifier_catalog");
	if (corpq_sql_as_owner("SELECT id, owner::pg_catalog.oid FROM corpq.classifier_catalog "
						   "WHERE name OPERATOR(pg_catalog.=) $1 FOR UPDATE",
						   1, t1, a1, NULL, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not lock classifier \"%s\"", name);
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	if (!is_member_of_role(job->owner, owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to add a version to classifier \"%s\"", name),
				 errhint("Only members of the classifier's owner role can train it.")));
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* The serialised classifier as bytea, and its CRC-32 trailer. */
static bytea *
classifier_bytes(const cq_classifier *c, int64 *crc)
{
	size_t		size = cq_classifier_size(c);
	bytea	   *b = palloc(VARHDRSZ + size);
	const unsigned char *p = (unsigned char *) VARDATA(b);
	cq_error	err = {0};

	if (cq_classifier_write(c, (unsigned char *) VARDATA(b), size, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not serialise the classifier");
	SET_VARSIZE(b, VARHDRSZ + size);
	*crc = (int64) ((uint32) p[size - 4] | (uint32) p[size - 3] << 8 |
					(uint32) p[size - 2] << 16 | (uint32) p[size - 1] << 24);
	return b;
}

/* The feature names in layout order. */
static ArrayType *
feature_names(const cq_classifier *c)
{
	Datum	   *names = palloc(sizeof(Datum) * c->d);

	for (int j = 0; j < c->d; j++)
		names[j] = CStringGetTextDatum(cq_feature_name(cq_feature_at(&c->fs, j)));
	return construct_array(names, c->d, TEXTOID, -1, false, TYPALIGN_INT);
}

int32
classifier_store(CorpqJob *job, const ClassifierResult *r)
{
	int64		id = lock_classifier(job, r->name);
	int32		version = corpq_catalog_issue_version(&corpq_kind_classifier, id, r->name);
	Oid			t[10] = {INT8OID, INT4OID, BYTEAOID, INT8OID, TEXTOID, TEXTARRAYOID, TEXTOID,
	TEXTOID, TEXTOID, INT8OID};
	Datum		a[10];
	int64		crc;

	a[0] = Int64GetDatum(id);
	a[1] = Int32GetDatum(version);
	a[2] = PointerGetDatum(classifier_bytes(r->c, &crc));
	a[3] = Int64GetDatum(crc);
	a[4] = CStringGetTextDatum(r->c->kind == CQ_CLASSIFIER_TREES ? "trees" : "logistic");
	a[5] = PointerGetDatum(feature_names(r->c));
	a[6] = CStringGetTextDatum(curate_models_json(&r->opt->models));
	a[7] = CStringGetTextDatum(classifier_options_json(r->opt));
	a[8] = CStringGetTextDatum(r->report_json);
	a[9] = Int64GetDatum(r->job_id);
	if (corpq_sql_as_owner("INSERT INTO corpq.classifier_versions (model, version, classifier, "
						   "checksum, kind, features, models, options, report, job) "
						   "VALUES ($1, $2, $3, $4, $5, $6, $7::pg_catalog.jsonb, "
						   "$8::pg_catalog.jsonb, $9::pg_catalog.jsonb, $10)",
						   10, t, a, NULL, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into corpq.classifier_versions");
	if (corpq_sql_as_owner("UPDATE corpq.classifier_catalog SET updated = pg_catalog.now() "
						   "WHERE id OPERATOR(pg_catalog.=) $1", 1, t, a, NULL, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update corpq.classifier_catalog");
	return version;
}

PG_FUNCTION_INFO_V1(corpq_classifier_drop);

/* corpq.classifier_drop(name): owner only; versions go by cascade. */
Datum
corpq_classifier_drop(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));

	corpq_catalog_drop(&corpq_kind_classifier, name);
	PG_RETURN_VOID();
}
