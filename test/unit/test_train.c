/*
 * The training core: every parameter tensor's gradient against central
 * finite differences of the float loss (dropout off and on), AdamW and the
 * schedule by hand, clipping, accumulation = one batch, checkpoint/resume,
 * non-finite detection, and a short run that learns a reversal task.
 */
#include "unit.h"

#include <stdlib.h>

#include "common/rng.h"
#include "nn/infer/batching.h"
#include "nn/model/modelfile.h"
#include "nn/train/schedule.h"
#include "nn/train/train_state.h"

static cq_model *micro_from(const cq_model_config *c, uint64_t seed);

static cq_model_config
micro_config(cq_activation act, cq_positions pos, bool tie, bool share)
{
	cq_model_config c;
	cq_error err;

	CHECK_INT_EQ(cq_config_preset("tiny", 24, share ? 24 : 28, &c, &err), CQ_OK);
	c.d_model = 16;
	c.heads = 2;
	c.ffn_dim = 24;
	c.encoder_layers = c.decoder_layers = 1;
	c.max_positions = 16;
	c.activation = act;
	c.positions = pos;
	c.tie_output = tie;
	c.share_embeddings = share;
	c.dropout = c.attention_dropout = c.activation_dropout = 0.2f;
	return c;
}

static cq_model *
micro_model(cq_activation act, cq_positions pos, bool tie, bool share, uint64_t seed)
{
	cq_model_config c = micro_config(act, pos, tie, share);

	return micro_from(&c, seed);
}

static cq_model *
micro_from(const cq_model_config *c, uint64_t seed)
{
	cq_model   *m = NULL;
	cq_error err;

	CHECK_INT_EQ(cq_model_new(c, &m, &err), CQ_OK);
	cq_model_init_random(m, seed);
	/* non-trivial norms and biases, so their gradients are exercised */
	cq_philox_key key = cq_philox_key_from_seed(seed + 99);

	for (int t = 0; t < m->n_tensors; t++)
	{
		const cq_tensor_info *ti = &m->tensors[t];
		bool		bias = strstr(ti->name, ".bias") != NULL,
					lnw = strstr(ti->name, "layer_norm.weight") != NULL ||
			strstr(ti->name, "layernorm_embedding.weight") != NULL;

		if (!bias && !lnw)
			continue;
		for (size_t i = 0; i < ti->numel; i++)
		{
			float		u;

			cq_philox_uniform(key, (uint32_t) t, 0, 0, (uint32_t) i, 1, &u);
			m->params[ti->offset + i] = (lnw ? 1.0f : 0.0f) + 0.4f * (u - 0.5f);
		}
	}
	return m;
}

/* Deterministic pairs: n pairs of lengths 1..max_len, ids 4..vocab-1. */
typedef struct pairs_buf
{
	int32_t		ids[64][2][16];
	cq_pair		p[64];
} pairs_buf;

static void
make_pairs(pairs_buf *b, int n, int vs, int vt, int max_len, uint64_t seed)
{
	cq_philox_key key = cq_philox_key_from_seed(seed);

	for (int i = 0; i < n; i++)
	{
		float		u[36];

		cq_philox_uniform(key, (uint32_t) i, 1, 0, 0, 36, u);
		int			ls = 1 + (int) (u[0] * max_len),
					lt = 1 + (int) (u[1] * max_len);

		for (int t = 0; t < 16; t++)
		{
			b->ids[i][0][t] = 4 + (int) (u[2 + t] * (vs - 4));
			b->ids[i][1][t] = 4 + (int) (u[18 + t] * (vt - 4));
		}
		b->p[i] = (cq_pair) {b->ids[i][0], ls, b->ids[i][1], lt, (uint64_t) i * 7 + 1};
	}
}

static cq_train_state *
new_state(cq_model *m, bool dropout, double clip)
{
	cq_train_config tc;
	cq_train_state *st = NULL;
	cq_error err;

	cq_train_config_default(&tc);
	tc.dropout = dropout;
	tc.clip_norm = clip;
	tc.lr = 1e-3;
	tc.warmup_updates = 3;
	CHECK_INT_EQ(cq_train_state_new(m, &tc, &st, &err), CQ_OK);
	return st;
}

static double
loss_of(cq_train_state *st, const cq_train_batch *b, int nb)
{
	cq_train_stats s;
	cq_error err;

	CHECK_INT_EQ(cq_train_gradients(st, b, nb, &s, &err), CQ_OK);
	return s.loss;
}

/*
 * For each tensor T: direction u = unit(g_T) + unit(random), normalised;
 * (L(θ + h u) - L(θ - h u)) / 2h against g_T . u.  Returns the worst
 * relative error over tensors whose directional derivative is not ~0.
 */
static double
finite_differences(cq_model *m, bool dropout, const char *label)
{
	pairs_buf	pb;
	cq_train_state *st = new_state(m, dropout, 0.0);
	cq_train_batch b = {pb.p, 5};
	cq_model   *mm = st->model;
	size_t		nf = mm->n_floats;
	float	   *g = malloc(sizeof(float) * nf),
			   *u = malloc(sizeof(float) * nf);
	double		worst = 0.0,
				gnorm = 0.0;
	const char *worst_name = "";
	cq_philox_key key = cq_philox_key_from_seed(5);
	int			checked = 0;

	make_pairs(&pb, 5, 24, mm->cfg.tgt_vocab_size, 7, 11);
	loss_of(st, &b, 1);
	memcpy(g, st->grad->params, sizeof(float) * nf);
	for (size_t i = 0; i < nf; i++)
		gnorm += (double) g[i] * g[i];
	gnorm = sqrt(gnorm);
	for (int t = 0; t < mm->n_tensors; t++)
	{
		const cq_tensor_info *ti = &mm->tensors[t];
		float	   *p = mm->params + ti->offset,
				   *gt = g + ti->offset,
				   *ut = u;
		double		ng = 0.0,
					nr = 0.0,
					nu = 0.0,
					dd = 0.0;
		const double h = 2e-3;

		cq_philox_uniform(key, (uint32_t) t, 2, 0, 0, (int) ti->numel, ut);
		for (size_t i = 0; i < ti->numel; i++)
		{
			ut[i] -= 0.5f;
			ng += (double) gt[i] * gt[i];
			nr += (double) ut[i] * ut[i];
		}
		ng = sqrt(ng);
		nr = sqrt(nr);
		for (size_t i = 0; i < ti->numel; i++)
		{
			ut[i] = (float) ((ng > 0 ? gt[i] / ng : 0.0) + ut[i] / nr);
			nu += (double) ut[i] * ut[i];
		}
		nu = sqrt(nu);
		for (size_t i = 0; i < ti->numel; i++)
		{
			ut[i] = (float) (ut[i] / nu);
			dd += (double) gt[i] * ut[i];
		}
		float	   *saved = malloc(sizeof(float) * ti->numel);

		memcpy(saved, p, sizeof(float) * ti->numel);
		for (size_t i = 0; i < ti->numel; i++)
			p[i] = saved[i] + (float) (h * ut[i]);
		double		lp = loss_of(st, &b, 1);

		for (size_t i = 0; i < ti->numel; i++)
			p[i] = saved[i] - (float) (h * ut[i]);
		double		lm = loss_of(st, &b, 1);

		memcpy(p, saved, sizeof(float) * ti->numel);
		free(saved);
		double		fd = (lp - lm) / (2 * h),
					rel = fabs(fd - dd) / fmax(fabs(dd), 1e-3 * gnorm);

		/* tensors with a true gradient of ~0 (attention key biases) count
		 * against the floor 1e-3 |g|: there both sides are rounding noise */
		if (rel > 2e-2)
			unit_fail(__FILE__, __LINE__, "%s: %s directional derivative %.6g, finite difference %.6g",
					  label, ti->name, dd, fd);
		if (rel > worst)
		{
			worst = rel;
			worst_name = ti->name;
		}
		checked++;
	}
	printf("  finite differences %-22s %d tensors, worst rel err %.2e (%s)\n", label,
		   checked, worst, worst_name);
	free(g);
	free(u);
	cq_train_state_free(st);
	return worst;
}

TEST(train_finite_differences)
{
	cq_model   *a = micro_model(CQ_ACT_RELU, CQ_POS_SINUSOIDAL, true, false, 1),
			   *b = micro_model(CQ_ACT_GELU, CQ_POS_LEARNED, false, true, 2);

	finite_differences(a, false, "relu/sin/tied");
	finite_differences(b, false, "gelu/learned/shared");
	finite_differences(a, true, "relu/sin/tied+dropout");
	finite_differences(b, true, "gelu/learned+dropout");
	cq_model_free(a);
	cq_model_free(b);
}

/* norm "rms" at every norm site, pre-norm with final norms and post-norm */
TEST(train_finite_differences_rms)
{
	cq_model_config c = micro_config(CQ_ACT_SWISH, CQ_POS_SINUSOIDAL, true, false);
	cq_model   *pre,
			   *post;

	c.norm = CQ_NORM_RMS;
	c.layernorm_embedding = true;
	pre = micro_from(&c, 3);
	c.post_norm = true;
	c.encoder_final_norm = c.decoder_final_norm = false;
	post = micro_from(&c, 4);
	finite_differences(pre, false, "rms pre, emb norm");
	finite_differences(post, true, "rms post+dropout");
	cq_model_free(pre);
	cq_model_free(post);
}

/*
 * Encoder models (dual_pass.h): the dual encoder's loss through mean pooling,
 * and through the first position with the pooler, a token type vector, the
 * embedding norm and post-norm blocks (LaBSE's layout), with dropout.
 */
TEST(train_finite_differences_encoder)
{
	cq_model_config c = micro_config(CQ_ACT_GELU, CQ_POS_LEARNED, true, true);
	cq_model   *mean,
			   *cls;

	cq_config_make_encoder(&c);
	mean = micro_from(&c, 12);
	c.pooling = CQ_POOL_CLS;
	c.pooler = c.token_type_embedding = c.layernorm_embedding = c.post_norm = true;
	c.encoder_final_norm = false;
	cls = micro_from(&c, 13);
	finite_differences(mean, false, "encoder, mean");
	finite_differences(cls, false, "encoder, cls+pooler, post");
	finite_differences(cls, true, "encoder, cls+dropout");
	cq_model_free(mean);
	cq_model_free(cls);
}

TEST(train_adamw_by_hand)
{
	/* t = 1: m = 0.1 g, v = 0.02 g^2, corrected m/sqrt(v) = sign(g) */
	cq_adamw	o = {0.9f, 0.98f, 1e-9f, 0.01f};
	float		p[2] = {1.0f, -2.0f},
				g[2] = {0.5f, -3.0f},
				m[2] = {0},
				v[2] = {0};

	cq_adamw_update(&o, 1, 0.1, p, g, m, v, 2);
	CHECK_NEAR(p[0], 1.0 * (1 - 0.001) - 0.1, 1e-6);
	CHECK_NEAR(p[1], -2.0 * (1 - 0.001) + 0.1, 1e-6);
	CHECK_NEAR(m[0], 0.05, 1e-7);
	CHECK_NEAR(v[1], 0.02 * 9.0, 1e-6);
	/* t = 2 with g = 0: m = 0.045, v = 0.0049; mhat = 0.045/0.19, vhat = 0.0049/0.0396 */
	float		z[2] = {0};
	float		before = p[0];

	cq_adamw_update(&o, 2, 0.1, p, z, m, v, 2);
	CHECK_NEAR(p[0], before * 0.999 - 0.1 * (0.045 / 0.19) / sqrt(0.0049 / 0.0396), 1e-6);
}

TEST(train_schedule_by_hand)
{
	CHECK_NEAR(cq_inverse_sqrt_lr(5e-4, 1e-7, 4000, 0), 1e-7, 1e-15);
	CHECK_NEAR(cq_inverse_sqrt_lr(5e-4, 1e-7, 4000, 2000), 2.5005e-4, 1e-12);
	CHECK_NEAR(cq_inverse_sqrt_lr(5e-4, 1e-7, 4000, 4000), 5e-4, 1e-15);
	CHECK_NEAR(cq_inverse_sqrt_lr(5e-4, 1e-7, 4000, 16000), 2.5e-4, 1e-15);
	CHECK_NEAR(cq_inverse_sqrt_lr(1e-3, 0.0, 0, 0), 1e-3, 1e-15);
	CHECK_NEAR(cq_inverse_sqrt_lr(1e-3, 0.0, 0, 4), 5e-4, 1e-15);
}

/* The plan from the expected updates: the rule of docs/training.md worked by hand. */
TEST(train_schedule_plan_by_hand)
{
	/* 1 / sqrt(4000 d): Vaswani et al.'s d^-0.5 4000^-0.5, for a warm-up of 4000 or more */
	CHECK_NEAR(cq_schedule_default_lr(64, 4000), 1.0 / 505.96442562694, 1e-15);
	CHECK_NEAR(cq_schedule_default_lr(256, 4000), 1.0 / 1011.9288512539, 1e-15);
	CHECK_NEAR(cq_schedule_default_lr(512, 9999), 1.0 / 1431.0835055999, 1e-15);
	/* shorter: times (4000 / w)^(1/4), at most 2 (250 and below) */
	CHECK_NEAR(cq_schedule_default_lr(256, 1000), sqrt(2.0) / 1011.9288512539, 1e-15);
	CHECK_NEAR(cq_schedule_default_lr(256, 250), 2.0 / 1011.9288512539, 1e-15);
	CHECK_NEAR(cq_schedule_default_lr(256, 50), 2.0 / 1011.9288512539, 1e-15);
	CHECK_NEAR(cq_schedule_default_lr(256, 0), 2.0 / 1011.9288512539, 1e-15);

	/* unknown length: the documented minimum */
	CHECK_INT_EQ(cq_schedule_warmup(0), 50);
	CHECK_INT_EQ(cq_schedule_warmup(-1), 50);
	/* shorter than the minimum: warm up over the whole run */
	CHECK_INT_EQ(cq_schedule_warmup(1), 1);
	CHECK_INT_EQ(cq_schedule_warmup(30), 30);
	CHECK_INT_EQ(cq_schedule_warmup(50), 50);
	/* 10 % below 50: the minimum */
	CHECK_INT_EQ(cq_schedule_warmup(300), 50);
	CHECK_INT_EQ(cq_schedule_warmup(509), 50);
	/* 10 %, rounded down */
	CHECK_INT_EQ(cq_schedule_warmup(510), 51);
	CHECK_INT_EQ(cq_schedule_warmup(1583), 158);
	CHECK_INT_EQ(cq_schedule_warmup(39999), 3999);
	/* at most 4000 (the old rule for a time budget: 40,000 assumed updates) */
	CHECK_INT_EQ(cq_schedule_warmup(40000), 4000);
	CHECK_INT_EQ(cq_schedule_warmup(INT64_C(1) << 40), 4000);

	CHECK_INT_EQ(cq_schedule_checkpoint_every(0), 1000);
	CHECK_INT_EQ(cq_schedule_checkpoint_every(1), 1);
	CHECK_INT_EQ(cq_schedule_checkpoint_every(10), 1);
	CHECK_INT_EQ(cq_schedule_checkpoint_every(11), 2);
	CHECK_INT_EQ(cq_schedule_checkpoint_every(1583), 159);
	CHECK_INT_EQ(cq_schedule_checkpoint_every(10000), 1000);
	CHECK_INT_EQ(cq_schedule_checkpoint_every(10001), 1000);

	CHECK_INT_EQ(cq_schedule_expected_updates(900.0, 0.5), 1800);
	CHECK_INT_EQ(cq_schedule_expected_updates(900.0, 0.7), 1285);	/* 1285.7 */
	CHECK_INT_EQ(cq_schedule_expected_updates(0.2, 0.5), 1);
	CHECK_INT_EQ(cq_schedule_expected_updates(-3.0, 0.5), 1);
	CHECK_INT_EQ(cq_schedule_expected_updates(900.0, NAN), 0);
	CHECK_INT_EQ(cq_schedule_expected_updates(900.0, 0.0), 0);
	CHECK_INT_EQ(cq_schedule_expected_updates(900.0, INFINITY), 0);
}

/* Calibration with made-up pass times: when it stops and what it measures. */
TEST(train_schedule_calibration)
{
	cq_calibration c;
	int			n = 0;

	/* 15 minutes, passes of 1.5 s then 1 s: all 1 + 5 passes (6.5 s < 45 s) */
	cq_calibration_start(&c, 900.0);
	while (cq_calibration_more(&c))
		cq_calibration_add(&c, n++ == 0 ? 1.5 : 1.0);
	CHECK_INT_EQ(c.passes, 6);
	CHECK_NEAR(cq_calibration_seconds(&c), 6.5, 1e-12);
	CHECK_NEAR(cq_calibration_seconds_per_update(&c), 1.0, 1e-12);
	CHECK_INT_EQ(cq_schedule_expected_updates(900.0 - cq_calibration_seconds(&c),
											  cq_calibration_seconds_per_update(&c)), 893);

	/* 30 s, passes of 0.5 s: stops once 5 % (1.5 s) is used, after 3 passes */
	cq_calibration_start(&c, 30.0);
	while (cq_calibration_more(&c))
		cq_calibration_add(&c, 0.5);
	CHECK_INT_EQ(c.passes, 3);
	CHECK_NEAR(cq_calibration_seconds_per_update(&c), 0.5, 1e-12);

	/* 10 s, a first pass of 1 s (> 0.5 s): too short to measure a rate */
	cq_calibration_start(&c, 10.0);
	CHECK(cq_calibration_more(&c));
	cq_calibration_add(&c, 1.0);
	CHECK(!cq_calibration_more(&c));
	CHECK(isnan(cq_calibration_seconds_per_update(&c)));
	CHECK_INT_EQ(cq_schedule_expected_updates(9.0, cq_calibration_seconds_per_update(&c)), 0);
	CHECK_INT_EQ(cq_schedule_warmup(0), CQ_SCHEDULE_WARMUP_MIN);

	/* no budget left at all: one pass, no rate */
	cq_calibration_start(&c, 0.0);
	CHECK(cq_calibration_more(&c));
	cq_calibration_add(&c, 0.01);
	CHECK(!cq_calibration_more(&c));
}

TEST(train_clipping)
{
	float		g[2] = {3.0f, 4.0f},
				h[2] = {0.3f, 0.4f};

	CHECK_NEAR(cq_clip_grad_norm(g, 2, 1.0), 5.0, 1e-6);
	CHECK_NEAR(g[0], 0.6, 1e-6);
	CHECK_NEAR(g[1], 0.8, 1e-6);
	CHECK_NEAR(cq_clip_grad_norm(h, 2, 1.0), 0.5, 1e-6);
	CHECK(h[0] == 0.3f);			/* below the bound: untouched */
	float		g0 = g[0];

	CHECK_NEAR(cq_clip_grad_norm(g, 2, 0.0), 1.0, 1e-6);
	CHECK(g[0] == g0);			/* 0 = off */
}

TEST(train_accumulation_equals_one_batch)
{
	cq_model   *m = micro_model(CQ_ACT_GELU, CQ_POS_LEARNED, false, false, 3);
	pairs_buf	pb;
	cq_train_state *a = new_state(m, false, 0.0),
			   *b = new_state(m, false, 0.0);
	cq_train_batch two[2] = {{pb.p, 3}, {pb.p + 3, 4}},
				one = {pb.p, 7};
	cq_train_stats sa,
				sb;
	cq_error err;
	double		worst = 0.0,
				scale = 0.0;

	make_pairs(&pb, 7, 24, 28, 9, 4);
	CHECK_INT_EQ(cq_train_gradients(a, two, 2, &sa, &err), CQ_OK);
	CHECK_INT_EQ(cq_train_gradients(b, &one, 1, &sb, &err), CQ_OK);
	CHECK_INT_EQ(sa.tokens, sb.tokens);
	CHECK_NEAR(sa.loss, sb.loss, 1e-6 * sb.loss);
	for (size_t i = 0; i < m->n_floats; i++)
	{
		worst = fmax(worst, fabs(a->grad->params[i] - b->grad->params[i]));
		scale = fmax(scale, fabs(b->grad->params[i]));
	}
	CHECK(worst <= 1e-5 * scale);
	/* and a full update from each lands on the same weights */
	CHECK_INT_EQ(cq_train_step(a, two, 2, &sa, &err), CQ_OK);
	CHECK_INT_EQ(cq_train_step(b, &one, 1, &sb, &err), CQ_OK);
	CHECK_NEAR(sa.grad_norm, sb.grad_norm, 1e-5 * sb.grad_norm);
	cq_train_state_free(a);
	cq_train_state_free(b);
	cq_model_free(m);
}

TEST(train_checkpoint_resume_is_exact)
{
	cq_model   *m = micro_model(CQ_ACT_RELU, CQ_POS_SINUSOIDAL, true, false, 5);
	pairs_buf	pb;
	cq_train_state *a = new_state(m, true, 1.0),
			   *b = NULL;
	cq_train_batch bs[3] = {{pb.p, 4}, {pb.p + 4, 4}, {pb.p + 8, 4}};
	cq_train_stats s,
				sb;
	cq_error err;
	size_t		size;
	char	   *img;

	make_pairs(&pb, 12, 24, 28, 9, 6);
	for (int i = 0; i < 3; i++)
		CHECK_INT_EQ(cq_train_step(a, &bs[i], 1, &s, &err), CQ_OK);
	a->epoch = 2;
	a->batch_in_epoch = 17;
	size = cq_train_checkpoint_size(a);
	img = malloc(size);
	CHECK_INT_EQ(cq_train_checkpoint_write(a, img, size, &err), CQ_OK);
	CHECK_INT_EQ(cq_train_checkpoint_load(img, size, &b, &err), CQ_OK);
	CHECK_INT_EQ(b->step, 3);
	CHECK_INT_EQ(b->epoch, 2);
	CHECK_INT_EQ(b->batch_in_epoch, 17);
	CHECK(b->tc.dropout && b->tc.clip_norm == 1.0 && b->tc.lr == 1e-3);
	for (int i = 0; i < 3; i++)
	{
		CHECK_INT_EQ(cq_train_step(a, &bs[(i + 1) % 2], 2, &s, &err), CQ_OK);
		CHECK_INT_EQ(cq_train_step(b, &bs[(i + 1) % 2], 2, &sb, &err), CQ_OK);
		CHECK(s.loss == sb.loss && s.grad_norm == sb.grad_norm && s.lr == sb.lr);
	}
	CHECK(memcmp(a->model->params, b->model->params, sizeof(float) * m->n_floats) == 0);
	CHECK(memcmp(a->exp_avg_sq, b->exp_avg_sq, sizeof(float) * m->n_floats) == 0);
	cq_train_state_free(b);
	b = NULL;
	/* damaged images are refused */
	img[size / 2] ^= 1;
	CHECK_INT_EQ(cq_train_checkpoint_load(img, size, &b, &err), CQ_EFORMAT);
	img[size / 2] ^= 1;
	CHECK_INT_EQ(cq_train_checkpoint_load(img, size - 1, &b, &err), CQ_EFORMAT);
	img[0] = 'X';
	CHECK_INT_EQ(cq_train_checkpoint_load(img, size, &b, &err), CQ_EFORMAT);
	CHECK(b == NULL);
	free(img);
	cq_train_state_free(a);
	cq_model_free(m);
}

TEST(train_dropout_is_keyed_by_seed_and_step)
{
	cq_model   *m = micro_model(CQ_ACT_RELU, CQ_POS_SINUSOIDAL, true, false, 7);
	pairs_buf	pb;
	cq_train_state *a = new_state(m, true, 0.0),
			   *b = new_state(m, true, 0.0),
			   *off = new_state(m, false, 0.0);
	cq_train_batch bt = {pb.p, 6};

	make_pairs(&pb, 6, 24, 28, 9, 8);
	double		la = loss_of(a, &bt, 1),
				lb = loss_of(b, &bt, 1),
				lo = loss_of(off, &bt, 1);

	CHECK(la == lb);
	CHECK(la != lo);
	a->step = 1;				/* another update draws other masks */
	CHECK(loss_of(a, &bt, 1) != la);
	cq_train_state_free(a);
	cq_train_state_free(b);
	cq_train_state_free(off);
	cq_model_free(m);
}

TEST(train_nonfinite_is_refused)
{
	cq_model   *m = micro_model(CQ_ACT_RELU, CQ_POS_SINUSOIDAL, true, false, 9);
	pairs_buf	pb;
	cq_train_state *st = new_state(m, false, 0.0);
	cq_train_batch bt = {pb.p, 4};
	cq_train_stats s;
	cq_error err;
	float	   *before = malloc(sizeof(float) * m->n_floats);

	make_pairs(&pb, 4, 24, 28, 9, 10);
	st->model->dec[0].fc1.w[3] = NAN;
	memcpy(before, st->model->params, sizeof(float) * m->n_floats);
	CHECK_INT_EQ(cq_train_step(st, &bt, 1, &s, &err), CQ_TRAIN_ENONFINITE);
	CHECK(strstr(err.msg, "not finite") != NULL);
	CHECK_INT_EQ(st->step, 0);
	CHECK(memcmp(before, st->model->params, sizeof(float) * m->n_floats) == 0);
	/* a huge weight overflowing the logits is caught too */
	st->model->dec[0].fc1.w[3] = 0.0f;
	st->model->dec_ln.w[0] = 1e38f;
	CHECK_INT_EQ(cq_train_step(st, &bt, 1, &s, &err), CQ_TRAIN_ENONFINITE);
	CHECK_INT_EQ(st->step, 0);
	free(before);
	cq_train_state_free(st);
	cq_model_free(m);
}

TEST(train_bad_batches_are_refused)
{
	cq_model   *m = micro_model(CQ_ACT_RELU, CQ_POS_SINUSOIDAL, true, false, 9);
	cq_train_state *st = new_state(m, false, 0.0);
	int32_t		bad[] = {4, 99},
				longer[20] = {0};
	cq_pair		p1 = {bad, 2, bad, 1, 0},
				p2 = {longer, 20, bad, 1, 0};
	cq_train_batch b1 = {&p1, 1},
				b2 = {&p2, 1};
	cq_train_stats s;
	cq_error err;

	CHECK_INT_EQ(cq_train_step(st, &b1, 1, &s, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_train_step(st, &b2, 1, &s, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_train_step(st, &b1, 0, &s, &err), CQ_EINVAL);
	CHECK_INT_EQ(st->step, 0);
	cq_train_state_free(st);
	cq_model_free(m);
}

/* ---- batching ------------------------------------------------------------ */

TEST(train_batching_budget_and_determinism)
{
	enum
	{
	N = 500};
	int			sl[N],
				tl[N],
				seen[N];
	cq_batcher *a = NULL,
			   *b = NULL;
	cq_error err;
	long		skipped = 0;
	cq_philox_key key = cq_philox_key_from_seed(3);

	for (int i = 0; i < N; i++)
	{
		float		u[2];

		cq_philox_uniform(key, (uint32_t) i, 0, 0, 0, 2, u);
		sl[i] = (int) (u[0] * 70);
		tl[i] = (int) (u[1] * 70);
		skipped += sl[i] + 1 > 64 || tl[i] + 1 > 64;
	}
	CHECK_INT_EQ(cq_batcher_new(sl, tl, N, 200, 64, 42, &a, &err), CQ_OK);
	CHECK_INT_EQ(cq_batcher_new(sl, tl, N, 200, 64, 42, &b, &err), CQ_OK);
	CHECK(skipped > 0);
	CHECK_INT_EQ(a->n_skipped, skipped);
	CHECK_INT_EQ(a->n_kept + a->n_skipped, N);
	for (int epoch = 0; epoch < 2; epoch++)
	{
		long		total = 0,
					same_place = 0;

		memset(seen, 0, sizeof(seen));
		for (long k = 0; k < a->n_batches; k++)
		{
			const long *pa,
					   *pb;
			int			na,
						nb,
						longest = 0;

			CHECK_INT_EQ(cq_batcher_batch(a, epoch, k, &pa, &na, &err), CQ_OK);
			CHECK_INT_EQ(cq_batcher_batch(b, epoch, k, &pb, &nb, &err), CQ_OK);
			CHECK(na == nb && memcmp(pa, pb, sizeof(long) * na) == 0);
			for (int j = 0; j < na; j++)
			{
				int			len = (sl[pa[j]] > tl[pa[j]] ? sl[pa[j]] : tl[pa[j]]) + 1;

				longest = len > longest ? len : longest;
				seen[pa[j]]++;
				CHECK(sl[pa[j]] + 1 <= 64 && tl[pa[j]] + 1 <= 64);
			}
			CHECK(na >= 1 && (long) na * longest <= 200);
			total += na;
			/* another epoch orders the batches differently */
			const long *p0;
			int			n0;

			cq_batcher_batch(b, epoch + 5, k, &p0, &n0, &err);
			same_place += p0 == pa;
		}
		CHECK_INT_EQ(total, a->n_kept);
		for (int i = 0; i < N; i++)
			CHECK(seen[i] == ((sl[i] + 1 > 64 || tl[i] + 1 > 64) ? 0 : 1));
		CHECK(same_place < a->n_batches / 2);
	}
	const long *p;
	int			n;

	CHECK_INT_EQ(cq_batcher_batch(a, 0, a->n_batches, &p, &n, &err), CQ_EINVAL);
	cq_batcher_free(a);
	cq_batcher_free(b);
	/* an over-long pair alone exceeds the budget: skipped, not an endless batch */
	int			s1[2] = {3, 30},
				t1[2] = {3, 2};

	CHECK_INT_EQ(cq_batcher_new(s1, t1, 2, 16, 64, 1, &a, &err), CQ_OK);
	CHECK_INT_EQ(a->n_skipped, 1);
	CHECK_INT_EQ(a->n_batches, 1);
	cq_batcher_free(a);
}

/* ---- does it learn? ------------------------------------------------------ */

/*
 * Reversal of random sequences over 12 symbols with `tiny` (d 64, 2 + 2
 * layers): after 300 updates the per-token nll must fall below half the
 * unigram entropy of the targets (what a model ignoring the source gets).
 */
TEST(train_learns_reversal)
{
	cq_model_config c;
	cq_model   *m = NULL;
	cq_train_state *st = NULL;
	cq_train_config tc;
	cq_error err;
	enum
	{
	B = 24, L = 8, V = 16};
	int32_t		src[B][L],
				tgt[B][L];
	cq_pair		pairs[B];
	double		counts[V] = {0},
				total = 0.0,
				unigram = 0.0,
				first = 0.0,
				last = 0.0;
	cq_philox_key key = cq_philox_key_from_seed(77);

	CHECK_INT_EQ(cq_config_preset("tiny", V, V, &c, &err), CQ_OK);
	c.max_positions = 16;
	CHECK_INT_EQ(cq_model_new(&c, &m, &err), CQ_OK);
	cq_model_init_random(m, 1);
	cq_train_config_default(&tc);
	tc.lr = 2e-3;
	tc.warmup_updates = 30;
	tc.clip_norm = 1.0;
	CHECK_INT_EQ(cq_train_state_new(m, &tc, &st, &err), CQ_OK);
	printf("  reversal, tiny, %d pairs/update: nll per token at update", B);
	for (int step = 0; step < 300; step++)
	{
		cq_train_stats s;
		cq_train_batch bt = {pairs, B};

		for (int i = 0; i < B; i++)
		{
			float		u[L + 1];

			cq_philox_uniform(key, (uint32_t) step, (uint32_t) i, 0, 0, L + 1, u);
			int			len = 3 + (int) (u[L] * (L - 2));

			for (int t = 0; t < len; t++)
				src[i][t] = 4 + (int) (u[t] * (V - 4));
			for (int t = 0; t < len; t++)
			{
				tgt[i][t] = src[i][len - 1 - t];
				counts[tgt[i][t]]++;
			}
			counts[CQ_EOS_ID]++;
			total += len + 1;
			pairs[i] = (cq_pair) {src[i], len, tgt[i], len, (uint64_t) (step * B + i)};
		}
		CHECK_INT_EQ(cq_train_step(st, &bt, 1, &s, &err), CQ_OK);
		if (step == 0)
			first = s.nll;
		if (step >= 290)
			last += s.nll / 10;
		if (step % 50 == 0 || step == 299)
			printf(" %d: %.3f", step + 1, s.nll);
	}
	for (int v = 0; v < V; v++)
		if (counts[v] > 0)
			unigram -= counts[v] / total * log(counts[v] / total);
	printf("\n  unigram entropy %.3f nats, first %.3f, mean of last 10 %.3f\n", unigram,
		   first, last);
	CHECK(last < 0.5 * unigram);
	cq_train_state_free(st);
	cq_model_free(m);
}
