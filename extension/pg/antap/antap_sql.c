/*
 * ANTAP models from SQL: name resolution ("name" = the latest version,
 * "name@N" = version N), corpq.antap_predict() and corpq.antap_eval().
 *
 * antap_predict keeps, for the query (fn_extra), every name it resolved (so
 * the query keeps the version it started with), the loaded weights of the
 * current (version, state), a pass of one token and the cav input cache.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "antap/pass.h"
#include "pg/antap/antap.h"
#include "pg/base/catalog.h"
#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/base/base.h"
#include "pg/model/model.h"
#include "pg/text/text.h"

PG_FUNCTION_INFO_V1(corpq_antap_predict);
PG_FUNCTION_INFO_V1(corpq_antap_eval);

void
antap_check_name(const char *name)
{
	if (name[0] == '\0' || strchr(name, '@') != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid ANTAP model name \"%s\"", name),
				 errhint("A name is not empty and has no \"@\" (name@N selects version N).")));
}

void
antap_resolve(const char *spec, AntapRef *ref)
{
	MemoryContext caller = CurrentMemoryContext;
	int			name_len;
	int32		version = 0;
	char	   *name;
	HeapTuple	row;
	bool		isnull;

	if (corpq_model_split_spec(spec, &name_len, &version))
		name = pnstrdup(spec, name_len);
	else
	{
		name = pstrdup(spec);
		antap_check_name(name);
	}
	SPI_connect();
	row = corpq_catalog_version(&corpq_kind_antap, "", name, version);
	ref->id = DatumGetInt64(SPI_getbinval(row, SPI_tuptable->tupdesc, 1, &isnull));
	ref->version = DatumGetInt32(SPI_getbinval(row, SPI_tuptable->tupdesc, 2, &isnull));
	ref->name = MemoryContextStrdup(caller, name);
	SPI_finish();
}

/* 0 for State I, 1 for State II. */
static int
parse_state(text *t)
{
	char	   *s = text_to_cstring(t);

	if (strcmp(s, "I") == 0)
		return 0;
	if (strcmp(s, "II") == 0)
		return 1;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid ANTAP state \"%s\"", s),
			 errhint("State 'I' is the best validation checkpoint, 'II' the last one.")));
	pg_unreachable();
}

/* The weights of (ref, state) from the catalog, loaded in CurrentMemoryContext. */
static cq_antap_model *
load_state(const AntapRef *ref, int state)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2] = {Int64GetDatum(ref->id), Int32GetDatum(ref->version)};
	cq_antap_model *m;
	bytea	   *w;
	bool		isnull;
	cq_error	err = {0};

	SPI_connect();
	if (corpq_sql_as_caller(state == 0
							? "SELECT state_i FROM corpq.antap_versions "
							"WHERE model OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2"
							: "SELECT state_ii FROM corpq.antap_versions "
							"WHERE model OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2",
							2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read version %d of ANTAP model \"%s\"", ref->version, ref->name);
	w = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	MemoryContextSwitchTo(caller);
	if (cq_antap_file_load(VARDATA_ANY(w), VARSIZE_ANY_EXHDR(w), &m, &err) != CQ_OK)
	{
		/* it was valid when the job stored it */
		err.code = CQ_ECORRUPT;
		corpq_core_error(&err, NULL, "could not load version %d of ANTAP model \"%s\"",
						 ref->version, ref->name);
	}
	SPI_finish();
	return m;
}

typedef struct Resolved
{
	char	   *spec;
	AntapRef	ref;
} Resolved;

typedef struct PredictCache
{
	MemoryContext cxt;
	List	   *resolved;		/* Resolved * */
	Resolved   *cur;
	int			state;
	MemoryContext model_cxt;	/* the loaded model and its pass */
	cq_antap_model *model;
	cq_antap_pass *pass;
	float	   *x;
	AntapCavCache cav;
} PredictCache;

static Resolved *
resolve_cached(PredictCache *c, const char *spec)
{
	ListCell   *lc;
	Resolved   *r;
	MemoryContext old;

	foreach(lc, c->resolved)
	{
		r = lfirst(lc);
		if (strcmp(r->spec, spec) == 0)
			return r;
	}
	old = MemoryContextSwitchTo(c->cxt);
	r = palloc(sizeof(*r));
	r->spec = pstrdup(spec);
	antap_resolve(spec, &r->ref);
	c->resolved = lappend(c->resolved, r);
	MemoryContextSwitchTo(old);
	return r;
}

/* Make (spec, state) current, loading its weights when they change. */
static void
use_model(PredictCache *c, const char *spec, int state)
{
	Resolved   *r = resolve_cached(c, spec);
	MemoryContext old;
	cq_error	err = {0};

	if (c->model && c->state == state && c->cur->ref.id == r->ref.id &&
		c->cur->ref.version == r->ref.version)
	{
		c->cur = r;
		return;
	}
	MemoryContextReset(c->model_cxt);
	c->model = NULL;
	old = MemoryContextSwitchTo(c->model_cxt);
	c->model = load_state(&r->ref, state);
	if (cq_antap_pass_new(&c->model->cfg, 1, &c->pass, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not prepare ANTAP model \"%s\"", r->ref.name);
	c->x = palloc(sizeof(float) * c->model->cfg.pool_rows * c->model->cfg.pool_cols);
	MemoryContextSwitchTo(old);
	c->cur = r;
	c->state = state;
}

static PredictCache *
predict_cache(FunctionCallInfo fcinfo)
{
	PredictCache *c = fcinfo->flinfo->fn_extra;

	if (c == NULL)
	{
		c = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(*c));
		c->cxt = fcinfo->flinfo->fn_mcxt;
		c->model_cxt = AllocSetContextCreate(c->cxt, "ANTAP model", ALLOCSET_SMALL_SIZES);
		antap_cav_cache_init(&c->cav, c->cxt);
		fcinfo->flinfo->fn_extra = c;
	}
	return c;
}

/* corpq.antap_predict(name, cav, token, state): NULL when the CAV has no matrix for token */
Datum
corpq_antap_predict(PG_FUNCTION_ARGS)
{
	PredictCache *c = predict_cache(fcinfo);
	text	   *tok = PG_GETARG_TEXT_PP(2);
	float		out;

	use_model(c, text_to_cstring(PG_GETARG_TEXT_PP(0)), parse_state(PG_GETARG_TEXT_PP(3)));
	if (!antap_cav_input(&c->cav, PG_GETARG_DATUM(1), VARDATA_ANY(tok), VARSIZE_ANY_EXHDR(tok),
						 c->model->cfg.pool_rows, c->model->cfg.pool_cols, c->x))
		PG_RETURN_NULL();
	corpq_blas_ensure();
	cq_antap_forward(c->model, c->pass, c->x, 1, &out);
	PG_RETURN_FLOAT8((double) out);
}

/*
 * corpq.antap_eval(name) -> (split, state, mse, mae, rmse, r2), recomputed
 * in SQL from corpq.antap_tokens: R^2 = 1 - SSE / SST about the split's mean.
 */
Datum
corpq_antap_eval(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	AntapRef	ref;
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2];

	antap_resolve(text_to_cstring(PG_GETARG_TEXT_PP(0)), &ref);
	InitMaterializedSRF(fcinfo, 0);
	values[0] = Int64GetDatum(ref.id);
	values[1] = Int32GetDatum(ref.version);
	SPI_connect();
	if (corpq_sql_as_caller("SELECT t.split, s.state, "
							"pg_catalog.avg((s.p - t.accuracy) ^ 2), "
							"pg_catalog.avg(pg_catalog.abs(s.p - t.accuracy)), "
							"pg_catalog.sqrt(pg_catalog.avg((s.p - t.accuracy) ^ 2)), "
							"1 - pg_catalog.sum((s.p - t.accuracy) ^ 2) "
							"/ NULLIF(pg_catalog.var_pop(t.accuracy) * pg_catalog.count(*), 0) "
							"FROM corpq.antap_tokens t CROSS JOIN LATERAL "
							"(VALUES ('I', t.predicted_i), ('II', t.predicted_ii)) s(state, p) "
							"WHERE t.model OPERATOR(pg_catalog.=) $1 AND t.version OPERATOR(pg_catalog.=) $2 "
							"GROUP BY t.split, s.state "
							"ORDER BY pg_catalog.array_position(ARRAY['train', 'valid', 'test'], t.split), s.state",
							2, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.antap_tokens");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		row[6];
		bool		nulls[6];

		for (int k = 0; k < 6; k++)
			row[k] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, k + 1, &nulls[k]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
	}
	SPI_finish();
	return (Datum) 0;
}
