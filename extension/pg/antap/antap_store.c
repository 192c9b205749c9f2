/*
 * ANTAP models in the catalog: the job's final write of a new version (the
 * model row created on first use and locked, the next version number the
 * name never issued (corpq_catalog_issue_version), both states'
 * weight files, every token's split and predictions in batches of arrays),
 * and corpq.antap_drop().  Checks first, then every write as the catalog
 * owner with the job's owner bound from its corpq.jobs row
 * (base/internal_sql.h).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "pg/base/catalog.h"
#include "pg/base/errors.h"
#include "pg/antap/antap.h"
#include "pg/base/internal_sql.h"

#define TOKEN_BATCH 10000

static const char *const split_names[] = {"train", "valid", "test"};

/* The model row's id, created if needed and locked; ERROR unless the job's owner may write it. */
static int64
lock_model(CorpqJob *job, const char *name)
{
	Oid			t1[2] = {TEXTOID, OIDOID};
	Datum		a1[2] = {CStringGetTextDatum(name), ObjectIdGetDatum(job->owner)};
	bool		isnull;
	Oid			owner;

	if (corpq_sql_as_owner("INSERT INTO corpq.antap_models (name, owner) "
						   "VALUES ($1, $2::pg_catalog.regrole) ON CONFLICT (name) DO NOTHING",
						   2, t1, a1, NULL, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into corpq.antap_models");
	if (corpq_sql_as_owner("SELECT id, owner::pg_catalog.oid FROM corpq.antap_models "
						   "WHERE name OPERATOR(pg_catalog.=) $1 FOR UPDATE",
						   1, t1, a1, NULL, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not lock ANTAP model \"%s\"", name);
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	if (!is_member_of_role(job->owner, owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to add a version to ANTAP model \"%s\"", name),
				 errhint("Only members of the model's owner role can train it.")));
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* A model's weight file as bytea, and its CRC-32 trailer. */
static bytea *
weight_file(const cq_antap_model *m, int64 *crc)
{
	size_t		size = cq_antap_file_size(m);
	bytea	   *b = palloc(VARHDRSZ + size);
	const unsigned char *p = (unsigned char *) VARDATA(b);
	cq_error	err = {0};

	if (cq_antap_file_write(m, VARDATA(b), size, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not write the ANTAP weight file");
	SET_VARSIZE(b, VARHDRSZ + size);
	*crc = (int64) ((uint32) p[size - 4] | (uint32) p[size - 3] << 8 |
					(uint32) p[size - 2] << 16 | (uint32) p[size - 1] << 24);
	return b;
}

static void
insert_version(const AntapResult *r, int64 id, int32 version)
{
	char		cfg[1024];
	Oid			t[10] = {INT8OID, INT4OID, TEXTOID, TEXTOID, BYTEAOID, BYTEAOID, INT8OID,
	INT8OID, TEXTOID, INT8OID};
	Datum		a[10];
	int64		crc_i,
				crc_ii;

	cq_antap_config_to_json(&r->state_i->cfg, cfg, sizeof(cfg));
	a[0] = Int64GetDatum(id);
	a[1] = Int32GetDatum(version);
	a[2] = CStringGetTextDatum(cfg);
	a[3] = CStringGetTextDatum(antap_options_json(r->opt));
	a[4] = PointerGetDatum(weight_file(r->state_i, &crc_i));
	a[5] = PointerGetDatum(weight_file(r->state_ii, &crc_ii));
	a[6] = Int64GetDatum(crc_i);
	a[7] = Int64GetDatum(crc_ii);
	a[8] = CStringGetTextDatum(r->result_json);
	a[9] = Int64GetDatum(r->job_id);
	if (corpq_sql_as_owner("INSERT INTO corpq.antap_versions (model, version, config, options, "
						   "state_i, state_ii, checksum_i, checksum_ii, result, job) "
						   "VALUES ($1, $2, $3::pg_catalog.jsonb, $4::pg_catalog.jsonb, $5, $6, $7, $8, "
						   "$9::pg_catalog.jsonb, $10)",
						   10, t, a, NULL, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into corpq.antap_versions");
	if (corpq_sql_as_owner("UPDATE corpq.antap_models SET updated = pg_catalog.now() "
						   "WHERE id OPERATOR(pg_catalog.=) $1", 1, t, a, NULL, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update corpq.antap_models");
}

/* Tokens [from, to) as arrays through unnest(). */
static void
insert_tokens(CorpqJob *job, const AntapResult *r, int64 id, int32 version, int from, int to)
{
	int			n = to - from;
	Datum	   *tok = palloc(sizeof(Datum) * n),
			   *spl = palloc(sizeof(Datum) * n),
			   *acc = palloc(sizeof(Datum) * n),
			   *p1 = palloc(sizeof(Datum) * n),
			   *p2 = palloc(sizeof(Datum) * n);
	Oid			t[7] = {INT8OID, INT4OID, TEXTARRAYOID, TEXTARRAYOID, FLOAT8ARRAYOID,
	FLOAT8ARRAYOID, FLOAT8ARRAYOID};
	Datum		a[7];

	for (int k = 0; k < n; k++)
	{
		int			i = from + k;

		tok[k] = CStringGetTextDatum(r->data->tokens[i]);
		spl[k] = CStringGetTextDatum(split_names[r->split[i]]);
		acc[k] = Float8GetDatum(r->data->accuracy[i]);
		p1[k] = Float8GetDatum((double) r->pred_i[i]);
		p2[k] = Float8GetDatum((double) r->pred_ii[i]);
	}
	a[0] = Int64GetDatum(id);
	a[1] = Int32GetDatum(version);
	a[2] = PointerGetDatum(construct_array(tok, n, TEXTOID, -1, false, TYPALIGN_INT));
	a[3] = PointerGetDatum(construct_array(spl, n, TEXTOID, -1, false, TYPALIGN_INT));
	a[4] = PointerGetDatum(construct_array(acc, n, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	a[5] = PointerGetDatum(construct_array(p1, n, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	a[6] = PointerGetDatum(construct_array(p2, n, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	if (corpq_sql_as_owner("INSERT INTO corpq.antap_tokens (model, version, token, split, accuracy, "
						   "predicted_i, predicted_ii) SELECT $1, $2, * FROM ROWS FROM "
						   "(pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5), "
						   "pg_catalog.unnest($6), pg_catalog.unnest($7))",
						   7, t, a, NULL, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into corpq.antap_tokens");
	corpq_job_progress(job, "writing", to, r->data->n, "tokens", NULL, false);
}

int32
antap_store(CorpqJob *job, const AntapResult *r)
{
	int64		id = lock_model(job, r->name);
	int32		version = corpq_catalog_issue_version(&corpq_kind_antap, id, r->name);
	MemoryContext batch = AllocSetContextCreate(CurrentMemoryContext, "ANTAP tokens",
												ALLOCSET_DEFAULT_SIZES);

	insert_version(r, id, version);
	for (int from = 0; from < r->data->n; from += TOKEN_BATCH)
	{
		MemoryContext old = MemoryContextSwitchTo(batch);

		insert_tokens(job, r, id, version, from, Min(r->data->n, from + TOKEN_BATCH));
		MemoryContextSwitchTo(old);
		MemoryContextReset(batch);
	}
	MemoryContextDelete(batch);
	return version;
}

PG_FUNCTION_INFO_V1(corpq_antap_drop);

/* corpq.antap_drop(name): owner only; versions and tokens go by cascade. */
Datum
corpq_antap_drop(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));

	corpq_catalog_drop(&corpq_kind_antap, name);
	PG_RETURN_VOID();
}
