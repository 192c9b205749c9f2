/*
 * Encoder models (kind encoder): the configuration and its tensors, the
 * sentence vector worked by hand on a model whose blocks are the identity
 * (embedding, final norm, mean or first-position pooling, the pooler, the L2
 * norm), the same bits alone, in a batch and on any number of threads, the
 * refusals, retrieval precision at 1 by hand, the dual-encoder loss against
 * its definition on the model's own vectors, the checkpoint of its
 * hyper-parameters, and a short run that learns a toy translation task.
 * (The gradients against finite differences: test_train.c.)
 */
#include <math.h>
#include "unit.h"

#include <stdlib.h>

#include "common/parallel.h"
#include "common/rng.h"
#include "nn/infer/encode.h"
#include "nn/model/modelfile.h"
#include "nn/train/retrieval.h"
#include "nn/train/train_state.h"

/* A tiny encoder: d 16, 2 heads, 2 layers, vocabulary v. */
static cq_model_config
enc_config(int v, cq_pooling pooling, bool pooler)
{
	cq_model_config c;
	cq_error	err;

	CHECK_INT_EQ(cq_config_preset("tiny", v, v, &c, &err), CQ_OK);
	cq_config_make_encoder(&c);
	c.d_model = 16;
	c.heads = 2;
	c.ffn_dim = 32;
	c.encoder_layers = 2;
	c.max_positions = 12;
	c.pooling = pooling;
	c.pooler = pooler;
	return c;
}

static cq_model *
enc_model(const cq_model_config *c, uint64_t seed, bool pack)
{
	cq_model   *m = NULL;
	cq_error	err;

	CHECK_INT_EQ(cq_model_new(c, &m, &err), CQ_OK);
	cq_model_init_random(m, seed);
	if (pack)
		CHECK_INT_EQ(cq_model_pack(m, &err), CQ_OK);
	return m;
}

static cq_code
encode(const cq_model *m, const cq_sentence *s, int n, float *out, cq_error *err)
{
	size_t		bytes = cq_encode_sentences_bytes(&m->cfg, s, n);
	void	   *ws = malloc(bytes);
	cq_code		st = cq_encode(m, s, n, NULL, ws, bytes, out, err);

	free(ws);
	return st;
}

TEST(encoder_config_and_tensors)
{
	cq_model_config c = enc_config(30, CQ_POOL_CLS, true),
				back;
	cq_model   *m;
	cq_error	err;
	char		json[1100];
	const cq_tensor_info *t;

	c.token_type_embedding = true;
	c.positions = CQ_POS_LEARNED;
	c.layernorm_embedding = true;
	cq_config_to_json(&c, json, sizeof(json));
	CHECK(strstr(json, "\"kind\": \"encoder\"") && strstr(json, "\"pooling\": \"cls\"") &&
		  strstr(json, "\"pooler\": true") && strstr(json, "\"token_type_embedding\": true") &&
		  strstr(json, "\"decoder_layers\": 0"));
	CHECK_INT_EQ(cq_config_from_json(json, strlen(json), &back, &err), CQ_OK);
	CHECK(cq_config_equal(&c, &back));
	CHECK_INT_EQ(cq_config_sentence_tokens(&c), 10);
	m = enc_model(&c, 1, false);
	/* one embedding, no decoder, no output projection */
	for (int i = 0; i < m->n_tensors; i++)
		CHECK(strncmp(m->tensors[i].name, "decoder.", 8) != 0);
	t = cq_model_tensor(m, "encoder.pooler.dense.weight");
	CHECK(t && t->dims[0] == 16 && t->dims[1] == 16);
	t = cq_model_tensor(m, "encoder.embed_token_type");
	CHECK(t && t->ndim == 1 && t->dims[0] == 16);
	CHECK(cq_model_tensor(m, "encoder.embed_positions") != NULL);
	CHECK(cq_model_tensor(m, "encoder.layernorm_embedding.weight") != NULL);
	CHECK(cq_model_tensor(m, "encoder.pooler.dense.bias") != NULL);
	/* the weight file round trip */
	{
		size_t		size = cq_modelfile_size(m);
		char	   *img = malloc(size);
		cq_model   *m2 = NULL;

		CHECK_INT_EQ(cq_modelfile_write(m, img, size, &err), CQ_OK);
		CHECK_INT_EQ(cq_modelfile_load(img, size, &m2, &err), CQ_OK);
		CHECK(m2 && cq_config_equal(&m->cfg, &m2->cfg) && m2->pooler.w && m2->tok_type);
		CHECK(m2 && memcmp(m->params, m2->params, sizeof(float) * m->n_floats) == 0);
		cq_model_free(m2);
		free(img);
	}
	cq_model_free(m);
	/* a translation model without them writes none of the keys */
	CHECK_INT_EQ(cq_config_preset("tiny", 30, 30, &c, &err), CQ_OK);
	cq_config_to_json(&c, json, sizeof(json));
	CHECK(!strstr(json, "kind") && !strstr(json, "pool") && !strstr(json, "token_type"));
}

TEST(encoder_config_refusals)
{
	cq_model_config c;
	cq_error	err;
	const char *bad[] = {
		/* a key of the other kind */
		"\"pooling\": \"cls\"", "\"pooler\": true", "\"token_type_embedding\": true",
		"\"kind\": \"encoder\"",	/* with decoder_layers 2 */
		"\"kind\": \"decoder\"", "\"pooling\": \"max\"", "\"pooler\": 1",
	};
	const char *why[] = {"encoder models only", "encoder models only", "encoder models only",
		"must be 0", "\"translation\" or \"encoder\"", "\"mean\" or \"cls\"", "boolean"};

	for (int i = 0; i < (int) (sizeof(bad) / sizeof(bad[0])); i++)
	{
		char		json[600];

		snprintf(json, sizeof(json),
				 "{\"d_model\": 16, \"heads\": 2, \"encoder_layers\": 1, \"decoder_layers\": 2, "
				 "\"ffn_dim\": 8, \"activation\": \"relu\", \"dropout\": 0, \"attention_dropout\": 0, "
				 "\"activation_dropout\": 0, \"max_positions\": 8, \"positions\": \"sinusoidal\", "
				 "\"tie_output\": true, \"share_embeddings\": true, \"src_vocab_size\": 20, "
				 "\"tgt_vocab_size\": 20, %s}", bad[i]);
		CHECK_INT_EQ(cq_config_from_json(json, strlen(json), &c, &err), CQ_EINVAL);
		if (!strstr(err.msg, why[i]))
			unit_fail(__FILE__, __LINE__, "%s: \"%s\"", bad[i], err.msg);
	}
	c = enc_config(30, CQ_POOL_MEAN, false);
	c.tgt_vocab_size = 31;
	CHECK_INT_EQ(cq_config_validate(&c, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "one vocabulary") != NULL);
	c = enc_config(30, CQ_POOL_MEAN, false);
	c.share_embeddings = false;
	CHECK_INT_EQ(cq_config_validate(&c, &err), CQ_EINVAL);
	c = enc_config(30, CQ_POOL_MEAN, false);
	c.output_bias = true;
	CHECK_INT_EQ(cq_config_validate(&c, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "translation models only") != NULL);
}

/*
 * With every linear of the blocks zero, each block is the identity (x + 0),
 * so a sentence's rows are N_final(E[tok] sqrt(d) + P[t] + tt) and its vector
 * can be computed here from the tables alone.
 */
static void
by_hand(const cq_model *m, const int32_t *ids, int len, float *want)
{
	int			d = m->cfg.d_model,
				L = len + 2;
	double		pooled[64] = {0},
				z[64],
				sq = 0.0;

	for (int t = 0; t < L; t++)
	{
		int32_t		tok = t == 0 ? CQ_BOS_ID : t <= len ? ids[t - 1] : CQ_EOS_ID;
		double		x[64],
					mean = 0.0,
					var = 0.0;

		for (int j = 0; j < d; j++)
		{
			x[j] = (double) m->src_embed[tok * d + j] * sqrt((double) d) +
				m->sinusoid[t * d + j] + (m->tok_type ? m->tok_type[j] : 0.0);
			mean += x[j] / d;
		}
		for (int j = 0; j < d; j++)
			var += (x[j] - mean) * (x[j] - mean) / d;
		for (int j = 0; j < d; j++)
		{
			double		y = (x[j] - mean) / sqrt(var + m->cfg.layer_norm_eps) *
				m->enc_ln.w[j] + m->enc_ln.b[j];

			if (m->cfg.pooling == CQ_POOL_MEAN)
				pooled[j] += y / L;
			else if (t == 0)
				pooled[j] = y;
		}
	}
	for (int i = 0; i < d; i++)
	{
		z[i] = pooled[i];
		if (m->cfg.pooler)
		{
			double		a = m->pooler.b[i];

			for (int j = 0; j < d; j++)
				a += (double) m->pooler.w[i * d + j] * pooled[j];
			z[i] = tanh(a);
		}
		sq += z[i] * z[i];
	}
	for (int i = 0; i < d; i++)
		want[i] = (float) (z[i] / sqrt(sq));
}

TEST(encoder_vector_by_hand)
{
	int32_t		ids[] = {7, 4, 19, 11, 5};

	for (int k = 0; k < 4; k++)
	{
		cq_model_config c = enc_config(24, k & 1 ? CQ_POOL_CLS : CQ_POOL_MEAN, k >= 2);
		cq_model   *m;
		float		got[16],
					want[16];
		cq_sentence s = {ids, 5, 0};
		cq_error	err;
		double		worst = 0.0;

		c.token_type_embedding = k == 3;
		m = enc_model(&c, 5 + k, false);
		for (int i = 0; i < c.encoder_layers; i++)
		{
			cq_linear  *l[] = {&m->enc[i].qkv, &m->enc[i].attn_out, &m->enc[i].fc1, &m->enc[i].fc2};

			for (int j = 0; j < 4; j++)
			{
				memset(l[j]->w, 0, sizeof(float) * l[j]->out * l[j]->in);
				memset(l[j]->b, 0, sizeof(float) * l[j]->out);
			}
		}
		for (int j = 0; j < 16; j++)
		{
			m->enc_ln.w[j] = 1.0f + 0.05f * j;
			m->enc_ln.b[j] = 0.01f * (j - 8);
			if (m->tok_type)
				m->tok_type[j] = 0.3f - 0.02f * j;
			if (m->pooler.b)
				m->pooler.b[j] = 0.1f * (j % 3);
		}
		CHECK_INT_EQ(cq_model_pack(m, &err), CQ_OK);
		CHECK_INT_EQ(encode(m, &s, 1, got, &err), CQ_OK);
		by_hand(m, ids, 5, want);
		for (int j = 0; j < 16; j++)
			worst = fmax(worst, fabs(got[j] - want[j]));
		if (worst > 2e-6)
			unit_fail(__FILE__, __LINE__, "case %d (%s pooling%s): worst difference %.3g", k,
					  k & 1 ? "cls" : "mean", k >= 2 ? ", pooler" : "", worst);
		cq_model_free(m);
	}
}

TEST(encoder_same_bits_alone_in_batch_and_on_threads)
{
	cq_model_config c = enc_config(40, CQ_POOL_MEAN, true);
	cq_model   *m = enc_model(&c, 9, true);
	enum
	{
	N = 7};
	int32_t		ids[N][10];
	cq_sentence s[N];
	float		alone[N][16],
				batch[N][16];
	cq_philox_key key = cq_philox_key_from_seed(4);
	cq_error	err;
	int			saved = cq_parallel_threads();

	for (int i = 0; i < N; i++)
	{
		float		u[11];

		cq_philox_uniform(key, (uint32_t) i, 0, 0, 0, 11, u);
		s[i] = (cq_sentence) {ids[i], i == 2 ? 0 : 1 + (int) (u[10] * 9.99f), (uint64_t) i};
		for (int t = 0; t < 10; t++)
			ids[i][t] = 4 + (int) (u[t] * 35.99f);
	}
	cq_parallel_set_threads(1);
	for (int i = 0; i < N; i++)
	{
		double		sq = 0.0;

		CHECK_INT_EQ(encode(m, &s[i], 1, alone[i], &err), CQ_OK);
		for (int j = 0; j < 16; j++)
			sq += (double) alone[i][j] * alone[i][j];
		CHECK_NEAR(sq, 1.0, 1e-6);
	}
	for (int t = 1; t <= 4; t *= 2)
	{
		cq_parallel_set_threads(t);
		memset(batch, 0, sizeof(batch));
		CHECK_INT_EQ(encode(m, s, N, batch[0], &err), CQ_OK);
		CHECK(memcmp(alone, batch, sizeof(alone)) == 0);
		/* and a batch in another order */
		CHECK_INT_EQ(encode(m, s + 3, N - 3, batch[3], &err), CQ_OK);
		CHECK_INT_EQ(encode(m, s, 3, batch[0], &err), CQ_OK);
		CHECK(memcmp(alone, batch, sizeof(alone)) == 0);
	}
	cq_parallel_set_threads(saved);
	/* an unpacked (training) model gives the same vectors within rounding */
	{
		cq_model   *u = enc_model(&c, 9, false);
		double		worst = 0.0;

		CHECK_INT_EQ(encode(u, s, N, batch[0], &err), CQ_OK);
		for (int i = 0; i < N; i++)
			for (int j = 0; j < 16; j++)
				worst = fmax(worst, fabs(batch[i][j] - alone[i][j]));
		CHECK(worst < 1e-5);
		cq_model_free(u);
	}
	cq_model_free(m);
}

/*
 * Sentences shared out to the pool in parts (cq_encode_parallel) get the
 * bits cq_encode gives each alone, on 1 to 4 lanes; a workspace a byte short
 * is refused.
 */
TEST(encoder_parallel_same_bits_as_alone)
{
	cq_model_config c = enc_config(40, CQ_POOL_MEAN, true);
	cq_model   *m;
	enum
	{
	N = 9};
	int32_t		ids[N][30];
	cq_sentence s[N];
	float		alone[N][16],
				got[N][16];
	cq_philox_key key = cq_philox_key_from_seed(8);
	cq_error	err;
	int			saved = cq_parallel_threads();

	c.max_positions = 40;
	m = enc_model(&c, 11, true);
	for (int i = 0; i < N; i++)
	{
		float		u[31];

		cq_philox_uniform(key, (uint32_t) i, 0, 0, 0, 31, u);
		s[i] = (cq_sentence) {ids[i], i == 4 ? 0 : 1 + (int) (u[30] * 29.99f), (uint64_t) i};
		for (int t = 0; t < 30; t++)
			ids[i][t] = 4 + (int) (u[t] * 35.99f);
	}
	cq_parallel_set_threads(1);
	for (int i = 0; i < N; i++)
		CHECK_INT_EQ(encode(m, &s[i], 1, alone[i], &err), CQ_OK);
	for (int t = 1; t <= 4; t++)
	{
		size_t		bytes = cq_encode_parallel_bytes(&m->cfg, s, N, t);
		void	   *ws = malloc(bytes);

		cq_parallel_set_threads(t);
		memset(got, 0, sizeof(got));
		CHECK_INT_EQ(cq_encode_parallel(m, s, N, NULL, t, ws, bytes, got[0], &err), CQ_OK);
		CHECK(memcmp(alone, got, sizeof(alone)) == 0);
		CHECK_INT_EQ(cq_encode_parallel(m, s, N, NULL, t, ws, bytes - 1, got[0], &err), CQ_EINTERNAL);
		free(ws);
	}
	CHECK(cq_encode_parallel_bytes(&m->cfg, s, N, 1) == cq_encode_sentences_bytes(&m->cfg, s, N));
	cq_parallel_set_threads(saved);
	cq_model_free(m);
}

TEST(encoder_refusals)
{
	cq_model_config c = enc_config(20, CQ_POOL_MEAN, false);
	cq_model   *m = enc_model(&c, 2, true),
			   *t = NULL;
	int32_t		ids[12] = {4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
				bad[] = {4, 20};
	cq_sentence ok = {ids, 10, 0},
				longer = {ids, 11, 0},
				outside = {bad, 2, 0};
	float		out[16];
	cq_error	err;
	char		ws[64];
	cq_pair		p = {ids, 2, ids, 2, 0};
	cq_batch_shape shape;

	CHECK_INT_EQ(encode(m, &ok, 1, out, &err), CQ_OK);
	CHECK_INT_EQ(encode(m, &longer, 1, out, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "has 11 tokens, the model takes at most 10") != NULL);
	CHECK_INT_EQ(encode(m, &outside, 1, out, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "outside the vocabulary") != NULL);
	CHECK_INT_EQ(encode(m, &ok, 0, out, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_encode(m, &ok, 1, NULL, ws, sizeof(ws), out, &err), CQ_EINTERNAL);
	/* an encoder scores no pairs; a translation model embeds no sentences */
	CHECK_INT_EQ(cq_batch_shape_of(m, &p, 1, &shape, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "encoder model") != NULL);
	CHECK_INT_EQ(cq_config_preset("tiny", 20, 20, &c, &err), CQ_OK);
	CHECK_INT_EQ(cq_model_new(&c, &t, &err), CQ_OK);
	CHECK_INT_EQ(encode(t, &ok, 1, out, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "translation model") != NULL);
	cq_model_free(t);
	cq_model_free(m);
}

TEST(retrieval_precision_by_hand)
{
	/* x0 ties y0 with y2, x1 is closer to y0 than to y1, x2 ties too: no hit */
	float		x[3][2] = {{1, 0}, {0.8f, 0.6f}, {1, 0}},
				y[3][2] = {{1, 0}, {0, 1}, {1, 0}},
				scratch[9];
	bool		hit[3];

	CHECK_INT_EQ(cq_retrieval_scratch_floats(3), 9);
	CHECK_INT_EQ(cq_retrieval_hits(x[0], y[0], 3, 2, scratch, hit), 0);
	CHECK(!hit[0] && !hit[1] && !hit[2]);
	/* y2 and x2 turned away: x0 and x2 find their own */
	y[2][0] = 0.0f;
	y[2][1] = -1.0f;
	x[2][0] = 0.6f;
	x[2][1] = -0.8f;
	CHECK_INT_EQ(cq_retrieval_hits(x[0], y[0], 3, 2, scratch, hit), 2);
	CHECK(hit[0] && !hit[1] && hit[2]);
}

TEST(retrieval_figures_by_hand)
{
	/*
	 * x . y by hand: row 0 [1, 0, 0], row 1 [0.8, 0.6, -0.6], row 2 [0.6,
	 * -0.8, 0.8]: positives 1, 0.6, 0.8; mean negatives 0, 0.1, -0.1
	 */
	float		x[3][2] = {{1, 0}, {0.8f, 0.6f}, {0.6f, -0.8f}},
				y[3][2] = {{1, 0}, {0, 1}, {0, -1}},
				scratch[9];
	bool		hit[3];
	double		pos[3],
				neg[3];

	CHECK_INT_EQ(cq_retrieval_figures(x[0], y[0], 3, 2, scratch, hit, pos, neg), 2);
	CHECK(hit[0] && !hit[1] && hit[2]);
	CHECK(fabs(pos[0] - 1) < 1e-6 && fabs(pos[1] - 0.6) < 1e-6 && fabs(pos[2] - 0.8) < 1e-6);
	CHECK(fabs(neg[0]) < 1e-6 && fabs(neg[1] - 0.1) < 1e-6 && fabs(neg[2] + 0.1) < 1e-6);
	/* one pair: no negatives */
	CHECK_INT_EQ(cq_retrieval_figures(x[0], y[0], 1, 2, scratch, hit, pos, neg), 1);
	CHECK(neg[0] == 0 && fabs(pos[0] - 1) < 1e-6);
}

/* n pairs of a toy task: x in tokens 4..21, y the same words + 18, shuffled. */
static void
toy_pairs(int32_t (*x)[8], int32_t (*y)[8], cq_pair *p, int n, uint64_t seed, int first_key)
{
	cq_philox_key key = cq_philox_key_from_seed(seed);

	for (int i = 0; i < n; i++)
	{
		float		u[17];
		int			len;

		cq_philox_uniform(key, (uint32_t) i, 0, 0, 0, 17, u);
		len = 2 + (int) (u[16] * 6.99f);
		for (int t = 0; t < len; t++)
			x[i][t] = 4 + (int) (u[t] * 17.99f);
		for (int t = 0; t < len; t++)
			y[i][t] = x[i][(t + (int) (u[8] * len)) % len] + 18;
		p[i] = (cq_pair) {x[i], len, y[i], len, (uint64_t) (first_key + i)};
	}
}

/* The loss is its definition on the model's own vectors (dropout off). */
TEST(dual_loss_is_its_definition)
{
	cq_model_config c = enc_config(40, CQ_POOL_MEAN, false);
	cq_model   *m = enc_model(&c, 3, false);
	cq_train_config tc;
	cq_train_state *st = NULL;
	int32_t		x[6][8],
				y[6][8];
	cq_pair		p[6];
	cq_sentence s[12];
	float		e[12][16];
	cq_train_batch b = {p, 6};
	cq_train_stats stats;
	cq_error	err;
	double		loss = 0.0,
				nll = 0.0;
	long		positions = 0;

	cq_train_config_default(&tc);
	tc.dropout = false;
	tc.margin = 0.25f;
	tc.scale = 7.0f;
	CHECK_INT_EQ(cq_train_state_new(m, &tc, &st, &err), CQ_OK);
	toy_pairs(x, y, p, 6, 8, 0);
	CHECK_INT_EQ(cq_train_gradients(st, &b, 1, &stats, &err), CQ_OK);
	for (int i = 0; i < 6; i++)
	{
		s[i] = (cq_sentence) {p[i].src, p[i].src_len, 0};
		s[6 + i] = (cq_sentence) {p[i].tgt, p[i].tgt_len, 0};
		positions += p[i].src_len + p[i].tgt_len + 4;
	}
	CHECK_INT_EQ(encode(st->model, s, 12, e[0], &err), CQ_OK);
	for (int dir = 0; dir < 2; dir++)
		for (int i = 0; i < 6; i++)
			for (int margin = 0; margin < 2; margin++)
			{
				double		l[6],
							mx = -1e30,
							sum = 0.0;

				for (int j = 0; j < 6; j++)
				{
					double		cos = 0.0;

					for (int k = 0; k < 16; k++)
						cos += (double) e[dir ? 6 + i : i][k] * e[dir ? j : 6 + j][k];
					l[j] = 7.0 * (cos - (margin && i == j ? 0.25 : 0.0));
					mx = fmax(mx, l[j]);
				}
				for (int j = 0; j < 6; j++)
					sum += exp(l[j] - mx);
				*(margin ? &loss : &nll) += mx + log(sum) - l[i];
			}
	CHECK_NEAR(stats.loss, loss / 6, 1e-5);
	CHECK_NEAR(stats.nll, nll / 6, 1e-5);
	CHECK(stats.loss > stats.nll);	/* the margin makes the task harder */
	CHECK_INT_EQ(stats.tokens, positions);
	CHECK_INT_EQ(stats.pairs, 6);
	cq_train_state_free(st);
	cq_model_free(m);
}

TEST(dual_checkpoint_keeps_margin_and_scale)
{
	cq_model_config c = enc_config(40, CQ_POOL_CLS, true);
	cq_model   *m = enc_model(&c, 4, false);
	cq_train_config tc;
	cq_train_state *a = NULL,
			   *b = NULL;
	int32_t		x[8][8],
				y[8][8];
	cq_pair		p[8];
	cq_train_batch bt[2] = {{p, 4}, {p + 4, 4}};
	cq_train_stats sa,
				sb;
	cq_error	err;
	size_t		size;
	char	   *img;

	cq_train_config_default(&tc);
	tc.margin = 0.2f;
	tc.scale = 12.5f;
	tc.lr = 1e-3;
	tc.warmup_updates = 2;
	CHECK_INT_EQ(cq_train_state_new(m, &tc, &a, &err), CQ_OK);
	toy_pairs(x, y, p, 8, 9, 0);
	CHECK_INT_EQ(cq_train_step(a, bt, 1, &sa, &err), CQ_OK);
	size = cq_train_checkpoint_size(a);
	img = malloc(size);
	CHECK_INT_EQ(cq_train_checkpoint_write(a, img, size, &err), CQ_OK);
	CHECK_INT_EQ(cq_train_checkpoint_load(img, size, &b, &err), CQ_OK);
	CHECK(b && b->tc.margin == 0.2f && b->tc.scale == 12.5f && b->step == 1);
	for (int i = 0; b && i < 3; i++)
	{
		CHECK_INT_EQ(cq_train_step(a, &bt[(i + 1) % 2], 1, &sa, &err), CQ_OK);
		CHECK_INT_EQ(cq_train_step(b, &bt[(i + 1) % 2], 1, &sb, &err), CQ_OK);
		CHECK(sa.loss == sb.loss && sa.grad_norm == sb.grad_norm);
	}
	CHECK(b && memcmp(a->model->params, b->model->params, sizeof(float) * m->n_floats) == 0);
	free(img);
	cq_train_state_free(a);
	cq_train_state_free(b);
	cq_model_free(m);
}

/*
 * A dual encoder learns the toy task (y = x's words shifted by 18, in
 * another order): retrieval precision at 1 among 64 unseen pairs goes from
 * chance to nearly all.
 */
TEST(dual_encoder_learns_a_toy_task)
{
	cq_model_config c = enc_config(40, CQ_POOL_MEAN, false);
	cq_model   *m;
	cq_train_config tc;
	cq_train_state *st = NULL;
	int32_t		x[64][8],
				y[64][8];
	cq_pair		p[64];
	cq_sentence s[128];
	float	   *e = malloc(sizeof(float) * 128 * 16),
				scratch[64 * 64];
	bool		hit[64];
	cq_error	err;
	long		before,
				after;

	c.dropout = c.attention_dropout = c.activation_dropout = 0.0f;
	m = enc_model(&c, 11, false);
	cq_train_config_default(&tc);
	tc.lr = 3e-3;
	tc.warmup_updates = 20;
	CHECK_INT_EQ(cq_train_state_new(m, &tc, &st, &err), CQ_OK);
	toy_pairs(x, y, p, 64, 1000, 0);
	for (int i = 0; i < 64; i++)
	{
		s[i] = (cq_sentence) {p[i].src, p[i].src_len, 0};
		s[64 + i] = (cq_sentence) {p[i].tgt, p[i].tgt_len, 0};
	}
	CHECK_INT_EQ(encode(st->model, s, 128, e, &err), CQ_OK);
	before = cq_retrieval_hits(e, e + 64 * 16, 64, 16, scratch, hit);
	for (int step = 0; step < 200; step++)
	{
		int32_t		bx[32][8],
					by[32][8];
		cq_pair		bp[32];
		cq_train_batch b = {bp, 32};
		cq_train_stats stats;

		toy_pairs(bx, by, bp, 32, (uint64_t) step + 1, step * 32);
		CHECK_INT_EQ(cq_train_step(st, &b, 1, &stats, &err), CQ_OK);
	}
	CHECK_INT_EQ(encode(st->model, s, 128, e, &err), CQ_OK);
	after = cq_retrieval_hits(e, e + 64 * 16, 64, 16, scratch, hit);
	printf("  dual encoder, toy task: P@1 among 64 unseen pairs %ld/64 before, %ld/64 after 200 updates\n",
		   before, after);
	CHECK(before <= 16);
	CHECK(after >= 56);
	free(e);
	cq_train_state_free(st);
	cq_model_free(m);
}
