/*
 * The cosine of a pair's two sentences under one encoder model
 * (embed_cosine.h): corpq.embedding_cosine(model, src, tgt [, on_too_long])
 * per row, on a model name (STABLE) or a pinned version (IMMUTABLE), and
 * the batched scores of the embedding_cosine filter (pg/filters).  Both
 * sides go through corpq_embed_rows, so each vector is corpq.embed()'s; the
 * score is their dot product summed in double in dimension order, which is
 * what SQL's sum(x::float8 * y) over unnest(embed(src), embed(tgt)) gives.
 * It is not mine_pairs()' cosine column, a float chain of fused
 * multiply-adds (mine/mine.h): the two agree to about 1e-6.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "pg/embed/embed.h"
#include "pg/embed/embed_cosine.h"
#include "pg/model/model_session.h"

PG_FUNCTION_INFO_V1(corpq_embedding_cosine);
PG_FUNCTION_INFO_V1(corpq_embedding_cosine_pinned);

struct CorpqEmbedCosine
{
	MemoryContext cxt;
	CorpqModelSession *session;
};

CorpqEmbedCosine *
corpq_embed_cosine_create(MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "corpq embedding_cosine",
											  ALLOCSET_SMALL_SIZES);
	CorpqEmbedCosine *c = MemoryContextAlloc(cxt, sizeof(CorpqEmbedCosine));

	c->cxt = cxt;
	c->session = corpq_model_session_create(cxt);
	return c;
}

void
corpq_embed_cosine_free(CorpqEmbedCosine *c)
{
	MemoryContextDelete(c->cxt);
}

/* x . y in double, in order: each float product is exact in double. */
static double
dot(const float *x, const float *y, int d)
{
	double		sum = 0;

	for (int i = 0; i < d; i++)
		sum += (double) x[i] * (double) y[i];
	return sum;
}

void
corpq_embed_cosine_score(CorpqEmbedCosine *c, const char *model, bool pinned,
						 CorpqTooLong on_too_long, const CorpqTextPair *pairs, int n,
						 double *out, bool *null)
{
	MemoryContext scratch;
	MemoryContext old;
	CorpqEmbedArgs args = {.batch_size = CORPQ_EMBED_BATCH_SIZE, .on_too_long = on_too_long};
	CorpqEmbedRow *rows;
	float	   *vecs;
	int			d;

	if (n <= 0)
		return;
	corpq_model_session_use(c->session, model, pinned);
	corpq_embed_require_encoder(c->session, "embedding_cosine");
	d = corpq_embed_dim(c->session);
	scratch = AllocSetContextCreate(CurrentMemoryContext, "corpq embedding_cosine batch",
									ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(scratch);
	/* rows 2i and 2i + 1: pair i's sides, embedded in one call */
	rows = palloc0(sizeof(CorpqEmbedRow) * 2 * n);
	vecs = MemoryContextAllocHuge(scratch, sizeof(float) * (Size) 2 * n * d);
	for (int i = 0; i < n; i++)
	{
		rows[2 * i] = (CorpqEmbedRow) {.text = pairs[i].src, .len = pairs[i].src_len};
		rows[2 * i + 1] = (CorpqEmbedRow) {.text = pairs[i].tgt, .len = pairs[i].tgt_len};
	}
	corpq_embed_rows(c->session, &args, rows, 2 * n, vecs);
	for (int i = 0; i < n; i++)
	{
		null[i] = rows[2 * i].null || rows[2 * i + 1].null;
		if (!null[i])
			out[i] = dot(vecs + (Size) 2 * i * d, vecs + (Size) (2 * i + 1) * d, d);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(scratch);
}

static Datum
embedding_cosine(FunctionCallInfo fcinfo, bool pinned)
{
	text	   *src = PG_GETARG_TEXT_PP(1);
	text	   *tgt = PG_GETARG_TEXT_PP(2);
	CorpqTextPair p = {VARDATA_ANY(src), VARSIZE_ANY_EXHDR(src),
	VARDATA_ANY(tgt), VARSIZE_ANY_EXHDR(tgt)};
	CorpqTooLong on_too_long = corpq_too_long_arg(fcinfo, 3);
	double		r;
	bool		null;

	/* kept across the calls of a query: the name resolves once */
	if (fcinfo->flinfo->fn_extra == NULL)
		fcinfo->flinfo->fn_extra = corpq_embed_cosine_create(fcinfo->flinfo->fn_mcxt);
	corpq_embed_cosine_score(fcinfo->flinfo->fn_extra, text_to_cstring(PG_GETARG_TEXT_PP(0)),
							 pinned, on_too_long, &p, 1, &r, &null);
	if (null)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(r);
}

Datum
corpq_embedding_cosine(PG_FUNCTION_ARGS)
{
	return embedding_cosine(fcinfo, false);
}

Datum
corpq_embedding_cosine_pinned(PG_FUNCTION_ARGS)
{
	return embedding_cosine(fcinfo, true);
}
