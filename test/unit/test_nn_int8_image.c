/*
 * int8 images (models/FORMAT.md, "int8 tensors"): an int8 version stores
 * its weights as codes and per-row scales (weight file version 2), and the
 * model loaded from them computes exactly what the same float32 weights
 * quantized at load compute (a version-1 int8 image, as versions were
 * stored before version 2), without a float32 copy of its linear weights.
 */
#include <stdlib.h>

#include "common/le.h"
#include "common/tensorfile.h"
#include "nn/model/modelfile.h"
#include "nn/layers/packed.h"
#include "nn/ops/qgemm.h"
#include "nn_outputs.h"
#include "unit.h"

/* 0: tied output, sinusoids; 1: untied, learned positions; 2: shared and tied */
static cq_model *
float_model(int variant, int bits, bool int8_embeddings)
{
	cq_model_config c;
	cq_model   *m = NULL;
	cq_error	err;

	CHECK_INT_EQ(cq_config_preset("tiny", 34, variant == 2 ? 34 : 36, &c, &err), CQ_OK);
	c.d_model = 32;
	c.heads = 4;
	c.ffn_dim = 64;
	c.max_positions = 24;
	c.tie_output = variant != 1;
	c.share_embeddings = variant == 2;
	c.positions = variant == 1 ? CQ_POS_LEARNED : CQ_POS_SINUSOIDAL;
	c.dropout = c.attention_dropout = c.activation_dropout = 0.1f;
	c.precision = CQ_PRECISION_INT8;
	c.weight_bits = bits;
	c.embedding_precision = int8_embeddings ? CQ_PRECISION_INT8 : CQ_PRECISION_FLOAT32;
	CHECK_INT_EQ(cq_model_new(&c, &m, &err), CQ_OK);
	if (m)
		cq_model_init_random(m, 11 + variant);
	return m;
}

/* ---- a version-1 image of an int8 model: its float32 weights (the old way) ---- */

static void
v1_entry(const void *ctx, int i, cq_tensorfile_entry *e)
{
	const cq_tensor_info *t = &((const cq_model *) ctx)->tensors[i];

	*e = (cq_tensorfile_entry) {t->name, t->ndim, {(uint32_t) t->dims[0], (uint32_t) t->dims[1]},
	CQ_DTYPE_FLOAT32};
}

static void
v1_fill(const void *ctx, int i, unsigned char *dst)
{
	const cq_model *m = ctx;

	cq_le_copy_floats(dst, m->params + m->tensors[i].offset, m->tensors[i].numel);
}

static unsigned char *
v1_image(const cq_model *m, size_t *len)
{
	static const cq_tensorfile_format v1 = {
		.magic = CQ_MODELFILE_MAGIC, .version = 1, .what = "weight file",
		.bad_magic = "not a corpq weight file", .config_max = 65536, .tensors_max = 100000,
		.section_max = (uint64_t) 1 << 48,
	};
	cq_tensorfile_source src = {m->n_tensors, v1_entry, v1_fill, m};
	char		cfg[1024];
	size_t		clen = cq_config_to_json(&m->cfg, cfg, sizeof(cfg));
	unsigned char *p;
	cq_error	err;

	*len = cq_tensorfile_size(clen, &src);
	p = malloc(*len);
	CHECK_INT_EQ(cq_tensorfile_write(&v1, p, *len, cfg, clen, &src, &err), CQ_OK);
	return p;
}

static unsigned char *
image(const cq_model *m, size_t *len)
{
	unsigned char *p;
	cq_error	err;

	*len = cq_modelfile_size(m);
	p = malloc(*len);
	CHECK_INT_EQ(cq_modelfile_write(m, p, *len, &err), CQ_OK);
	return p;
}

/* Loaded as the model cache loads it: packed, then compacted. */
static cq_model *
load_packed(const unsigned char *p, size_t len)
{
	cq_model   *m = NULL;
	cq_error	err;

	CHECK_INT_EQ(cq_modelfile_load(p, len, &m, &err), CQ_OK);
	if (!m)
		return NULL;
	CHECK_INT_EQ(cq_model_pack(m, &err), CQ_OK);
	CHECK_INT_EQ(cq_model_compact(m, &err), CQ_OK);
	return m;
}

static bool
same_pack(const cq_linear *a, const cq_linear *b)
{
	return a->qpacked && b->qpacked &&
		memcmp(a->qpacked, b->qpacked, cq_qgemm_packed_bytes(a->out, a->in)) == 0;
}

TEST(int8_image_has_the_bits_of_quantize_at_load)
{
	int32_t		ids[NN_PAIRS][24];
	cq_pair		p[NN_PAIRS];

	nn_test_pairs(ids, p);
	for (int variant = 0; variant < 3; variant++)
		for (int bits = 7; bits <= 8; bits++)
		{
			cq_model   *m = float_model(variant, bits, false),
					   *old,
					   *now;
			size_t		old_len,
						len;
			unsigned char *old_img = v1_image(m, &old_len),
					   *img = image(m, &len);
			nn_outputs *a = malloc(sizeof(nn_outputs)),
					   *b = malloc(sizeof(nn_outputs));

			CHECK_INT_EQ(cq_le_get_u32(old_img + 8), 1);
			CHECK_INT_EQ(cq_le_get_u32(img + 8), 2);
			old = load_packed(old_img, old_len);
			now = load_packed(img, len);
			CHECK(old && now);
			if (!old || !now)
				continue;
			/* the stored codes and scales make the very packed weights */
			CHECK(same_pack(&old->enc[1].fc2, &now->enc[1].fc2) &&
				  same_pack(&old->dec[0].cross_kv, &now->dec[0].cross_kv) &&
				  same_pack(&old->output, &now->output));
			CHECK_INT_EQ(cq_qgemm_packed_bits(now->output.qpacked), bits);
			/* no float32 copy of a linear weight; a tied embedding stays float32 */
			CHECK(now->enc[0].qkv.w == NULL && now->dec[0].fc1.w == NULL);
			CHECK(now->tgt_embed != NULL && now->src_embed_q == NULL);
			CHECK(variant == 1 ? now->output.w == NULL : now->output.w == now->tgt_embed);
			nn_run(old, p, a);
			nn_run(now, p, b);
			CHECK(a->trans_len > 0);
			CHECK(memcmp(a, b, sizeof(nn_outputs)) == 0);
			free(a);
			free(b);
			free(old_img);
			free(img);
			cq_model_free(old);
			cq_model_free(now);
			cq_model_free(m);
		}
}

/* src dequantized row by row: code * scale, the value an int8 embedding gives. */
static void
dequantize(const float *src, int rows, int d, float *dst)
{
	int8_t		q[64];

	for (int r = 0; r < rows; r++)
	{
		float		s = cq_qgemm_quantize_vec_bits(src + (size_t) r * d, d, 8, q);

		for (int i = 0; i < d; i++)
			dst[(size_t) r * d + i] = (float) q[i] * s;
	}
}

/*
 * The float32-embedding, untied, unshared int8 model computing what m's
 * int8 image does: embeddings replaced by their 8-bit codes times scales,
 * the output projection m's (the projection's codes are quantized from it).
 */
static cq_model *
reference(const cq_model *m)
{
	cq_model_config c = m->cfg;
	cq_model   *r = NULL;
	cq_error	err;
	int			d = c.d_model;

	c.tie_output = c.share_embeddings = false;
	c.embedding_precision = CQ_PRECISION_FLOAT32;
	CHECK_INT_EQ(cq_model_new(&c, &r, &err), CQ_OK);
	for (int t = 0; t < r->n_tensors; t++)
	{
		const cq_tensor_info *own = cq_model_tensor(m, r->tensors[t].name);

		if (own)
			memcpy(r->params + r->tensors[t].offset, m->params + own->offset,
				   sizeof(float) * own->numel);
	}
	dequantize(m->src_embed, c.src_vocab_size, d, r->src_embed);
	dequantize(m->tgt_embed, c.tgt_vocab_size, d, r->tgt_embed);
	memcpy(r->out_proj, m->out_proj, sizeof(float) * c.tgt_vocab_size * d);
	CHECK_INT_EQ(cq_model_pack(r, &err), CQ_OK);
	return r;
}

TEST(int8_image_embeddings_are_codes_times_scales)
{
	int32_t		ids[NN_PAIRS][24];
	cq_pair		p[NN_PAIRS];

	nn_test_pairs(ids, p);
	for (int variant = 0; variant < 3; variant++)
		for (int bits = 7; bits <= 8; bits++)
		{
			cq_model   *m = float_model(variant, bits, true),
					   *r = reference(m),
					   *now;
			size_t		len;
			unsigned char *img = image(m, &len);
			nn_outputs *a = malloc(sizeof(nn_outputs)),
					   *b = malloc(sizeof(nn_outputs));
			float		x[32],
						want[32];

			now = load_packed(img, len);
			CHECK(now != NULL);
			if (!now)
				continue;
			CHECK(now->src_embed == NULL && now->tgt_embed == NULL && now->src_embed_q != NULL);
			CHECK((variant == 2) == (now->src_embed_q == now->tgt_embed_q));
			/* tied: one set of codes unless the projection's are 7-bit */
			if (variant != 1)
				CHECK((bits == 8) == (now->output.qpacked == now->tgt_embed_q));
			cq_embed_token(now, true, 7, 3, x);
			cq_embed_token(r, true, 7, 3, want);
			CHECK(memcmp(x, want, sizeof(x)) == 0);
			CHECK(x[0] != 0.0f);
			nn_run(r, p, a);
			nn_run(now, p, b);
			CHECK(a->trans_len > 0);
			CHECK(memcmp(a, b, sizeof(nn_outputs)) == 0);
			free(a);
			free(b);
			free(img);
			cq_model_free(now);
			cq_model_free(r);
			cq_model_free(m);
		}
}

/*
 * The image is about a quarter of the float32 one once the embeddings are
 * codes too, and the loaded model holds about its image: the float32 block
 * keeps the norms and biases only.
 */
TEST(int8_image_size_and_memory)
{
	for (int tied = 0; tied < 2; tied++)
	{
		cq_model_config c;
		cq_model   *m = NULL,
				   *now = NULL;
		cq_error	err;
		size_t		f32_len,
					len,
					held = 0;
		unsigned char *img;

		CHECK_INT_EQ(cq_config_preset("tiny", 2000, 2000, &c, &err), CQ_OK);
		c.tie_output = tied;
		CHECK_INT_EQ(cq_model_new(&c, &m, &err), CQ_OK);
		cq_model_init_random(m, 3);
		f32_len = cq_modelfile_size(m);
		m->cfg.precision = CQ_PRECISION_INT8;
		m->cfg.embedding_precision = CQ_PRECISION_INT8;
		img = image(m, &len);
		CHECK_INT_EQ(cq_modelfile_load(img, len, &now, &err), CQ_OK);
		if (!now)
			continue;
		for (int t = 0; t < now->n_tensors; t++)
			held += now->tensors[t].bits
				? cq_qgemm_packed_bytes(now->tensors[t].dims[0], now->tensors[t].dims[1])
				: now->tensors[t].numel * sizeof(float);
		printf("     tiny V 2000 %s: float32 image %zu, int8 image %zu bytes (%.3f), loaded %zu\n",
			   tied ? "tied" : "untied", f32_len, len, (double) len / f32_len, held);
		CHECK(len < 0.28 * f32_len && len > 0.25 * f32_len);
		/* float32: norms and biases only; the rest packed codes, about the image */
		CHECK(now->n_floats * sizeof(float) < 0.01 * f32_len);
		CHECK(held > 0.9 * len && held < 1.1 * len);
		free(img);
		cq_model_free(now);
		cq_model_free(m);
	}
}

/* A version-1 file holds float32 tensors: int8 embeddings need version 2. */
TEST(int8_image_v1_refuses_int8_embeddings)
{
	cq_model   *m = float_model(1, 8, true),
			   *back = NULL;
	size_t		len;
	unsigned char *p = v1_image(m, &len);
	cq_error	err = {0};

	CHECK_INT_EQ(cq_modelfile_load(p, len, &back, &err), CQ_EFORMAT);
	CHECK(back == NULL && strstr(err.msg, "embedding_precision") != NULL);
	free(p);
	cq_model_free(m);
}
