/*
 * Classifiers from SQL: name resolution ("name" = the latest version,
 * "name@N" = version N), corpq.pair_quality() on a name or a pinned
 * version, corpq.classifier_features().
 *
 * Each function keeps, for the query (fn_extra), every spec it resolved
 * with its loaded classifier and feature computer (so the query keeps the
 * version it started with, and the model functions' own caches serve every
 * row).  A pair's probability depends on that pair alone: the result is the
 * same whatever the batch or plan.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "pg/base/catalog.h"
#include "pg/base/errors.h"
#include "pg/base/options.h"
#include "curate/classifier.h"
#include "pg/classifier/classifier.h"
#include "pg/model/model.h"

PG_FUNCTION_INFO_V1(corpq_pair_quality);
PG_FUNCTION_INFO_V1(corpq_pair_quality_pinned);
PG_FUNCTION_INFO_V1(corpq_classifier_features);

void
classifier_check_name(const char *name)
{
	if (name[0] == '\0' || strchr(name, '@') != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid classifier name \"%s\"", name),
				 errhint("A name is not empty and has no \"@\" (name@N selects version N).")));
}

char *
classifier_pin(const char *spec)
{
	MemoryContext caller = CurrentMemoryContext;
	int			name_len;
	int32		version = 0;
	char	   *name;
	char	   *pinned;
	HeapTuple	row;
	bool		isnull;

	if (corpq_model_split_spec(spec, &name_len, &version))
		name = pnstrdup(spec, name_len);
	else
	{
		name = pstrdup(spec);
		classifier_check_name(name);
	}
	SPI_connect();
	row = corpq_catalog_version(&corpq_kind_classifier, "", name, version);
	version = DatumGetInt32(SPI_getbinval(row, SPI_tuptable->tupdesc, 2, &isnull));
	SPI_finish();
	pinned = MemoryContextAlloc(caller, strlen(name) + 16);
	sprintf(pinned, "%s@%d", name, version);
	return pinned;
}

/* A resolved spec and what it loaded. */
typedef struct Loaded
{
	char	   *spec;
	char	   *name;
	int32		version;
	cq_classifier c;			/* the core's allocation: freed with the cache */
	CurateFeatures *features;
	double	   *x;
	bool	   *null;
} Loaded;

typedef struct QualityCache
{
	MemoryContext cxt;
	List	   *loaded;			/* Loaded * */
	MemoryContextCallback free_cb;
} QualityCache;

static void
free_loaded(void *arg)
{
	QualityCache *q = arg;
	ListCell   *lc;

	foreach(lc, q->loaded)
		cq_classifier_free(&((Loaded *) lfirst(lc))->c);
	q->loaded = NIL;
}

/* Resolve spec and load its version into l (allocations in cxt). */
static void
load(const char *spec, bool pinned, Loaded *l, MemoryContext cxt)
{
	int			name_len;
	int32		version = 0;
	char	   *name;
	HeapTuple	row;
	bool		isnull;
	bytea	   *bytes;
	char	   *models_json;
	CurateModels models;
	cq_error	err = {0};
	MemoryContext old;

	if (corpq_model_split_spec(spec, &name_len, &version))
		name = pnstrdup(spec, name_len);
	else if (pinned)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid pinned classifier \"%s\"", spec),
				 errhint("A pinned classifier is written name@N with a version N >= 1.")));
	else
	{
		name = pstrdup(spec);
		classifier_check_name(name);
	}
	SPI_connect();
	row = corpq_catalog_version(&corpq_kind_classifier, "v.classifier, v.models::pg_catalog.text",
								name, version);
	old = MemoryContextSwitchTo(cxt);
	l->spec = pstrdup(spec);
	l->name = pstrdup(name);
	l->version = DatumGetInt32(SPI_getbinval(row, SPI_tuptable->tupdesc, 2, &isnull));
	bytes = DatumGetByteaPP(SPI_getbinval(row, SPI_tuptable->tupdesc, 3, &isnull));
	models_json = TextDatumGetCString(SPI_getbinval(row, SPI_tuptable->tupdesc, 4, &isnull));
	if (cq_classifier_read((const unsigned char *) VARDATA_ANY(bytes), VARSIZE_ANY_EXHDR(bytes),
						   &l->c, &err) != CQ_OK)
	{
		/* it was valid when the job stored it */
		err.code = CQ_ECORRUPT;
		corpq_core_error(&err, NULL, "could not read version %d of classifier \"%s\"",
						 l->version, name);
	}
	curate_models_parse(models_json, &models);
	MemoryContextSwitchTo(old);
	SPI_finish();
	l->features = curate_features_create(&l->c.fs, &models, cxt);
	l->x = MemoryContextAlloc(cxt, sizeof(double) * l->c.d);
	l->null = MemoryContextAlloc(cxt, sizeof(bool) * l->c.d);
}

/* The loaded version of spec for this query. */
static Loaded *
cached(FunctionCallInfo fcinfo, const char *spec, bool pinned)
{
	QualityCache *q = fcinfo->flinfo->fn_extra;
	ListCell   *lc;
	Loaded	   *l;

	if (q == NULL)
	{
		MemoryContext cxt = AllocSetContextCreate(fcinfo->flinfo->fn_mcxt,
												  "corpq pair_quality", ALLOCSET_SMALL_SIZES);

		q = MemoryContextAllocZero(cxt, sizeof(QualityCache));
		q->cxt = cxt;
		q->free_cb.func = free_loaded;
		q->free_cb.arg = q;
		MemoryContextRegisterResetCallback(cxt, &q->free_cb);
		fcinfo->flinfo->fn_extra = q;
	}
	foreach(lc, q->loaded)
	{
		l = lfirst(lc);
		if (strcmp(l->spec, spec) == 0)
			return l;
	}
	l = MemoryContextAllocZero(q->cxt, sizeof(Loaded));
	load(spec, pinned, l, q->cxt);
	{
		MemoryContext old = MemoryContextSwitchTo(q->cxt);

		q->loaded = lappend(q->loaded, l);
		MemoryContextSwitchTo(old);
	}
	return l;
}

/* THE probability of a pair: false when a model feature is NULL. */
static bool
loaded_prob(Loaded *l, text *src, text *tgt, double *p)
{
	if (!curate_features_compute(l->features, src, tgt, l->x, NULL))
		return false;
	*p = cq_classifier_prob(&l->c, l->x);
	return true;
}

static Datum
pair_quality(FunctionCallInfo fcinfo, bool pinned)
{
	Loaded	   *l = cached(fcinfo, text_to_cstring(PG_GETARG_TEXT_PP(0)), pinned);
	double		p;

	if (!loaded_prob(l, PG_GETARG_TEXT_PP(1), PG_GETARG_TEXT_PP(2), &p))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(p);
}

struct ClassifierScorer
{
	MemoryContext cxt;
	Loaded		l;
	MemoryContextCallback free_cb;
};

static void
free_scorer(void *arg)
{
	cq_classifier_free(&((ClassifierScorer *) arg)->l.c);
}

ClassifierScorer *
classifier_scorer_open(const char *pinned, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "corpq classifier scorer",
											  ALLOCSET_SMALL_SIZES);
	ClassifierScorer *s = MemoryContextAllocZero(cxt, sizeof(ClassifierScorer));

	s->cxt = cxt;
	/* first: a load that fails after reading the classifier frees it too (l.c is zeroed) */
	s->free_cb.func = free_scorer;
	s->free_cb.arg = s;
	MemoryContextRegisterResetCallback(cxt, &s->free_cb);
	load(pinned, true, &s->l, cxt);
	return s;
}

bool
classifier_scorer_prob(ClassifierScorer *s, text *src, text *tgt, double *p)
{
	return loaded_prob(&s->l, src, tgt, p);
}

void
classifier_scorer_close(ClassifierScorer *s)
{
	MemoryContextDelete(s->cxt);
}

Datum
corpq_pair_quality(PG_FUNCTION_ARGS)
{
	return pair_quality(fcinfo, false);
}

Datum
corpq_pair_quality_pinned(PG_FUNCTION_ARGS)
{
	return pair_quality(fcinfo, true);
}

Datum
corpq_classifier_features(PG_FUNCTION_ARGS)
{
	Loaded	   *l = cached(fcinfo, text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	StringInfoData b;

	(void) curate_features_compute(l->features, PG_GETARG_TEXT_PP(1), PG_GETARG_TEXT_PP(2),
								   l->x, l->null);
	initStringInfo(&b);
	appendStringInfoChar(&b, '{');
	for (int j = 0; j < l->c.d; j++)
	{
		appendStringInfo(&b, "%s\"%s\": ", j ? ", " : "",
						 cq_feature_name(cq_feature_at(&l->c.fs, j)));
		if (l->null[j])
			appendStringInfoString(&b, "null");
		else
			corpq_json_number(&b, l->x[j]);
	}
	appendStringInfoChar(&b, '}');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(b.data)));
}
