/* Random initialisation of a model (cq_model_init_random in model.h). */
#include <math.h>
#include <string.h>

#include "common/rng.h"
#include "nn/model/model.h"

/* Uniform on [-bound, bound) from stream `stream` of key. */
static void
fill_uniform(float *x, size_t n, float bound, cq_philox_key key, uint32_t stream)
{
	for (size_t i = 0; i < n; i += 4)
	{
		cq_philox_ctr r = cq_philox4x32((cq_philox_ctr) {{(uint32_t) (i >> 2), (uint32_t) (i >> 34), stream, 0}}, key);

		for (int w = 0; w < 4 && i + w < n; w++)
			x[i + w] = (2.0f * cq_u32_to_unit(r.c[w]) - 1.0f) * bound;
	}
}

/* N(0, std^2) by Box-Muller, two normals per pair of words. */
static void
fill_normal(float *x, size_t n, float std, cq_philox_key key, uint32_t stream)
{
	for (size_t i = 0; i < n; i += 4)
	{
		cq_philox_ctr r = cq_philox4x32((cq_philox_ctr) {{(uint32_t) (i >> 2), (uint32_t) (i >> 34), stream, 1}}, key);

		for (int w = 0; w < 4 && i + w < n; w += 2)
		{
			double		u1 = 1.0 - cq_u32_to_unit(r.c[w]),	/* (0, 1] */
						u2 = cq_u32_to_unit(r.c[w + 1]),
						rad = sqrt(-2.0 * log(u1));

			x[i + w] = (float) (std * rad * cos(2.0 * M_PI * u2));
			if (i + w + 1 < n)
				x[i + w + 1] = (float) (std * rad * sin(2.0 * M_PI * u2));
		}
	}
}

static void
xavier(cq_linear *lin, int blocks, float gain, cq_philox_key key, uint32_t *stream)
{
	int			rows = lin->out / blocks;
	float		bound = gain * sqrtf(6.0f / (float) (rows + lin->in));

	for (int b = 0; b < blocks; b++)
		fill_uniform(lin->w + (size_t) b * rows * lin->in, (size_t) rows * lin->in,
					 bound, key, (*stream)++);
	memset(lin->b, 0, sizeof(float) * lin->out);
}

/* A norm is the identity at first: gain 1, bias (if its kind has one) 0. */
static void
ones(cq_norm *n)
{
	for (int i = 0; n->w && i < n->d; i++)
		n->w[i] = 1.0f;
	if (n->b)
		memset(n->b, 0, sizeof(float) * n->d);
}

static void
embedding(float *e, int rows, int d, cq_philox_key key, uint32_t stream)
{
	fill_normal(e, (size_t) rows * d, 1.0f / sqrtf((float) d), key, stream);
	memset(e + (size_t) CQ_PAD_ID * d, 0, sizeof(float) * d);
}

void
cq_model_init_random(cq_model *m, uint64_t seed)
{
	const cq_model_config *c = &m->cfg;
	cq_philox_key key = cq_philox_key_from_seed(cq_mix64(seed));
	float		qkv_gain = 1.0f / sqrtf(2.0f);
	int			d = c->d_model;
	uint32_t	s = 16;				/* streams 0..15: embeddings; then one per block */

	embedding(m->src_embed, c->src_vocab_size, d, key, 0);
	if (!c->share_embeddings)
		embedding(m->tgt_embed, c->tgt_vocab_size, d, key, 1);
	if (m->src_pos)
	{
		fill_normal(m->src_pos, (size_t) c->max_positions * d, 1.0f / sqrtf(d), key, 2);
		if (m->tgt_pos)			/* an encoder has no decoder positions */
			fill_normal(m->tgt_pos, (size_t) c->max_positions * d, 1.0f / sqrtf(d), key, 3);
	}
	if (!c->tie_output)
		fill_normal(m->out_proj, (size_t) c->tgt_vocab_size * d, 1.0f / sqrtf(d), key, 4);
	for (int i = 0; i < c->encoder_layers; i++)
	{
		cq_encoder_layer *e = &m->enc[i];

		ones(&e->attn_ln);
		ones(&e->ffn_ln);
		xavier(&e->qkv, 3, qkv_gain, key, &s);
		xavier(&e->attn_out, 1, 1.0f, key, &s);
		xavier(&e->fc1, 1, 1.0f, key, &s);
		xavier(&e->fc2, 1, 1.0f, key, &s);
	}
	for (int i = 0; i < c->decoder_layers; i++)
	{
		cq_decoder_layer *e = &m->dec[i];

		ones(&e->self_ln);
		ones(&e->cross_ln);
		ones(&e->ffn_ln);
		xavier(&e->self_qkv, 3, qkv_gain, key, &s);
		xavier(&e->self_out, 1, 1.0f, key, &s);
		xavier(&e->cross_q, 1, qkv_gain, key, &s);
		xavier(&e->cross_kv, 2, qkv_gain, key, &s);
		xavier(&e->cross_out, 1, 1.0f, key, &s);
		xavier(&e->fc1, 1, 1.0f, key, &s);
		xavier(&e->fc2, 1, 1.0f, key, &s);
	}
	/* an encoder's pooler after the layers; its token type vector stays 0 */
	if (m->pooler.w)
		xavier(&m->pooler, 1, 1.0f, key, &s);
	if (m->tok_type)
		memset(m->tok_type, 0, sizeof(float) * d);
	/* the optional norms and the output bias: identity and 0 */
	ones(&m->enc_ln);
	ones(&m->dec_ln);
	ones(&m->src_embed_ln);
	ones(&m->tgt_embed_ln);
	if (m->out_bias)
		memset(m->out_bias, 0, sizeof(float) * c->tgt_vocab_size);
}
