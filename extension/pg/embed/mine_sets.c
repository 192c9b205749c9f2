/*
 * Mining two sets of vectors (embed.h): the one path from sets to pairs, for
 * mine_vectors() and for any function that embeds sentences first.
 *
 * In memory when the sets and the core's work space fit work_mem: one call
 * of the core over everything.  Otherwise both sets are in temporary files
 * (a set still in memory is written to one) and are streamed through the
 * core's k-NN sweep a block at a time: for each block of targets (read
 * once), every block of sources (the source file read again from its
 * start).  The k-NN lists of both sides stay in memory and every pair of
 * blocks updates them; the lists of a source over all target blocks are
 * the merge of its per-block top k, and the core's lists do not depend on
 * the order or the grouping of their candidates (mine/knn.h), so the lists,
 * the means and the pairs are the in-memory run's, bit for bit.  Sources
 * are re-read once per target block, so the target blocks are made as large
 * as work_mem allows.
 */
#include "postgres.h"

#include <math.h>

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/tuplestore.h"

#include "pg/base/errors.h"
#include "pg/embed/embed.h"

/*
 * What streamed mining holds besides the blocks: the lists and means
 * (exact lengths), the ids, the pairs, the targets' best sources, and the
 * two files' buffers.
 */
static double
fixed_bytes(int n, int m, const cq_mine_options *o)
{
	return (double) cq_mine_knn_lists_bytes(n, m, o->k)
		+ (double) sizeof(int64) * ((double) n + m)
		+ (double) sizeof(cq_mine_pair) * n
		+ (double) sizeof(int32) * m
		+ 2.0 * CORPQ_VECTOR_FILE_BYTES;
}

/* A block of rows sources and one of cols targets, and the core's scratch for them. */
static double
blocks_bytes(int rows, int cols, int d, const cq_mine_options *o)
{
	return 4.0 * d * ((double) rows + cols) + (double) cq_mine_knn_block_bytes(rows, cols, d, o);
}

/*
 * The blocks for avail bytes: sources as o's block_rows (halved until the
 * target block is at least as large, or one row), targets as many as fit.
 * false when not even one of each fits.
 */
static bool
choose_blocks(int n, int m, int d, const cq_mine_options *o, double avail, int *rows, int *cols)
{
	for (int r = Min(n, o->block_rows);; r = Max(1, r / 2))
	{
		if (blocks_bytes(r, 1, d, o) <= avail)
		{
			int			lo = 1,
						hi = m;

			while (lo < hi)
			{
				int			mid = lo + (hi - lo + 1) / 2;

				if (blocks_bytes(r, mid, d, o) <= avail)
					lo = mid;
				else
					hi = mid - 1;
			}
			*rows = r;
			*cols = lo;
			if (lo >= Min(m, r) || r == 1)
				return true;
		}
		if (r == 1)
			return false;
	}
}

static void
refuse(int n, int m, int d, const cq_mine_options *o, double need)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("mining %d x %d vectors of dimension %d with k = %d needs %.0f kB in memory, "
					"more than work_mem (%d kB)",
					n, m, d, o->k, ceil(need / 1024), work_mem),
			 errdetail("Past work_mem the vectors are streamed from temporary files, but the "
					   "k-NN lists (8 (k + 1) bytes a vector), the ids and the pairs stay in memory."),
			 errhint("Raise work_mem for this query, lower k, or mine sets this large with "
					 "approximate neighbours (docs/embeddings.md, pgvector).")));
}

/* Both sets from their files, in blocks of rows x cols, into the lists. */
static void
sweep_files(CorpqVectorSet *src, CorpqVectorSet *tgt, const cq_mine_options *o,
			int rows, int cols, cq_knn *x2y, cq_knn *y2x)
{
	int			d = src->dim;
	float	   *xb = palloc_extended(sizeof(float) * d * (Size) rows, MCXT_ALLOC_HUGE);
	float	   *yb = palloc_extended(sizeof(float) * d * (Size) cols, MCXT_ALLOC_HUGE);
	cq_error	err;

	corpq_vector_set_rewind(tgt);
	for (int j0 = 0; j0 < tgt->n; j0 += cols)
	{
		int			c = Min(cols, tgt->n - j0);

		corpq_vector_set_next(tgt, yb, c);
		corpq_vector_set_rewind(src);
		for (int i0 = 0; i0 < src->n; i0 += rows)
		{
			int			r = Min(rows, src->n - i0);

			corpq_vector_set_next(src, xb, r);
			CHECK_FOR_INTERRUPTS();
			if (cq_mine_knn_add(xb, i0, r, yb, j0, c, d, o, x2y, y2x, &err) != CQ_OK)
				corpq_core_error(&err, NULL, "could not mine %d x %d vectors", src->n, tgt->n);
		}
	}
	pfree(xb);
	pfree(yb);
}

/*
 * The k-NN lists of both sets (x2y, y2x), in memory or streamed from the
 * sets' files; extra: the bytes the caller holds besides the lists and the
 * ids (its pairs, what it keeps of the sentences), counted against work_mem
 * with them.
 * false (the sets closed, no lists) when a set is empty.
 */
static bool
mine_lists(CorpqVectorSet *src, CorpqVectorSet *tgt, const cq_mine_options *o,
		   double extra, cq_knn *x2y, cq_knn *y2x)
{
	cq_error	err;
	int			d = src->dim;
	double		limit = (double) work_mem * 1024,
				in_memory;

	if (src->n == 0 || tgt->n == 0)
	{
		corpq_vector_set_close(src);
		corpq_vector_set_close(tgt);
		return false;
	}
	if (src->dim != tgt->dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("source embeddings have %d dimensions, target embeddings %d",
						src->dim, tgt->dim)));
	in_memory = (double) corpq_vector_set_bytes(src) + corpq_vector_set_bytes(tgt)
		+ cq_mine_work_bytes(src->n, tgt->n, d, o)
		+ extra;
	if (!src->file && !tgt->file && in_memory <= limit)
	{
		if (cq_mine_knn(src->vecs, src->n, tgt->vecs, tgt->n, d, o, x2y, y2x, &err) != CQ_OK)
			corpq_core_error(&err, NULL, "could not mine %d x %d vectors", src->n, tgt->n);
	}
	else
	{
		/* fixed_bytes counts the pairs: extra replaces them */
		double		fixed = fixed_bytes(src->n, tgt->n, o)
			- (double) sizeof(cq_mine_pair) * src->n + extra;
		int			rows,
					cols;

		/* refused before any vector is written or multiplied */
		if (!choose_blocks(src->n, tgt->n, d, o, limit - fixed, &rows, &cols))
			refuse(src->n, tgt->n, d, o, fixed + blocks_bytes(1, 1, d, o));
		/* a set still in memory to its file first: its memory goes to the lists */
		corpq_vector_set_spill(src);
		corpq_vector_set_spill(tgt);
		if (cq_mine_options_validate(o, &err) != CQ_OK ||
			cq_mine_knn_init(src->n, tgt->n, o->k, x2y, y2x, &err) != CQ_OK)
			corpq_core_error(&err, NULL, "could not mine %d x %d vectors", src->n, tgt->n);
		ereport(DEBUG1,
				(errmsg_internal("mining %d x %d vectors from temporary files: blocks of %d sources x %d targets",
								 src->n, tgt->n, rows, cols)));
		sweep_files(src, tgt, o, rows, cols, x2y, y2x);
		cq_mine_knn_finish(x2y, y2x);
	}
	corpq_vector_set_close(src);
	corpq_vector_set_close(tgt);
	return true;
}

void
corpq_mine_sets(CorpqVectorSet *src, CorpqVectorSet *tgt,
				const cq_mine_options *o, CorpqMinePairFn fn, void *arg)
{
	cq_mine_pair *pairs;
	cq_error	err;
	int			n = 0;
	cq_knn		x2y,
				y2x;

	if (!mine_lists(src, tgt, o, (double) sizeof(cq_mine_pair) * src->n, &x2y, &y2x))
		return;
	pairs = palloc_extended(sizeof(cq_mine_pair) * src->n, MCXT_ALLOC_HUGE);
	if (cq_mine_select(&x2y, &y2x, o->mutual, o->min_margin, pairs, &n, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not mine %d x %d vectors", src->n, tgt->n);
	cq_mine_knn_free(&x2y);
	cq_mine_knn_free(&y2x);
	for (int i = 0; i < n; i++)
		fn(arg, src->ids[pairs[i].src], tgt->ids[pairs[i].tgt], pairs[i].cosine, pairs[i].margin);
	pfree(pairs);
}

void
corpq_mine_sets_candidates(CorpqVectorSet *src, CorpqVectorSet *tgt, const cq_mine_options *o,
						   int kc, double held, CorpqMineCandidatesFn fn, void *arg)
{
	cq_mine_pair *c = palloc(sizeof(cq_mine_pair) * kc);
	int32	   *bwd = NULL;
	cq_knn		x2y,
				y2x;

	Assert(kc >= 1 && kc <= o->k);
	/* the targets' best sources (mutual) are counted with the lists */
	if (!mine_lists(src, tgt, o, held, &x2y, &y2x))
		return;
	if (o->mutual)
	{
		bwd = palloc_extended(sizeof(int32) * (Size) tgt->n, MCXT_ALLOC_HUGE);
		cq_mine_best_sources(&x2y, &y2x, bwd);
	}
	for (int i = 0; i < src->n; i++)
	{
		int			nc = cq_mine_candidates(&x2y, &y2x, bwd, i, o->min_margin, kc, c);

		CHECK_FOR_INTERRUPTS();
		if (nc > 0)
			fn(arg, c, nc);
	}
	if (bwd)
		pfree(bwd);
	cq_mine_knn_free(&x2y);
	cq_mine_knn_free(&y2x);
	pfree(c);
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
