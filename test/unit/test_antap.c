/*
 * The ANTAP core (extension/antap): configuration, weight file, the 8:1:1
 * split, metrics, backward against central finite differences, and a fit
 * that must learn a learnable target.  test/ref/test_antap.py checks the
 * same passes against PyTorch.
 */
#include "unit.h"

#include <stdlib.h>

#include "antap/model.h"
#include "antap/pass.h"
#include "antap/train.h"
#include "common/mem.h"
#include "common/rng.h"

static const cq_antap_config small_cfg = {
	.pool_rows = 5, .pool_cols = 4, .seq_len = 3, .d_model = 4, .heads = 2,
	.ffn_dim = 6, .pred_factor = 3
};

/* Uniform on [-a, a) from Philox (seed, stream). */
static void
fill(float *x, size_t n, float a, uint64_t seed)
{
	cq_philox_key k = cq_philox_key_from_seed(seed);

	cq_philox_uniform(k, 1, 2, 3, 0, (int) n, x);
	for (size_t i = 0; i < n; i++)
		x[i] = (2.0f * x[i] - 1.0f) * a;
}

TEST(antap_config_json_roundtrip)
{
	cq_antap_config c,
				d;
	char		buf[512];
	size_t		n;
	cq_error	err = {0};
	int			dims[CQ_ANTAP_MAX_PRED + 1];

	cq_antap_config_default(&c);
	CHECK_INT_EQ(cq_antap_config_validate(&c, NULL), CQ_OK);
	n = cq_antap_config_to_json(&c, buf, sizeof(buf));
	CHECK(n > 0 && n < sizeof(buf));
	CHECK_INT_EQ(cq_antap_config_from_json(buf, n, &d, &err), CQ_OK);
	CHECK(memcmp(&c, &d, sizeof(c)) == 0);
	/* 512 -> 128 -> 32 -> 8 -> 2 -> 1 */
	CHECK_INT_EQ(cq_antap_pred_dims(&c, dims), 5);
	CHECK_INT_EQ(dims[1], 128);
	CHECK_INT_EQ(dims[4], 2);
	CHECK_INT_EQ(dims[5], 1);
	c.heads = 3;
	CHECK_INT_EQ(cq_antap_config_validate(&c, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "multiple of heads") != NULL);
	cq_antap_config_default(&c);
	c.pool_rows = 0;
	CHECK_INT_EQ(cq_antap_config_validate(&c, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "pool_rows") != NULL);
	CHECK_INT_EQ(cq_antap_config_from_json("{\"model\": \"antap\"}", 18, &d, &err), CQ_EFORMAT);
	CHECK_INT_EQ(cq_antap_config_from_json("[1]", 3, &d, &err), CQ_EFORMAT);
}

TEST(antap_file_roundtrip_and_damage)
{
	cq_antap_model *m,
			   *l;
	cq_error	err = {0};
	size_t		size;
	unsigned char *buf;

	CHECK_INT_EQ(cq_antap_new(&small_cfg, &m, &err), CQ_OK);
	cq_antap_init_random(m, 7);
	size = cq_antap_file_size(m);
	buf = malloc(size);
	CHECK_INT_EQ(cq_antap_file_write(m, buf, size, &err), CQ_OK);
	CHECK_INT_EQ(cq_antap_file_load(buf, size, &l, &err), CQ_OK);
	CHECK(l && memcmp(l->params, m->params, sizeof(float) * m->n_floats) == 0);
	CHECK(l && memcmp(&l->cfg, &m->cfg, sizeof(m->cfg)) == 0);
	cq_antap_free(l);
	/* every single-byte change is caught (checksum or header), never a crash */
	for (size_t i = 0; i < size; i += 7)
	{
		buf[i] ^= 0x40;
		CHECK_INT_EQ(cq_antap_file_load(buf, size, &l, &err), CQ_EFORMAT);
		CHECK(l == NULL);
		buf[i] ^= 0x40;
	}
	for (size_t len = 0; len < size; len += 97)
		CHECK_INT_EQ(cq_antap_file_load(buf, len, &l, &err), CQ_EFORMAT);
	CHECK_INT_EQ(cq_antap_file_write(m, buf, size - 1, &err), CQ_EINVAL);
	free(buf);
	cq_antap_free(m);
}

TEST(antap_split_8_1_1)
{
	int			tr,
				va,
				te;
	uint8_t		a[1000],
				b[1000];
	int			diff = 0;

	cq_antap_split_sizes(10, &tr, &va, &te);
	CHECK(tr == 8 && va == 1 && te == 1);
	cq_antap_split_sizes(1000, &tr, &va, &te);
	CHECK(tr == 800 && va == 100 && te == 100);
	cq_antap_split_sizes(15, &tr, &va, &te);
	CHECK(tr == 11 && va == 2 && te == 2);
	for (int n = 10; n <= 1000; n += 99)
	{
		int			cnt[3] = {0, 0, 0};

		cq_antap_split(n, 42, a);
		cq_antap_split(n, 42, b);
		CHECK(memcmp(a, b, n) == 0);
		for (int i = 0; i < n; i++)
			cnt[a[i]]++;
		cq_antap_split_sizes(n, &tr, &va, &te);
		CHECK(cnt[0] == tr && cnt[1] == va && cnt[2] == te);
	}
	cq_antap_split(1000, 43, b);
	for (int i = 0; i < 1000; i++)
		diff += a[i] != b[i];
	CHECK(diff > 100);			/* another seed, another split */
	/* the valid and test tokens are spread, not the last ones */
	cq_antap_split(1000, 42, a);
	diff = 0;
	for (int i = 0; i < 500; i++)
		diff += a[i] != CQ_ANTAP_TRAIN;
	CHECK(diff > 50 && diff < 150);
}

TEST(antap_metrics_by_hand)
{
	const float y[] = {0.0f, 0.5f, 1.0f, 0.5f};
	const float p[] = {0.25f, 0.5f, 0.75f, 0.0f};
	const int32_t idx[] = {0, 2};
	cq_antap_metrics m;

	cq_antap_metrics_of(p, y, NULL, 4, &m);
	/* errors .25 0 -.25 -.5: SSE .375, SAE 1, SST .5 */
	CHECK_NEAR(m.mse, 0.375 / 4, 1e-12);
	CHECK_NEAR(m.mae, 0.25, 1e-12);
	CHECK_NEAR(m.rmse, sqrt(0.375 / 4), 1e-12);
	CHECK_NEAR(m.r2, 1.0 - 0.375 / 0.5, 1e-12);
	cq_antap_metrics_of(p, y, idx, 2, &m);
	CHECK_NEAR(m.mse, 0.0625, 1e-12);
	CHECK_NEAR(m.r2, 1.0 - 0.125 / 0.5, 1e-12);
	cq_antap_metrics_of(p, y, idx + 1, 1, &m);
	CHECK(isnan(m.r2));
}

/* MSE of the batch through the model (double). */
static double
loss_of(const cq_antap_model *m, cq_antap_pass *p, const float *x, const float *y, int n)
{
	float		out[8];

	cq_antap_forward(m, p, x, n, out);
	return cq_antap_mse(out, y, n, NULL);
}

/*
 * Backward against central differences, every parameter of a small network.
 * The forward is float32: an output of O(1) carries a rounding error of a
 * few 1e-7 relative, so with h = 1e-2 the difference quotient is off by
 * ~1e-6 absolute (measured: <= 7e-7), and its truncation error h^2/6 |L'''|
 * is smaller still at these scales.  The gradients here are 5e-5 .. 2e-2 per
 * tensor, so we require max |fd - g| <= 2e-2 max |g| + 2e-6 per tensor.  A
 * 10% error in the softmax backward, a dropped residual, ReLU or GELU
 * derivative, or a 5% error in one dV entry each fail this (checked by
 * mutating pass.c).
 */
TEST(antap_backward_matches_finite_differences)
{
	cq_antap_model *m,
			   *g;
	cq_antap_pass *p;
	cq_error	err = {0};
	int			n = 3;
	size_t		cells = (size_t) small_cfg.pool_rows * small_cfg.pool_cols;
	float		x[3 * 20],
				y[3] = {0.2f, 0.9f, -0.4f},
				out[3],
				dout[3];
	const float h = 1e-2f;

	CHECK_INT_EQ(cq_antap_new(&small_cfg, &m, &err), CQ_OK);
	CHECK_INT_EQ(cq_antap_new(&small_cfg, &g, &err), CQ_OK);
	CHECK_INT_EQ(cq_antap_pass_new(&small_cfg, 4, &p, &err), CQ_OK);
	cq_antap_init_random(m, 11);
	/* non-trivial layer norm parameters, so their gradients are checked in general position */
	fill(m->attn_ln.w, 4, 0.5f, 3);
	for (int i = 0; i < 4; i++)
		m->attn_ln.w[i] += 1.0f;
	fill(m->attn_ln.b, 4, 0.3f, 4);
	fill(x, n * cells, 2.0f, 5);
	cq_antap_forward(m, p, x, n, out);
	cq_antap_mse(out, y, n, dout);
	cq_antap_backward(m, p, dout, g);
	for (int t = 0; t < m->n_tensors; t++)
	{
		const cq_tensor_info *ti = &m->tensors[t];
		double		gmax = 0,
					emax = 0;

		for (size_t i = 0; i < ti->numel; i++)
		{
			float	   *w = m->params + ti->offset + i,
						keep = *w;
			double		lp,
						lm,
						fd;

			*w = keep + h;
			lp = loss_of(m, p, x, y, n);
			*w = keep - h;
			lm = loss_of(m, p, x, y, n);
			*w = keep;
			fd = (lp - lm) / (2.0 * h);
			gmax = fmax(gmax, fabs(g->params[ti->offset + i]));
			emax = fmax(emax, fabs(fd - g->params[ti->offset + i]));
		}
		if (!(emax <= 2e-2 * gmax + 2e-6))
			unit_fail(__FILE__, __LINE__, "tensor %s: max |fd - grad| %.3g, max |grad| %.3g",
					  ti->name, emax, gmax);
	}
	/* gradients accumulate: a second backward doubles them */
	{
		float	   *g1 = malloc(sizeof(float) * g->n_floats);
		double		worst = 0;

		memcpy(g1, g->params, sizeof(float) * g->n_floats);
		cq_antap_forward(m, p, x, n, out);
		cq_antap_backward(m, p, dout, g);
		for (size_t i = 0; i < g->n_floats; i++)
			worst = fmax(worst, fabs(g->params[i] - 2.0f * g1[i]));
		CHECK(worst < 1e-5);
		free(g1);
	}
	cq_antap_pass_free(p);
	cq_antap_free(g);
	cq_antap_free(m);
}

/* A token's prediction does not depend on the rest of its batch. */
TEST(antap_forward_batch_independent)
{
	cq_antap_model *m;
	cq_antap_pass *p;
	float		x[4 * 20],
				all[4],
				one;

	CHECK_INT_EQ(cq_antap_new(&small_cfg, &m, NULL), CQ_OK);
	CHECK_INT_EQ(cq_antap_pass_new(&small_cfg, 4, &p, NULL), CQ_OK);
	cq_antap_init_random(m, 3);
	fill(x, 80, 1.0f, 9);
	cq_antap_forward(m, p, x, 4, all);
	for (int i = 0; i < 4; i++)
	{
		cq_antap_forward(m, p, x + i * 20, 1, &one);
		CHECK_NEAR(one, all[i], 1e-6 * fmax(1.0, fabs(all[i])));
	}
	cq_antap_pass_free(p);
	cq_antap_free(m);
}

/*
 * The fit learns a target that is a smooth function of the input (the mean
 * of the first pooled row through tanh), so the validation MSE must fall
 * well below the variance of the targets; with a short patience it stops
 * early, and State I is the best validation epoch.
 */
/* Stops at the end of epoch *arg (a positive number) or at batch -*arg of epoch 1. */
static bool
stop_at(void *arg, const cq_antap_progress *p)
{
	int			when = *(int *) arg;

	return when > 0 ? p->end_of_epoch && p->epoch == when :
		!p->end_of_epoch && p->epoch == 1 && p->batch == -when;
}

TEST(antap_fit_learns_and_stops_early)
{
	cq_antap_config cfg = small_cfg;
	cq_antap_model *m,
			   *best;
	cq_antap_train_options o;
	cq_antap_fit_result r;
	cq_error	err = {0};
	int			n = 300;
	size_t		cells = (size_t) cfg.pool_rows * cfg.pool_cols;
	float	   *x = malloc(sizeof(float) * n * cells),
			   *y = malloc(sizeof(float) * n);
	int32_t		tr[300],
				va[300];
	int			ntr = 0,
				nva = 0;
	uint8_t		split[300];
	double		mean = 0,
				var = 0;
	cq_antap_data d;

	fill(x, n * cells, 1.5f, 21);
	for (int i = 0; i < n; i++)
	{
		double		s = 0;

		for (int j = 0; j < cfg.pool_cols; j++)
			s += x[i * cells + j];
		y[i] = (float) (0.5 + 0.4 * tanh(s / cfg.pool_cols * 2.0));
		mean += y[i] / n;
	}
	for (int i = 0; i < n; i++)
		var += (y[i] - mean) * (y[i] - mean) / n;
	cq_antap_split(n, 1, split);
	for (int i = 0; i < n; i++)
	{
		if (split[i] == CQ_ANTAP_TRAIN)
			tr[ntr++] = i;
		else if (split[i] == CQ_ANTAP_VALID)
			va[nva++] = i;
	}
	d = (cq_antap_data) {x, y, tr, ntr, va, nva};
	cq_antap_train_options_default(&o);
	o.lr = 3e-3;
	o.max_epochs = 150;
	o.patience = 8;
	o.batch_size = 16;
	CHECK_INT_EQ(cq_antap_new(&cfg, &m, &err), CQ_OK);
	CHECK_INT_EQ(cq_antap_new(&cfg, &best, &err), CQ_OK);
	cq_antap_init_random(m, 2);
	CHECK_INT_EQ(cq_antap_fit(m, best, &d, &o, NULL, NULL, &r, &err), CQ_OK);
	CHECK(r.best_valid_mse < 0.25 * var);
	CHECK(r.best_epoch >= 1 && r.best_epoch <= r.epochs);
	CHECK(r.early_stopped == (r.epochs < o.max_epochs));
	if (r.early_stopped)
		CHECK_INT_EQ(r.epochs, r.best_epoch + o.patience);
	CHECK_INT_EQ(r.steps, (long long) r.epochs * ((ntr + 15) / 16));
	/* State I reproduces its validation MSE */
	{
		cq_antap_pass *p;
		float	   *pred = malloc(sizeof(float) * nva),
				   *gather = malloc(sizeof(float) * 16 * cells);
		cq_antap_metrics mv;
		float	   *yv = malloc(sizeof(float) * nva);

		CHECK_INT_EQ(cq_antap_pass_new(&cfg, 16, &p, &err), CQ_OK);
		cq_antap_predict_rows(best, p, x, va, nva, gather, pred);
		for (int k = 0; k < nva; k++)
			yv[k] = y[va[k]];
		cq_antap_metrics_of(pred, yv, NULL, nva, &mv);
		CHECK_NEAR(mv.mse, r.best_valid_mse, 1e-9);
		cq_antap_pass_free(p);
		free(pred);
		free(gather);
		free(yv);
	}
	/* the same seed trains the same weights */
	{
		cq_antap_model *m2,
				   *b2;
		cq_antap_fit_result r2;

		CHECK_INT_EQ(cq_antap_new(&cfg, &m2, &err), CQ_OK);
		CHECK_INT_EQ(cq_antap_new(&cfg, &b2, &err), CQ_OK);
		cq_antap_init_random(m2, 2);
		CHECK_INT_EQ(cq_antap_fit(m2, b2, &d, &o, NULL, NULL, &r2, &err), CQ_OK);
		CHECK(memcmp(m2->params, m->params, sizeof(float) * m->n_floats) == 0);
		CHECK(memcmp(b2->params, best->params, sizeof(float) * m->n_floats) == 0);
		cq_antap_free(m2);
		cq_antap_free(b2);
	}
	/* a hook that asks to stop is CQ_STOPPED, recorded in err with where */
	{
		cq_antap_model *m2,
				   *b2;
		cq_antap_fit_result r2;
		int			when = 2;

		CHECK_INT_EQ(cq_antap_new(&cfg, &m2, &err), CQ_OK);
		CHECK_INT_EQ(cq_antap_new(&cfg, &b2, &err), CQ_OK);
		cq_antap_init_random(m2, 2);
		err = (cq_error) {0};
		CHECK_INT_EQ(cq_antap_fit(m2, b2, &d, &o, stop_at, &when, &r2, &err), CQ_STOPPED);
		CHECK_INT_EQ(err.code, CQ_STOPPED);
		CHECK_STR_EQ(err.msg, "stopped after epoch 2");
		when = -3;
		err = (cq_error) {0};
		CHECK_INT_EQ(cq_antap_fit(m2, b2, &d, &o, stop_at, &when, &r2, &err), CQ_STOPPED);
		CHECK_INT_EQ(err.code, CQ_STOPPED);
		CHECK_STR_EQ(err.msg, "stopped in epoch 1 after batch 3");
		cq_antap_free(m2);
		cq_antap_free(b2);
	}
	/* a non-finite input refuses the update, naming it */
	{
		cq_antap_trainer *t;
		double		loss;
		float		keep = x[0];

		CHECK_INT_EQ(cq_antap_trainer_new(m, &o, &t, &err), CQ_OK);
		x[0] = NAN;
		CHECK_INT_EQ(cq_antap_trainer_step(t, x, y, 4, &loss, &err), CQ_ERANGE);
		CHECK(strstr(err.msg, "not finite") != NULL);
		x[0] = keep;
		CHECK_INT_EQ(cq_antap_trainer_step(t, x, y, 17, &loss, &err), CQ_EINVAL);
		cq_antap_trainer_free(t);
	}
	cq_antap_free(m);
	cq_antap_free(best);
	free(x);
	free(y);
}
