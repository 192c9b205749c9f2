/*
 * Strategy "multidds": the MultiDDS-S baseline as MultiUAT describes it
 * (Eq. 13): reward of training corpus n = mean over dev corpora i of
 * cos(grad L_dev_i, grad L_train_n), one small batch (about dev_tokens)
 * each, gradients of the label-smoothed loss by the training core's pass
 * (cq_train_pass into a gradient model, never applied; dropout on as in
 * training, masks keyed by seed and step).  psi starts at 0 and is fitted to
 * the data-size prior (prior_tau 1), then the scorer's REINFORCE steps.
 * Memory: N + 1 gradient blocks of the model's size.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/rng.h"
#include "nn/train/train_pass.h"
#include "pg/base/errors.h"
#include "pg/model/model.h"
#include "pg/train/train_scorer.h"

void
train_strategy_multidds_init(TrainSampler *s, const TrainOptions *o)
{
	(void) train_scorer_new(s, o);
}

/* grad->params := d(summed loss)/dθ of the pairs; returns nll per token. */
static double
gradient(const cq_model *m, cq_model *grad, const cq_pair *pairs, int n, uint64 seed,
		 uint32 pass, float label_smoothing)
{
	cq_train_dropout d = {true, seed, pass};
	cq_train_pass_out out;
	cq_error err = {0};
	cq_code st;
	size_t		ws_bytes = cq_train_pass_workspace_bytes(&m->cfg, pairs, n);
	void	   *ws = MemoryContextAllocHuge(CurrentMemoryContext, ws_bytes);

	memset(grad->params, 0, sizeof(float) * grad->n_floats);
	st = cq_train_pass(m, grad, pairs, n, &d, label_smoothing, ws, ws_bytes, &out, &err);
	if (st != CQ_OK)
		corpq_core_error(&err, NULL, "could not compute a gradient for the sampler");
	pfree(ws);
	CHECK_FOR_INTERRUPTS();
	return out.tokens > 0 ? out.nll / out.tokens : NAN;
}

static double
cosine(const float *a, const float *b, size_t n)
{
	double		ab = 0,
				aa = 0,
				bb = 0;

	for (size_t k = 0; k < n; k++)
	{
		ab += (double) a[k] * b[k];
		aa += (double) a[k] * a[k];
		bb += (double) b[k] * b[k];
	}
	return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}

void
train_strategy_multidds_update(TrainSampler *s, const TrainSamplerView *view)
{
	TrainScorer *sc = s->priv;
	TimestampTz t0 = GetCurrentTimestamp();
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "corpq multidds",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	const cq_model *m = view->model;
	double	   *reward = palloc0(sizeof(double) * s->n);
	double	   *dev_loss = palloc(sizeof(double) * s->n);
	float	  **dev_grad = palloc(sizeof(float *) * s->n);
	cq_model   *grad;
	cq_error err = {0};
	cq_code st;
	uint64		seed = cq_mix64(s->seed ^ cq_mix64((uint64) view->step ^ UINT64CONST(0x646473)));
	float		ls = (float) sc->o.label_smoothing;

	if ((st = cq_model_new(&m->cfg, &grad, &err)) != CQ_OK)
		corpq_core_error(&err, NULL, "could not allocate a gradient for the sampler");
	for (int i = 0; i < s->n; i++)
	{
		cq_pair    *pairs;
		int			n = train_scorer_dev_batch(s, view, i, &pairs);

		dev_loss[i] = gradient(m, grad, pairs, n, seed, (uint32) i, ls);
		dev_grad[i] = MemoryContextAllocHuge(cxt, sizeof(float) * grad->n_floats);
		memcpy(dev_grad[i], grad->params, sizeof(float) * grad->n_floats);
	}
	for (int j = 0; j < s->n; j++)
	{
		cq_pair    *pairs;
		int			n = train_scorer_train_batch(s, view, j, &pairs);

		(void) gradient(m, grad, pairs, n, seed, (uint32) (s->n + j), ls);
		for (int i = 0; i < s->n; i++)
			reward[j] += cosine(dev_grad[i], grad->params, grad->n_floats) / s->n;
		if (!isfinite(reward[j]))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("multidds reward of corpus \"%s\" is not finite at update " INT64_FORMAT,
							s->names[j], view->step),
					 errhint("The model itself has probably diverged: lower lr or raise warmup; the job's committed checkpoints and sampling history are kept.")));
	}
	cq_model_free(grad);
	MemoryContextSwitchTo(old);
	train_scorer_reinforce(s, view->step, reward, dev_loss, view->tokens_done,
						   (double) (GetCurrentTimestamp() - t0) / USECS_PER_SEC);
	MemoryContextDelete(cxt);
}
