/*
 * Storage quotas of a role's models (model.h): corpq.max_models_per_role
 * and corpq.max_model_bytes_per_role, superuser settings (a DBA binds a role
 * with ALTER ROLE ... SET; the role cannot raise them), checked before a
 * model's catalog row or a version's image is written.
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "pg/base/internal_sql.h"
#include "pg/model/model.h"

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
