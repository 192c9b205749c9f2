/* The training state and its update step (train_state.h). */
#include "nn/train/train_state.h"

#include <math.h>
#include <string.h>

#include "common/mem.h"
#include "common/rng.h"
#include "nn/train/schedule.h"
#include "nn/train/dual_pass.h"
#include "nn/train/train_pass.h"

void
cq_train_config_default(cq_train_config *tc)
{
	*tc = (cq_train_config) {
		.lr = 5e-4, .warmup_init_lr = 1e-7, .warmup_updates = 4000,
		.adam = {0.9f, 0.98f, 1e-9f, 1e-4f}, .clip_norm = 0.0,
		.label_smoothing = 0.1f, .update_freq = 1, .max_tokens = 4096,
		.seed = 1, .dropout = true, .margin = 0.3f, .scale = 20.0f,
	};
}

cq_code
cq_train_config_validate(const cq_train_config *tc, cq_error *err)
{
	const cq_adamw *a = &tc->adam;

	if (!(tc->lr > 0.0 && tc->lr < 1.0) || !(tc->warmup_init_lr >= 0.0) ||
		tc->warmup_updates < 0)
		return cq_fail(err, CQ_EINVAL, "lr must be in (0, 1), warmup_init_lr and warmup_updates not negative");
	if (!(a->beta1 >= 0.0f && a->beta1 < 1.0f) || !(a->beta2 >= 0.0f && a->beta2 < 1.0f) ||
		!(a->eps > 0.0f) || !(a->weight_decay >= 0.0f && tc->lr * a->weight_decay < 1.0))
		return cq_fail(err, CQ_EINVAL, "adam betas must be in [0, 1), eps positive, weight decay in [0, 1/lr)");
	if (!(tc->clip_norm >= 0.0) || !(tc->label_smoothing >= 0.0f && tc->label_smoothing < 1.0f))
		return cq_fail(err, CQ_EINVAL, "clip_norm must not be negative, label smoothing in [0, 1)");
	if (tc->update_freq < 1 || tc->max_tokens < 1)
		return cq_fail(err, CQ_EINVAL, "update_freq and max_tokens must be positive");
	if (!(tc->margin >= 0.0f && tc->margin < 1.0f) || !(tc->scale > 0.0f && tc->scale <= 1000.0f))
		return cq_fail(err, CQ_EINVAL, "margin must be in [0, 1), scale in (0, 1000]");
	return CQ_OK;
}

static cq_code
copy_model(const cq_model *src, cq_model **out, cq_error *err)
{
	cq_code s = cq_model_new(&src->cfg, out, err);

	if (!s)
		memcpy((*out)->params, src->params, sizeof(float) * src->n_floats);
	return s;
}

void
cq_train_state_free(cq_train_state *st)
{
	if (!st)
		return;
	cq_model_free(st->model);
	cq_model_free(st->grad);
	cq_free(st->exp_avg);
	cq_free(st->exp_avg_sq);
	cq_free(st->ws);
	cq_free(st);
}

cq_code
cq_train_state_new(const cq_model *init, const cq_train_config *tc,
				   cq_train_state **out, cq_error *err)
{
	cq_train_state *st;
	cq_code s;

	*out = NULL;
	if ((s = cq_train_config_validate(tc, err)))
		return s;
	/* its linear weights are packed codes only (a checkpoint may embed any image) */
	if (init->compact)
		return cq_fail(err, CQ_EINVAL, "a model loaded from an int8 image or compacted cannot be trained");
	st = cq_alloc0(sizeof(*st));
	if (!st)
		return cq_fail(err, CQ_ENOMEM, "out of memory for the training state");
	st->tc = *tc;
	if ((s = copy_model(init, &st->model, err)) ||
		(s = cq_model_new(&init->cfg, &st->grad, err)))
	{
		cq_train_state_free(st);
		return s;
	}
	st->exp_avg = cq_alloc0(sizeof(float) * init->n_floats);
	st->exp_avg_sq = cq_alloc0(sizeof(float) * init->n_floats);
	if (!st->exp_avg || !st->exp_avg_sq)
	{
		cq_train_state_free(st);
		return cq_fail(err, CQ_ENOMEM, "out of memory for the optimizer state");
	}
	*out = st;
	return CQ_OK;
}

double
cq_train_next_lr(const cq_train_state *st)
{
	return cq_inverse_sqrt_lr(st->tc.lr, st->tc.warmup_init_lr, st->tc.warmup_updates,
							  st->step);
}

static cq_code
ensure_workspace(cq_train_state *st, size_t need, cq_error *err)
{
	if (st->ws_bytes >= need)
		return CQ_OK;
	cq_free(st->ws);
	st->ws_bytes = 0;
	st->ws = cq_alloc(need);
	if (!st->ws)
		return cq_fail(err, CQ_ENOMEM, "out of memory for a training workspace of %zu bytes", need);
	st->ws_bytes = need;
	return CQ_OK;
}

/* One micro-batch's pass: a translation model's or an encoder's (dual_pass.h). */
static cq_code
one_pass(cq_train_state *st, const cq_train_batch *b, const cq_train_dropout *dr,
		 cq_train_pass_out *o, cq_error *err)
{
	const cq_model_config *c = &st->model->cfg;
	cq_batch_shape shape;
	cq_code s;

	if (c->kind == CQ_KIND_ENCODER)
	{
		if ((s = cq_dual_pass_check(st->model, b->pairs, b->n_pairs, err)) ||
			(s = ensure_workspace(st, cq_dual_pass_workspace_bytes(c, b->pairs, b->n_pairs), err)))
			return s;
		return cq_dual_pass(st->model, st->grad, b->pairs, b->n_pairs, dr, st->tc.margin,
							st->tc.scale, st->ws, st->ws_bytes, o, err);
	}
	if ((s = cq_batch_shape_of(st->model, b->pairs, b->n_pairs, &shape, err)) ||
		(s = ensure_workspace(st, cq_train_pass_workspace_bytes(c, b->pairs, b->n_pairs), err)))
		return s;
	return cq_train_pass(st->model, st->grad, b->pairs, b->n_pairs, dr,
						 st->tc.label_smoothing, st->ws, st->ws_bytes, o, err);
}

static void
zero_grad(cq_train_state *st)
{
	memset(st->grad->params, 0, sizeof(float) * st->grad->n_floats);
}

cq_code
cq_train_gradients(cq_train_state *st, const cq_train_batch *batches, int n_batches,
				   cq_train_stats *stats, cq_error *err)
{
	cq_model   *g = st->grad;
	double		loss = 0.0,
				nll = 0.0,
				sq = 0.0;
	long		tokens = 0;
	int			pairs = 0;
	cq_train_dropout dr = {st->tc.dropout, cq_mix64(st->tc.seed ^ cq_mix64((uint64_t) st->step)), 0};
	bool		encoder = st->model->cfg.kind == CQ_KIND_ENCODER;
	cq_code s;

	memset(stats, 0, sizeof(*stats));
	if (n_batches < 1 || !batches)
		return cq_fail(err, CQ_EINVAL, "an update needs at least one batch");
	zero_grad(st);
	for (int i = 0; i < n_batches; i++)
	{
		cq_train_pass_out o;

		dr.pass = (uint32_t) i;
		if ((s = one_pass(st, &batches[i], &dr, &o, err)))
			goto fail;
		loss += o.loss;
		nll += o.nll;
		tokens += o.tokens;
		pairs += batches[i].n_pairs;
	}
	/* per target token (fairseq's sample_size), an encoder's per pair */
	double		norm = encoder ? pairs : tokens;
	float		inv = (float) (1.0 / norm);

	for (size_t j = 0; j < g->n_floats; j++)
	{
		g->params[j] *= inv;
		sq += (double) g->params[j] * g->params[j];
	}
	*stats = (cq_train_stats) {loss / norm, nll / norm, tokens, pairs, sqrt(sq),
	cq_train_next_lr(st), st->step};
	if (!isfinite(loss) || !isfinite(sq))
	{
		s = cq_fail(err, CQ_TRAIN_ENONFINITE,
					   "the loss (%g) or the gradient norm (%g) is not finite at update %lld",
					   loss / norm, sqrt(sq), (long long) st->step + 1);
		goto fail;
	}
	return CQ_OK;
fail:
	zero_grad(st);
	return s;
}

double
cq_clip_grad_norm(float *g, size_t n, double clip)
{
	double		sq = 0.0,
				norm,
				coef;

	for (size_t j = 0; j < n; j++)
		sq += (double) g[j] * g[j];
	norm = sqrt(sq);
	coef = clip / (norm + 1e-6);
	if (clip > 0.0 && coef < 1.0)
		for (size_t j = 0; j < n; j++)
			g[j] *= (float) coef;
	return norm;
}

cq_code
cq_train_step(cq_train_state *st, const cq_train_batch *batches, int n_batches,
			  cq_train_stats *stats, cq_error *err)
{
	cq_model   *g = st->grad;
	cq_code s = cq_train_gradients(st, batches, n_batches, stats, err);

	if (s)
		return s;
	cq_clip_grad_norm(g->params, g->n_floats, st->tc.clip_norm);
	cq_adamw_update(&st->tc.adam, st->step + 1, stats->lr, st->model->params, g->params,
					st->exp_avg, st->exp_avg_sq, g->n_floats);
	st->step++;
	stats->step = st->step;
	return CQ_OK;
}
