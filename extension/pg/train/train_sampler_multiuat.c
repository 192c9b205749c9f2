/*
 * Strategy "multiuat" (Wu et al., Algorithm 1): every sampler_every updates
 * the reward of corpus n is the model's uncertainty on one dev batch of n
 * (about dev_tokens), measured teacher-forced with all dropout active over
 * K passes (cq_forward in MC mode, counter-based masks keyed by seed, step
 * and pass, so a resumed run draws the same masks): the chosen measure per
 * pair, averaged over the K passes (Eq. 12) and over the batch's pairs.
 * The scorer (train_scorer.c) then takes its REINFORCE steps.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/rng.h"
#include "nn/infer/forward.h"
#include "nn/infer/uncertainty.h"
#include "pg/base/errors.h"
#include "pg/model/model.h"
#include "pg/train/train_scorer.h"

void
train_strategy_multiuat_init(TrainSampler *s, const TrainOptions *o)
{
	(void) train_scorer_new(s, o);
}

/* Reward and mean MC nll per token of one dev batch. */
static void
batch_reward(const cq_model *m, const cq_pair *pairs, int n, cq_uncertainty u, int passes,
			 uint64 seed, double *reward, double *dev_loss)
{
	cq_batch_shape shape;
	cq_forward_out out;
	cq_error err = {0};
	cq_code st;
	size_t		ws_bytes;
	void	   *ws;
	float	   *p_max,
			   *entropy,
			   *logp;
	long		nt,
				off = 0;
	double		sum = 0,
				nll = 0;

	if ((st = cq_batch_shape_of(m, pairs, n, &shape, &err)) != CQ_OK)
		corpq_core_error(&err, NULL, "could not score a dev batch for the sampler");
	nt = shape.tgt_positions;
	ws_bytes = cq_forward_workspace_bytes(&m->cfg, &shape);
	ws = MemoryContextAllocHuge(CurrentMemoryContext, ws_bytes);
	/* [K, Nt] tables: pass k's positions at k * Nt */
	p_max = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(float) * nt * passes);
	entropy = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(float) * nt * passes);
	logp = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(float) * nt * passes);
	out.argmax = NULL;
	out.sent_logp = palloc(sizeof(double) * n);
	out.sent_count = palloc(sizeof(int) * n);
	for (int k = 0; k < passes; k++)
	{
		cq_dropout mc = {CQ_DROPOUT_MC, seed, (uint32) k};

		out.p_max = p_max + (size_t) k * nt;
		out.entropy = entropy + (size_t) k * nt;
		out.logp = logp + (size_t) k * nt;
		if ((st = cq_forward(m, pairs, n, &mc, ws, ws_bytes, &out, &err)) != CQ_OK)
			corpq_core_error(&err, NULL, "could not score a dev batch for the sampler");
		for (int b = 0; b < n; b++)
			nll -= out.sent_logp[b];
		CHECK_FOR_INTERRUPTS();
	}
	for (int b = 0; b < n; b++)
	{
		int			t = pairs[b].tgt_len + 1;
		double		r;

		if ((st = cq_uncertainty_measure_strided(u, p_max + off, entropy + off, passes, t, nt,
												 &r, &err)) != CQ_OK)
			corpq_core_error(&err, NULL, "could not measure the model's uncertainty");
		sum += r;
		off += t;
	}
	*reward = sum / n;
	*dev_loss = nll / ((double) nt * passes);
}

void
train_strategy_multiuat_update(TrainSampler *s, const TrainSamplerView *view)
{
	TrainScorer *sc = s->priv;
	TimestampTz t0 = GetCurrentTimestamp();
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "corpq multiuat",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	double	   *reward = palloc(sizeof(double) * s->n);
	double	   *dev_loss = palloc(sizeof(double) * s->n);
	cq_uncertainty u;
	cq_error err = {0};
	uint64		seed = cq_mix64(s->seed ^ cq_mix64((uint64) view->step ^ UINT64CONST(0x6d756174)));

	if (cq_uncertainty_from_name(sc->o.measure, &u, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "invalid uncertainty measure");
	for (int i = 0; i < s->n; i++)
	{
		cq_pair    *pairs;
		int			n = train_scorer_dev_batch(s, view, i, &pairs);

		batch_reward(view->model, pairs, n, u, sc->o.passes, seed, &reward[i], &dev_loss[i]);
		if (!isfinite(reward[i]))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("multiuat reward of corpus \"%s\" is not finite at update " INT64_FORMAT,
							s->names[i], view->step),
					 errdetail("The %s of the model on %d dev pairs over %d dropout passes is %g.",
							   sc->o.measure, n, sc->o.passes, reward[i]),
					 errhint("The model itself has probably diverged: lower lr or raise warmup; the job's committed checkpoints and sampling history are kept.")));
	}
	MemoryContextSwitchTo(old);
	train_scorer_reinforce(s, view->step, reward, dev_loss, view->tokens_done,
						   (double) (GetCurrentTimestamp() - t0) / USECS_PER_SEC);
	MemoryContextDelete(cxt);
}
