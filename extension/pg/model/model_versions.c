/*
 * What a role stores (model.h): the storage quotas, corpq.max_models_per_role
 * and corpq.max_model_bytes_per_role (superuser settings: a DBA binds a role
 * with ALTER ROLE ... SET; the role cannot raise them), checked before a
 * model's catalog row or a version's image is written; and the writing of a
 * new version of a catalog model, which checks them.
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "pg/base/catalog.h"
#include "pg/base/internal_sql.h"
#include "pg/base/base.h"
#include "pg/model/model.h"
#include "pg/text/text.h"

int			corpq_max_models_per_role = 1000;
int			corpq_max_model_bytes_per_role = 16 * 1024;	/* MB */

void
corpq_model_quota_init(void)
{
	DefineCustomIntVariable("corpq.max_models_per_role",
							"Most models a role may own; -1: no limit.",
							"Superuser setting, also per role with ALTER ROLE ... SET: checked before "
							"model_create or model_import makes a new model of the role.",
							&corpq_max_models_per_role,
							1000, -1, INT_MAX,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("corpq.max_model_bytes_per_role",
							"Most bytes of weight images a role's models may store, all versions; -1: no limit.",
							"Superuser setting, also per role with ALTER ROLE ... SET: checked before any "
							"version is written (create, import, quantize, training checkpoints).",
							&corpq_max_model_bytes_per_role,
							16 * 1024, -1, INT_MAX / 2,
							PGC_SUSET, GUC_UNIT_MB,
							NULL, NULL, NULL);
}

void
corpq_model_quota_check(Oid owner, bool new_model, int64 new_bytes)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(owner)};
	bool		isnull;
	int64		models,
				bytes;
	double		limit = (double) corpq_max_model_bytes_per_role * 1024 * 1024;
	char	   *role;

	if (corpq_max_models_per_role < 0 && corpq_max_model_bytes_per_role < 0)
		return;
	/* every version of the role's models: a count over every row, as the owner */
	if (corpq_sql_as_owner("SELECT (SELECT pg_catalog.count(*) FROM corpq.model_catalog "
						   "        WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $1), "
						   "       (SELECT COALESCE(pg_catalog.sum(v.bytes), 0)::pg_catalog.int8 "
						   "          FROM corpq.model_versions v JOIN corpq.model_catalog c "
						   "            ON c.id OPERATOR(pg_catalog.=) v.model "
						   "         WHERE c.owner::pg_catalog.oid OPERATOR(pg_catalog.=) $1)",
						   1, argtypes, values, NULL, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not count the models of role %u", owner);
	models = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	bytes = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	role = GetUserNameFromId(owner, true);
	if (!role)
		role = psprintf("%u", owner);
	if (new_model && corpq_max_models_per_role >= 0 && models >= corpq_max_models_per_role)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("role \"%s\" owns %lld models, the most corpq.max_models_per_role (%d) allows",
						role, (long long) models, corpq_max_models_per_role),
				 errhint("Drop a model with corpq.model_drop, or ask a superuser to raise "
						 "corpq.max_models_per_role (ALTER ROLE ... SET).")));
	if (corpq_max_model_bytes_per_role >= 0 && (double) bytes + new_bytes > limit)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("a model version of %.1f MB would bring the models of role \"%s\" to %.1f MB, "
						"more than corpq.max_model_bytes_per_role (%d MB)",
						new_bytes / (1024.0 * 1024), role, (bytes + new_bytes) / (1024.0 * 1024),
						corpq_max_model_bytes_per_role),
				 errdetail("The role's models store %.1f MB in all their versions.",
						   bytes / (1024.0 * 1024)),
				 errhint("Drop models with corpq.model_drop, or ask a superuser to raise "
						 "corpq.max_model_bytes_per_role (ALTER ROLE ... SET).")));
}

int32
corpq_model_write_version(int64 model_id, bytea *weights, const char *source,
						  int64 step, Jsonb *metrics, bool best, bool int8)
{
	Oid			argtypes[9] = {INT8OID, BYTEAOID, INT8OID, TEXTOID, INT8OID, JSONBOID, BOOLOID, TEXTOID,
	INT4OID};
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	Size		len = VARSIZE_ANY_EXHDR(weights);
	const unsigned char *p = (const unsigned char *) VARDATA_ANY(weights);
	uint32		crc;
	bool		isnull;
	int32		version;
	char	   *name;
	Oid			owner;

	if (len < 4)
		elog(ERROR, "model weight image too short");
	crc = (uint32) p[len - 4] | (uint32) p[len - 3] << 8 |
		(uint32) p[len - 2] << 16 | (uint32) p[len - 1] << 24;
	values[0] = Int64GetDatum(model_id);
	values[1] = PointerGetDatum(weights);
	values[2] = Int64GetDatum((int64) crc);
	values[3] = CStringGetTextDatum(source);
	values[4] = Int64GetDatum(step);
	values[5] = PointerGetDatum(metrics);
	values[6] = BoolGetDatum(best);
	values[7] = CStringGetTextDatum(int8 ? "int8" : "float32");
	if (step < 0)
		nulls[4] = 'n';
	if (metrics == NULL)
		nulls[5] = 'n';

	SPI_connect();
	if (corpq_sql_as_caller("SELECT name, owner::pg_catalog.oid FROM corpq.model_catalog "
							"WHERE id OPERATOR(pg_catalog.=) $1",
							1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "model %lld does not exist", (long long) model_id);
	name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	if (!corpq_caller_is_member(owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to write a version of model \"%s\"", name),
				 errhint("Only members of the model's owner role can write versions.")));
	/* the owner's storage quota, before anything is written */
	corpq_model_quota_check(owner, false, (int64) len);
	/* Locks the model row: versions are numbered under it. */
	if (corpq_sql_as_owner("UPDATE corpq.model_catalog SET updated = pg_catalog.now() "
						   "WHERE id OPERATOR(pg_catalog.=) $1 RETURNING name",
						   1, argtypes, values, NULL, 0) != SPI_OK_UPDATE_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not update corpq.model_catalog");
	if (best &&
		corpq_sql_as_owner("UPDATE corpq.model_versions SET best = false "
						   "WHERE model OPERATOR(pg_catalog.=) $1 AND best",
						   1, argtypes, values, NULL, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update corpq.model_versions");
	version = corpq_catalog_issue_version(&corpq_kind_model, model_id, name);
	values[8] = Int32GetDatum(version);
	if (corpq_sql_as_owner("INSERT INTO corpq.model_versions "
						   "(model, version, weights, bytes, checksum, source, step, metrics, best, precision) "
						   "VALUES ($1, $9, $2, pg_catalog.length($2), $3, $4, $5, $6, $7, $8)",
						   9, argtypes, values, nulls, 0) != SPI_OK_INSERT ||
		SPI_processed != 1)
		elog(ERROR, "could not insert into corpq.model_versions");
	SPI_finish();
	return version;
}

bool
corpq_model_version_int8(int64 model_id, int32 version, int32 *from)
{
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2] = {Int64GetDatum(model_id), Int32GetDatum(version)};
	bool		int8 = false,
				isnull;

	*from = 0;
	SPI_connect();
	if (corpq_sql_as_caller("SELECT precision OPERATOR(pg_catalog.=) 'int8', "
							"(metrics OPERATOR(pg_catalog.->>) 'quantized_from')::pg_catalog.int4 "
							"FROM corpq.model_versions WHERE model OPERATOR(pg_catalog.=) $1 "
							"AND version OPERATOR(pg_catalog.=) $2",
							2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.model_versions");
	if (SPI_processed == 1)
	{
		Datum		f;

		int8 = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		f = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
		*from = isnull ? 0 : DatumGetInt32(f);
	}
	SPI_finish();
	return int8;
}
