/*
 * Teacher-forced forward passes over a model session (score.h): the one
 * batch cut of every scorer, the batched forward, and Monte Carlo dropout
 * uncertainty.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "common/parallel.h"
#include "pg/base/errors.h"
#include "pg/base/base.h"
#include "pg/score/score.h"

/* Grow the output arrays to rows positions and pairs sentences. */
static void
ensure_outputs(CorpqModelSession *s, long rows, int pairs)
{
	if (rows > s->out_rows)
	{
		long		n = Max(rows, 2 * s->out_rows);

		if (s->out.logp)
		{
			pfree(s->out.logp);
			pfree(s->out.p_max);
			pfree(s->out.entropy);
			pfree(s->out.argmax);
		}
		s->out.logp = MemoryContextAllocHuge(s->cxt, n * sizeof(float));
		s->out.p_max = MemoryContextAllocHuge(s->cxt, n * sizeof(float));
		s->out.entropy = MemoryContextAllocHuge(s->cxt, n * sizeof(float));
		s->out.argmax = MemoryContextAllocHuge(s->cxt, n * sizeof(int32));
		s->out_rows = n;
	}
	if (pairs > s->out_pairs)
	{
		int			n = Max(pairs, 2 * s->out_pairs);

		if (s->out.sent_logp)
		{
			pfree(s->out.sent_logp);
			pfree(s->out.sent_count);
		}
		s->out.sent_logp = MemoryContextAlloc(s->cxt, n * sizeof(double));
		s->out.sent_count = MemoryContextAlloc(s->cxt, n * sizeof(int));
		s->out_pairs = n;
	}
}

int
corpq_score_batch_cut(const CorpqModelSession *s, const cq_pair *const *order, int m, int max_n,
					   Size extra_per_target)
{
	Size		limit = corpq_batch_bytes_limit();
	cq_batch_shape shape = {0};
	int			nb;

	for (nb = 0; nb < m && nb < max_n; nb++)
	{
		const cq_pair *p = order[nb];
		cq_batch_shape next = shape;
		Size		bytes;

		next.n_pairs++;
		next.src_positions += p->src_len + 1;
		next.tgt_positions += p->tgt_len + 1;
		next.max_src = Max(next.max_src, p->src_len + 1);
		next.max_tgt = Max(next.max_tgt, p->tgt_len + 1);
		if (next.src_positions > CQ_MAX_BATCH_POSITIONS || next.tgt_positions > CQ_MAX_BATCH_POSITIONS)
			break;
		bytes = cq_forward_workspace_bytes(&s->cfg, &next) +
			(Size) next.tgt_positions * (3 * sizeof(float) + sizeof(int32) + extra_per_target) +
			(Size) next.n_pairs * (sizeof(double) + sizeof(int));
		if (bytes > limit)
		{
			if (nb == 0)
				corpq_batch_too_large(1, "sentence pair", bytes);
			break;
		}
		shape = next;
	}
	return Max(nb, 1);
}

void
corpq_score_forward(CorpqModelSession *s, const cq_pair *pairs, int n, const cq_dropout *dropout)
{
	const cq_model *m;
	cq_batch_shape shape;
	cq_error	err = {0};
	cq_code		st;
	Size		bytes;
	int			threads = cq_parallel_threads();

	CHECK_FOR_INTERRUPTS();
	corpq_blas_ensure();
	/* looked up on every call: anything run since may have evicted it */
	m = corpq_model_get(&s->cur->ref);
	st = cq_batch_shape_of(m, pairs, n, &shape, &err);
	if (st != CQ_OK)
		corpq_core_error(&err, NULL, "could not score sentence pairs");
	/*
	 * On several threads the pairs go to the pool in parts, each with a
	 * workspace of its own; the same bits on one thread, which needs less
	 * (batched callers cut their batches to fit that, score_batch.c).
	 */
	bytes = threads > 1 ? cq_forward_parallel_bytes(&m->cfg, pairs, n, threads) : 0;
	if (threads <= 1 || bytes > corpq_batch_bytes_limit())
	{
		threads = 1;
		bytes = cq_forward_workspace_bytes(&m->cfg, &shape);
	}
	if (bytes > corpq_batch_bytes_limit())
		corpq_batch_too_large(n, "sentence pair", bytes);
	(void) corpq_model_session_workspace(s, bytes);
	ensure_outputs(s, shape.tgt_positions, n);
	st = cq_forward_parallel(m, pairs, n, dropout, threads, s->ws, s->ws_bytes, &s->out, &err);
	if (st != CQ_OK)
		corpq_core_error(&err, NULL, "could not score sentence pairs");
}

cq_uncertainty
corpq_measure_from_name(const char *name)
{
	cq_uncertainty u;
	cq_error err = {0};

	if (cq_uncertainty_from_name(name, &u, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "invalid uncertainty measure");
	return u;
}

void
corpq_check_passes(int32 passes)
{
	if (passes < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("passes must be at least 1, got %d", passes),
				 errhint("Monte Carlo dropout averages the measure over that many forward passes; 30 is usual.")));
	if (passes > CORPQ_MAX_PASSES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("passes must be at most %d, got %d", CORPQ_MAX_PASSES, passes),
				 errhint("Monte Carlo dropout averages the measure over that many forward passes; 30 is usual.")));
}

void
corpq_score_uncertainty(CorpqModelSession *s, const cq_pair *pairs, int n,
						 cq_uncertainty measure, int passes, uint64 seed, double *out)
{
	long		nt = 0;
	long		off;
	float	   *pmax;
	float	   *ent;
	cq_error err = {0};

	for (int i = 0; i < n; i++)
		nt += pairs[i].tgt_len + 1;
	/* [K, Nt]: pass k's outputs at k * Nt, pair after pair */
	pmax = MemoryContextAllocHuge(CurrentMemoryContext, (Size) passes * nt * sizeof(float));
	ent = MemoryContextAllocHuge(CurrentMemoryContext, (Size) passes * nt * sizeof(float));
	for (int k = 0; k < passes; k++)
	{
		cq_dropout	dr = {CQ_DROPOUT_MC, seed, (uint32) k};

		corpq_score_forward(s, pairs, n, &dr);
		memcpy(pmax + k * nt, s->out.p_max, nt * sizeof(float));
		memcpy(ent + k * nt, s->out.entropy, nt * sizeof(float));
	}
	off = 0;
	for (int i = 0; i < n; i++)
	{
		int			t = pairs[i].tgt_len + 1;
		cq_code st = cq_uncertainty_measure_strided(measure, pmax + off, ent + off,
														 passes, t, nt, &out[i], &err);

		if (st != CQ_OK)
			corpq_core_error(&err, NULL, "could not compute the uncertainty");
		off += t;
	}
	pfree(pmax);
	pfree(ent);
}
