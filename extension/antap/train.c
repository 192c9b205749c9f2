/* ANTAP's MSE, AdamW updates and the early-stopping fit (train.h). */
#include <math.h>
#include <string.h>

#include "antap/train.h"
#include "common/mem.h"
#include "common/rng.h"

double
cq_antap_mse(const float *out, const float *y, int n, float *dout)
{
	double		s = 0;

	for (int i = 0; i < n; i++)
	{
		double		e = (double) out[i] - y[i];

		s += e * e;
		if (dout)
			dout[i] = (float) (2.0 * e / n);
	}
	return s / n;
}

void
cq_antap_train_options_default(cq_antap_train_options *o)
{
	o->lr = 1e-3;
	o->adamw.beta1 = 0.9f;
	o->adamw.beta2 = 0.999f;
	o->adamw.eps = 1e-8f;
	o->adamw.weight_decay = 0.01f;
	o->batch_size = 32;
	o->max_epochs = 500;
	o->patience = 20;
	o->seed = 0;
}

struct cq_antap_trainer
{
	cq_antap_model *m;
	cq_antap_model *grad;		/* same layout: its block is the gradient */
	float	   *m1,
			   *v1;				/* AdamW moments */
	int64_t		t;				/* updates done */
	cq_antap_train_options o;
	cq_antap_pass *pass;
	float	   *out,
			   *dout;			/* [batch_size] */
};

cq_code
cq_antap_trainer_new(cq_antap_model *m, const cq_antap_train_options *o,
					 cq_antap_trainer **out, cq_error *err)
{
	cq_antap_trainer *t;
	cq_code		rc;
	size_t		nf = cq_antap_param_floats(m);

	*out = NULL;
	if (o->batch_size < 1)
		return cq_fail(err, CQ_EINVAL, "batch size must be at least 1");
	if (!(t = cq_alloc0(sizeof(*t))))
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	t->m = m;
	t->o = *o;
	if ((rc = cq_antap_new(&m->cfg, &t->grad, err)) != CQ_OK ||
		(rc = cq_antap_pass_new(&m->cfg, o->batch_size, &t->pass, err)) != CQ_OK)
	{
		cq_antap_trainer_free(t);
		return rc;
	}
	t->m1 = cq_alloc0(sizeof(float) * nf);
	t->v1 = cq_alloc0(sizeof(float) * nf);
	t->out = cq_alloc(sizeof(float) * o->batch_size);
	t->dout = cq_alloc(sizeof(float) * o->batch_size);
	if (!t->m1 || !t->v1 || !t->out || !t->dout)
	{
		cq_antap_trainer_free(t);
		return cq_fail(err, CQ_ENOMEM, "out of memory for the ANTAP optimizer state");
	}
	*out = t;
	return CQ_OK;
}

void
cq_antap_trainer_free(cq_antap_trainer *t)
{
	if (!t)
		return;
	cq_antap_free(t->grad);
	cq_antap_pass_free(t->pass);
	cq_free(t->m1);
	cq_free(t->v1);
	cq_free(t->out);
	cq_free(t->dout);
	cq_free(t);
}

cq_antap_pass *
cq_antap_trainer_pass(cq_antap_trainer *t)
{
	return t->pass;
}

cq_code
cq_antap_trainer_step(cq_antap_trainer *t, const float *x, const float *y, int n,
					  double *loss, cq_error *err)
{
	size_t		nf = cq_antap_param_floats(t->m);
	const float *g = t->grad->params;

	if (n < 1 || n > t->o.batch_size)
		return cq_fail(err, CQ_EINVAL, "a batch of %d tokens (1 to %d allowed)", n,
					   t->o.batch_size);
	/* the kernels' fast exp is undefined on NaN: refuse such input up front */
	for (int i = 0; i < n; i++)
		if (!isfinite(y[i]))
			return cq_fail(err, CQ_ERANGE, "target %d of the batch is not finite", i);
	for (size_t i = 0; i < (size_t) n * t->m->cfg.pool_rows * t->m->cfg.pool_cols; i++)
		if (!isfinite(x[i]))
			return cq_fail(err, CQ_ERANGE, "an input of the batch is not finite");
	memset(t->grad->params, 0, sizeof(float) * nf);
	cq_antap_forward(t->m, t->pass, x, n, t->out);
	*loss = cq_antap_mse(t->out, y, n, t->dout);
	if (!isfinite(*loss))
		return cq_fail(err, CQ_ERANGE, "the loss is not finite at update %lld",
					   (long long) t->t + 1);
	cq_antap_backward(t->m, t->pass, t->dout, t->grad);
	for (size_t i = 0; i < nf; i++)
		if (!isfinite(g[i]))
			return cq_fail(err, CQ_ERANGE, "a gradient is not finite at update %lld",
						   (long long) t->t + 1);
	t->t++;
	cq_adamw_update(&t->o.adamw, t->t, t->o.lr, t->m->params, g, t->m1, t->v1, nf);
	return CQ_OK;
}

void
cq_antap_predict_rows(const cq_antap_model *m, cq_antap_pass *p, const float *x,
					  const int32_t *idx, long n, float *gather, float *out)
{
	size_t		cells = (size_t) m->cfg.pool_rows * m->cfg.pool_cols;
	int			batch = cq_antap_pass_max_batch(p);

	for (long k = 0; k < n; k += batch)
	{
		int			b = (int) (n - k < batch ? n - k : batch);
		const float *in = x + k * cells;

		if (idx)
		{
			for (int j = 0; j < b; j++)
				memcpy(gather + j * cells, x + (size_t) idx[k + j] * cells,
					   sizeof(float) * cells);
			in = gather;
		}
		cq_antap_forward(m, p, in, b, out + k);
	}
}

/* Fisher-Yates over order[0..n), keyed by (seed, epoch). */
static void
shuffle(int32_t *order, int n, uint64_t seed, int epoch)
{
	cq_philox_key key = cq_philox_key_from_seed(cq_mix64(seed ^ 0x5eedf17ULL));

	for (int i = n - 1; i > 0; i--)
	{
		cq_philox_ctr r = cq_philox4x32((cq_philox_ctr) {{(uint32_t) i, (uint32_t) epoch, 0xe9, 0}}, key);
		uint32_t	j = (uint32_t) (((uint64_t) r.c[0] * (uint32_t) (i + 1)) >> 32);
		int32_t		tmp = order[i];

		order[i] = order[j];
		order[j] = tmp;
	}
}

/* What one fit allocates besides the trainer. */
typedef struct fit_bufs
{
	int32_t    *order;
	float	   *xb,
			   *yb,
			   *pred;
} fit_bufs;

static void
free_bufs(fit_bufs *b)
{
	cq_free(b->order);
	cq_free(b->xb);
	cq_free(b->yb);
	cq_free(b->pred);
}

/* One epoch of updates over the shuffled training tokens; mean batch loss in *mse. */
static cq_code
run_epoch(cq_antap_trainer *t, const cq_antap_data *d, fit_bufs *b, int epoch,
		  cq_antap_hook hook, void *arg, cq_antap_progress *pr, cq_error *err)
{
	size_t		cells = (size_t) t->m->cfg.pool_rows * t->m->cfg.pool_cols;
	int			bs = t->o.batch_size;
	double		sum = 0;
	cq_code		rc;

	shuffle(b->order, d->n_train, t->o.seed, epoch);
	pr->epoch = epoch;
	pr->batches = (d->n_train + bs - 1) / bs;
	pr->end_of_epoch = false;
	for (int k = 0, batch = 0; k < d->n_train; k += bs, batch++)
	{
		int			n = d->n_train - k < bs ? d->n_train - k : bs;
		double		loss;

		for (int j = 0; j < n; j++)
		{
			int32_t		i = b->order[k + j];

			memcpy(b->xb + j * cells, d->x + (size_t) i * cells, sizeof(float) * cells);
			b->yb[j] = d->y[i];
		}
		if ((rc = cq_antap_trainer_step(t, b->xb, b->yb, n, &loss, err)) != CQ_OK)
			return rc;
		sum += loss * n;
		pr->batch = batch + 1;
		pr->steps = t->t;
		if (hook && hook(arg, pr))
			return cq_fail(err, CQ_STOPPED, "stopped in epoch %d after batch %d", epoch, batch + 1);
	}
	pr->train_mse = sum / d->n_train;
	return CQ_OK;
}

/* MSE of the predictions pred[k] of the validation tokens d->valid[k]. */
static double
valid_mse(const cq_antap_data *d, const float *pred)
{
	double		s = 0;

	for (int k = 0; k < d->n_valid; k++)
	{
		double		e = (double) pred[k] - d->y[d->valid[k]];

		s += e * e;
	}
	return s / d->n_valid;
}

cq_code
cq_antap_fit(cq_antap_model *m, cq_antap_model *best, const cq_antap_data *d,
			 const cq_antap_train_options *o, cq_antap_hook hook, void *arg,
			 cq_antap_fit_result *res, cq_error *err)
{
	size_t		cells = (size_t) m->cfg.pool_rows * m->cfg.pool_cols;
	cq_antap_trainer *t;
	fit_bufs	b = {0};
	cq_antap_progress pr = {0};
	double		vmse;
	int			bad = 0;
	cq_code		rc;

	memset(res, 0, sizeof(*res));
	if (d->n_train < 1 || d->n_valid < 1)
		return cq_fail(err, CQ_EINVAL, "training needs at least one training and one validation token");
	if (o->max_epochs < 1 || o->patience < 1)
		return cq_fail(err, CQ_EINVAL, "max_epochs and patience must be at least 1");
	if ((rc = cq_antap_trainer_new(m, o, &t, err)) != CQ_OK)
		return rc;
	b.order = cq_alloc(sizeof(int32_t) * d->n_train);
	b.xb = cq_alloc(sizeof(float) * cells * o->batch_size);
	b.yb = cq_alloc(sizeof(float) * o->batch_size);
	b.pred = cq_alloc(sizeof(float) * d->n_valid);
	if (!b.order || !b.xb || !b.yb || !b.pred)
	{
		rc = cq_fail(err, CQ_ENOMEM, "out of memory for the ANTAP training buffers");
		goto done;
	}
	memcpy(b.order, d->train, sizeof(int32_t) * d->n_train);
	res->best_valid_mse = INFINITY;
	cq_antap_copy(best, m);
	for (int epoch = 1; epoch <= o->max_epochs; epoch++)
	{
		if ((rc = run_epoch(t, d, &b, epoch, hook, arg, &pr, err)) != CQ_OK)
			goto done;
		cq_antap_predict_rows(m, t->pass, d->x, d->valid, d->n_valid, b.xb, b.pred);
		vmse = valid_mse(d, b.pred);
		res->epochs = epoch;
		res->steps = t->t;
		if (vmse < res->best_valid_mse)
		{
			res->best_valid_mse = vmse;
			res->best_epoch = epoch;
			cq_antap_copy(best, m);
			bad = 0;
		}
		else
			bad++;
		pr.end_of_epoch = true;
		pr.valid_mse = vmse;
		pr.best_valid_mse = res->best_valid_mse;
		pr.best_epoch = res->best_epoch;
		if (hook && hook(arg, &pr))
		{
			rc = cq_fail(err, CQ_STOPPED, "stopped after epoch %d", epoch);
			goto done;
		}
		if (bad >= o->patience)
		{
			res->early_stopped = true;
			break;
		}
	}
	rc = CQ_OK;
done:
	free_bufs(&b);
	cq_antap_trainer_free(t);
	return rc;
}
