/*
 * A pair's feature vector for the pair-quality classifier: the core's
 * string and language ID features (cq_features_compute), then the model
 * features, each computed by calling the SQL function's own C code through
 * fmgr, so that a feature equals what the user's SQL call returns, bit for
 * bit, by construction:
 *
 *   embedding_cosine  corpq.embedding_cosine(encoder@N, src, tgt, 'null')
 *   dual_xent         corpq.dual_xent(forward@N, backward@M, src, tgt)
 *   align_fwd         corpq.align_stats(lexicon, src, tgt).fwd_score
 *   align_bwd         ... .rev_score
 *   coverage_fwd      ... .src_coverage
 *   coverage_bwd      ... .tgt_coverage
 *   tail_src, tail_tgt ... .src_tail, .tgt_tail
 *
 * The lexicon's "both directions": align_score averages the two directions'
 * log-likelihoods and coverage counts only the source side; align_stats
 * keeps them apart from one alignment (one call gives all six), so text
 * appended to or cut from one side shows on that side: the target tokens
 * no source word explains lower fwd_score and tgt_coverage (docs/curation.md).
 *
 * The functions are looked up by signature once (per query for
 * pair_quality, per chunk of the training job), their FmgrInfo kept in a
 * long-lived context so that their own per-query caches (fn_extra: the
 * loaded model, the resolved name) serve every pair.  A NULL from a model
 * function (a side too long for the encoder or a translation model) leaves
 * the pair without a probability.
 */
#include "postgres.h"

#include <math.h>

#include "executor/executor.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"

#include "pg/base/catalog.h"
#include "pg/base/errors.h"
#include "curate/classifier.h"
#include "pg/classifier/classifier.h"
#include "pg/model/model.h"

typedef struct ModelFeature
{
	cq_feature	feature;
	int			index;			/* in the layout; -1 for a record's */
	int			field_index[6];	/* a record's fields in the layout, -1: unused */
	int			n_fields;		/* 0: the function returns float8 */
	FmgrInfo	fn;
	int			nargs;			/* 3 or 4 */
	Datum		models[2];		/* the leading model arguments */
	int			n_models;
	bool		too_long_arg;	/* a trailing on_too_long 'null' */
} ModelFeature;

struct CurateFeatures
{
	MemoryContext cxt;
	cq_feature_set fs;
	int			d;
	ModelFeature mf[3];
	int			n_mf;
	Datum		null_policy;	/* 'null' */
};

/* align_stats' fields in order, and the features they are */
static const cq_feature lexicon_fields[6] = {
	CQ_F_ALIGN_FWD, CQ_F_ALIGN_BWD, CQ_F_COVERAGE_FWD, CQ_F_COVERAGE_BWD,
	CQ_F_TAIL_SRC, CQ_F_TAIL_TGT
};

#define LEXICON_MASK \
	(CQ_F_BIT(CQ_F_ALIGN_FWD) | CQ_F_BIT(CQ_F_ALIGN_BWD) | \
	 CQ_F_BIT(CQ_F_COVERAGE_FWD) | CQ_F_BIT(CQ_F_COVERAGE_BWD) | \
	 CQ_F_BIT(CQ_F_TAIL_SRC) | CQ_F_BIT(CQ_F_TAIL_TGT))

static Oid
function_oid(const char *signature)
{
	return DatumGetObjectId(DirectFunctionCall1(regprocedurein, CStringGetDatum(signature)));
}

static void
add(CurateFeatures *f, cq_feature feature, const char *signature, int nargs,
	const char *model1, const char *model2, bool too_long_arg)
{
	ModelFeature *m = &f->mf[f->n_mf++];

	if (model1 == NULL || (model2 == NULL && feature == CQ_F_DUAL_XENT))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("classifier feature \"%s\" has no model", cq_feature_name(feature)),
				 errhint("The version's models column must name the models its features use.")));
	m->feature = feature;
	m->index = cq_feature_index(&f->fs, feature);
	m->n_fields = 0;
	fmgr_info_cxt(function_oid(signature), &m->fn, f->cxt);
	m->nargs = nargs;
	m->models[0] = PointerGetDatum(cstring_to_text(model1));
	m->n_models = 1;
	if (feature == CQ_F_DUAL_XENT)
	{
		m->models[1] = PointerGetDatum(cstring_to_text(model2));
		m->n_models = 2;
	}
	m->too_long_arg = too_long_arg;
}

/*
 * The lexicon's name from its pin "name@version", after checking that the
 * lexicon is still at that version: replacing a lexicon (lexicon_train's
 * replace) keeps its name, and a classifier must not silently change meaning.
 */
static char *
lexicon_name(const char *pin)
{
	int			name_len;
	int32		version,
				now;
	char	   *name;
	bool		isnull;

	if (pin == NULL)
		return NULL;
	if (!corpq_model_split_spec(pin, &name_len, &version))
		return pstrdup(pin);
	name = pnstrdup(pin, name_len);
	SPI_connect();
	now = DatumGetInt32(corpq_catalog_value(&corpq_kind_lexicon, "c.version", name, &isnull));
	SPI_finish();
	if (now != version)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("lexicon \"%s\" is at version %d; the classifier was trained with version %d",
						name, now, version),
				 errhint("Train the classifier again with the lexicon as it is now.")));
	return name;
}

CurateFeatures *
curate_features_create(const cq_feature_set *fs, const CurateModels *models, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "corpq classifier features",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	CurateFeatures *f = palloc0(sizeof(CurateFeatures));
	char	   *lexicon = NULL;

	f->cxt = cxt;
	f->fs = *fs;
	f->d = cq_feature_count(fs);
	f->null_policy = PointerGetDatum(cstring_to_text("null"));
	if (fs->mask & LEXICON_MASK)
	{
		ModelFeature *m;

		lexicon = lexicon_name(models->lexicon);
		/* one call of align_stats gives all six (its fields in lexicon_fields' order) */
		add(f, CQ_F_ALIGN_FWD, "corpq.align_stats(text,text,text)", 3, lexicon, NULL, false);
		m = &f->mf[f->n_mf - 1];
		m->n_fields = 6;
		for (int i = 0; i < 6; i++)
			m->field_index[i] = (fs->mask & CQ_F_BIT(lexicon_fields[i])) ?
				cq_feature_index(fs, lexicon_fields[i]) : -1;
	}
	if (fs->mask & CQ_F_BIT(CQ_F_EMBEDDING_COSINE))
		add(f, CQ_F_EMBEDDING_COSINE,
			"corpq.embedding_cosine(corpq.pinned_model,text,text,text)", 4,
			models->encoder, NULL, true);
	if (fs->mask & CQ_F_BIT(CQ_F_DUAL_XENT))
		add(f, CQ_F_DUAL_XENT,
			"corpq.dual_xent(corpq.pinned_model,corpq.pinned_model,text,text)", 4,
			models->forward, models->backward, false);
	MemoryContextSwitchTo(old);
	return f;
}

void
curate_features_free(CurateFeatures *f)
{
	MemoryContextDelete(f->cxt);
}

/* One feature's value: NAN and null[j] when the function gave NULL. */
static bool
store_value(int j, bool isnull, Datum v, double *x, bool *null)
{
	if (isnull)
	{
		x[j] = NAN;
		if (null)
			null[j] = true;
		return false;
	}
	x[j] = DatumGetFloat8(v);
	return true;
}

/* The fields of a record-valued function (align_stats) the set uses. */
static bool
store_fields(const ModelFeature *m, bool isnull, Datum r, double *x, bool *null)
{
	HeapTupleHeader th = isnull ? NULL : DatumGetHeapTupleHeader(r);
	bool		ok = true;

	for (int i = 0; i < m->n_fields; i++)
	{
		bool		field_null = true;
		Datum		v = (Datum) 0;

		if (m->field_index[i] < 0)
			continue;
		if (th)
			v = GetAttributeByNum(th, i + 1, &field_null);
		ok &= store_value(m->field_index[i], field_null, v, x, null);
	}
	return ok;
}

bool
curate_features_compute(CurateFeatures *f, text *src, text *tgt, double *x, bool *null)
{
	cq_error	err = {0};
	bool		ok = true;

	if (null)
		memset(null, 0, sizeof(bool) * f->d);
	if (cq_features_compute(&f->fs, VARDATA_ANY(src), VARSIZE_ANY_EXHDR(src),
							VARDATA_ANY(tgt), VARSIZE_ANY_EXHDR(tgt), x, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not compute the classifier's features");
	for (int k = 0; k < f->n_mf; k++)
	{
		ModelFeature *m = &f->mf[k];
		LOCAL_FCINFO(fcinfo, 4);
		Datum		r;
		int			a = 0;

		InitFunctionCallInfoData(*fcinfo, &m->fn, m->nargs, InvalidOid, NULL, NULL);
		for (int i = 0; i < m->n_models; i++)
		{
			fcinfo->args[a].value = m->models[i];
			fcinfo->args[a++].isnull = false;
		}
		fcinfo->args[a].value = PointerGetDatum(src);
		fcinfo->args[a++].isnull = false;
		fcinfo->args[a].value = PointerGetDatum(tgt);
		fcinfo->args[a++].isnull = false;
		if (m->too_long_arg)
		{
			fcinfo->args[a].value = f->null_policy;
			fcinfo->args[a++].isnull = false;
		}
		Assert(a == m->nargs);
		r = FunctionCallInvoke(fcinfo);
		if (m->n_fields > 0)
			ok &= store_fields(m, fcinfo->isnull, r, x, null);
		else
			ok &= store_value(m->index, fcinfo->isnull, r, x, null);
	}
	return ok;
}
