/*
 * Mining two sets of vectors (embed.h): the one path from sets to pairs, for
 * mine_vectors() and for any function that embeds sentences first.
 */
#include "postgres.h"

#include <math.h>

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/tuplestore.h"

#include "pg/base/errors.h"
#include "pg/embed/embed.h"

/* ERROR unless the sets, the core's work space and the pairs fit work_mem. */
static void
check_memory(const CorpqVectorSet *src, const CorpqVectorSet *tgt, const cq_mine_options *o)
{
	double		need = (double) corpq_vector_set_bytes(src) + corpq_vector_set_bytes(tgt)
		+ cq_mine_work_bytes(src->n, tgt->n, src->dim, o)
		+ (double) sizeof(cq_mine_pair) * src->n;

	if (need > (double) work_mem * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("mining %d x %d vectors of dimension %d needs %.0f kB, more than work_mem (%d kB)",
						src->n, tgt->n, src->dim, ceil(need / 1024), work_mem),
				 errhint("Raise work_mem for this query, or mine sets this large with "
						 "approximate neighbours (docs/embeddings.md, pgvector).")));
}

void
corpq_mine_sets(const CorpqVectorSet *src, const CorpqVectorSet *tgt,
				const cq_mine_options *o, CorpqMinePairFn fn, void *arg)
{
	cq_mine_pair *pairs;
	cq_error	err;
	int			n = 0;

	if (src->n == 0 || tgt->n == 0)
		return;
	if (src->dim != tgt->dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("source embeddings have %d dimensions, target embeddings %d",
						src->dim, tgt->dim)));
	check_memory(src, tgt, o);
	pairs = palloc_extended(sizeof(cq_mine_pair) * src->n, MCXT_ALLOC_HUGE);
	if (cq_mine(src->vecs, src->n, tgt->vecs, tgt->n, src->dim, o, pairs, &n, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not mine %d x %d vectors", src->n, tgt->n);
	for (int i = 0; i < n; i++)
		fn(arg, src->ids[pairs[i].src], tgt->ids[pairs[i].tgt], pairs[i].cosine, pairs[i].margin);
	pfree(pairs);
}

void
corpq_mine_put_pair(void *rsinfo, int64 src_id, int64 tgt_id, double cosine, double margin)
{
	ReturnSetInfo *r = rsinfo;
	Datum		values[4] = {Int64GetDatum(src_id), Int64GetDatum(tgt_id),
	Float8GetDatum(cosine), Float8GetDatum(margin)};
	bool		nulls[4] = {false, false, false, false};

	tuplestore_putvalues(r->setResult, r->setDesc, values, nulls);
}
