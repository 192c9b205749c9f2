/*
 * int8 images (models/FORMAT.md, "int8 tensors"): an int8 version stores
 * its weights as codes and per-row scales (weight file version 2), and the
 * model loaded from them computes exactly what the same float32 weights
 * quantized at load compute (a version-1 int8 image, as versions were
 * stored before version 2), without a float32 copy of its linear weights.
 */
#include <stdlib.h>

#include "common/le.h"
#include "common/mem.h"
#include "common/tensorfile.h"
#include "nn/model/modelfile.h"
#include "nn/layers/packed.h"
#include "nn/ops/qgemm.h"
#include "nn/train/train_state.h"
#include "nn_outputs.h"
#include "unit.h"

/*
 * An int8 model of nn_test_config's variant (0 tied, 1 untied, 2 shared),
 * with its embeddings as codes when int8_embed.
 */
static cq_model *
float_model(int variant, int bits, bool int8_embed)
{
	cq_model_config c;
	cq_model   *m = NULL;
	cq_error	err;

	nn_test_config(variant, &c);
	c.precision = CQ_PRECISION_INT8;
	c.weight_bits = bits;
	c.embedding_precision = int8_embed ? CQ_PRECISION_INT8 : CQ_PRECISION_FLOAT32;
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

/* What a loaded int8 model holds of its embeddings (f: its float32 model). */
static void
check_embeddings(const cq_model *f, const cq_model *old, const cq_model *now, int variant)
{
	const cq_model_config *c = &now->cfg;
	bool		codes = c->embedding_precision == CQ_PRECISION_INT8;

	if (!codes)
	{
		/* a tied embedding stays float32 */
		CHECK(now->src_embed != NULL && now->tgt_embed != NULL && !now->src_embed_codes);
		CHECK(variant == 1 ? now->output.w == NULL : now->output.w == now->tgt_embed);
		return;
	}
	/* codes only, packed as stored; a tied projection is its embedding's codes */
	CHECK(!now->src_embed && !now->tgt_embed && !now->output.w);
	CHECK(now->src_embed_codes && now->tgt_embed_codes);
	CHECK(memcmp(old->src_embed_codes, now->src_embed_codes,
				 cq_qgemm_packed_bytes(c->src_vocab_size, c->d_model)) == 0);
	CHECK(memcmp(old->tgt_embed_codes, now->tgt_embed_codes,
				 cq_qgemm_packed_bytes(c->tgt_vocab_size, c->d_model)) == 0);
	CHECK((variant == 2) == (now->src_embed_codes == now->tgt_embed_codes));
	CHECK((variant != 1) == (now->tgt_embed_codes == now->output.qpacked));
	/* the lookup: each row's codes times its scale, from the float32 rows */
	for (int side = 0; side < 2; side++)
	{
		const float *table = side ? f->tgt_embed : f->src_embed;
		int			d = c->d_model,
					tok = 5 + side;
		int8_t		q[64];
		float		x[64],
					s = cq_qgemm_quantize_vec_bits(table + tok * d, d, c->weight_bits, q),
					r = cq_embed_scale(c);
		bool		ok = true;

		cq_embed_token(now, side, tok, 0, x);
		for (int i = 0; i < d; i++)
			ok &= x[i] == ((float) q[i] * s) * r + cq_position_row(now, side, 0)[i];
		CHECK(ok);
	}
}

TEST(int8_image_has_the_bits_of_quantize_at_load)
{
	int32_t		ids[NN_PAIRS][24];
	cq_pair		p[NN_PAIRS];

	nn_test_pairs(ids, p);
	for (int variant = 0; variant < 3; variant++)
		for (int k = 0; k < 4; k++)
		{
			int			bits = 7 + k % 2;
			cq_model   *m = float_model(variant, bits, k >= 2),
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
			/* no float32 copy of a linear weight */
			CHECK(now->enc[0].qkv.w == NULL && now->dec[0].fc1.w == NULL);
			check_embeddings(m, old, now, variant);
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

/* ---- memory: a counting allocator (each block prefixed by its size) ---- */

static size_t live_bytes,
			peak_bytes;

static void *
count_alloc(size_t size)
{
	size_t	   *p = malloc(size + 16);

	if (!p)
		return NULL;
	*p = size;
	live_bytes += size;
	if (live_bytes > peak_bytes)
		peak_bytes = live_bytes;
	return (char *) p + 16;
}

static void *
count_realloc(void *ptr, size_t size)
{
	size_t	   *p,
				old;

	if (!ptr)
		return count_alloc(size);
	old = *(size_t *) ((char *) ptr - 16);
	if (!(p = realloc((char *) ptr - 16, size + 16)))
		return NULL;
	*p = size;
	live_bytes += size - old;
	if (live_bytes > peak_bytes)
		peak_bytes = live_bytes;
	return (char *) p + 16;
}

static void
count_free(void *ptr)
{
	if (!ptr)
		return;
	live_bytes -= *(size_t *) ((char *) ptr - 16);
	free((char *) ptr - 16);
}

/*
 * Load an image as the model cache does (load, pack, compact): the bytes the
 * loaded model holds and the most the load held at once, the image aside.
 */
static void
load_bytes(const unsigned char *img, size_t len, size_t *held, size_t *peak)
{
	static const cq_allocator counting = {count_alloc, count_realloc, count_free};
	cq_model   *m;

	cq_set_allocator(&counting);
	live_bytes = peak_bytes = 0;
	m = load_packed(img, len);
	*held = live_bytes;
	*peak = peak_bytes;
	cq_model_free(m);
	CHECK_INT_EQ(live_bytes, 0);
	cq_set_allocator(NULL);
}

/*
 * The image of an int8 version against the same version stored the old way
 * (its float32 weights, quantized at load), printed for the presets over
 * 8,000-word vocabularies (docs/models.md, "int8 versions").  The linear
 * weights and the output projection take 1 byte per weight and 4 per row,
 * the embeddings, norms and biases stay float32, so the ratio is computed
 * here from the tensors and must match the file.  Loaded, both hold the
 * same (the packed codes and the float32 rest), and the load's peak is far
 * lower: no float32 copy of the linear weights is ever made.
 */
TEST(int8_image_size_and_memory)
{
	const char *presets[] = {"tiny", "small"};

	for (int p = 0; p < 2; p++)
		for (int k = 0; k < 4; k++)
		{
			int			tied = k % 2 == 0;
			bool		int8_embed = k >= 2;
			cq_model_config c;
			cq_model   *m = NULL;
			cq_error	err;
			size_t		old_len,
						len,
						codes = 0,
						rows = 0,
						coded_floats = 0,
						floats,
						params,
						held,
						peak,
						old_held,
						old_peak;
			unsigned char *img,
					   *old_img;
			cq_tensor_info *table;
			double		expect;

			CHECK_INT_EQ(cq_config_preset(presets[p], 8000, 8000, &c, &err), CQ_OK);
			c.tie_output = tied;
			c.precision = CQ_PRECISION_INT8;
			c.embedding_precision = int8_embed ? CQ_PRECISION_INT8 : CQ_PRECISION_FLOAT32;
			CHECK_INT_EQ(cq_model_new(&c, &m, &err), CQ_OK);
			if (!m)
				continue;
			cq_model_init_random(m, 3);
			img = image(m, &len);
			old_img = v1_image(m, &old_len);
			/*
			 * The image's code tensors: every linear weight, the output
			 * projection, with int8 embeddings the embeddings; the float32
			 * image holds the same weights but a tied projection's own codes.
			 */
			table = calloc(cq_model_coded_tensors(&c, NULL), sizeof(cq_tensor_info));
			for (int t = 0; t < cq_model_coded_tensors(&c, table); t++)
				if (table[t].bits)
				{
					codes += table[t].numel;
					rows += table[t].dims[0];
					if (cq_model_tensor(m, table[t].name))
						coded_floats += table[t].numel;
				}
			free(table);
			cq_model_size_for(&c, &floats, &params);
			expect = (4.0 * params - 4.0 * coded_floats + codes + 4.0 * rows) / (4.0 * params);
			load_bytes(img, len, &held, &peak);
			load_bytes(old_img, old_len, &old_held, &old_peak);
			printf("     %s V 8000 %s, %s embeddings: image %zu bytes stored as float32, %zu as "
				   "codes (%.3f); loaded %zu and %zu, load peak %zu and %zu\n",
				   presets[p], tied ? "tied" : "untied", int8_embed ? "int8" : "float32",
				   old_len, len, (double) len / old_len, old_held, held, old_peak, peak);
			CHECK_NEAR((double) len / old_len, expect, 0.005);
			CHECK(held <= old_held + 4096);
			CHECK(peak < old_peak);
			CHECK(peak < 1.5 * len);
			free(img);
			free(old_img);
			cq_model_free(m);
		}
}

/*
 * base over 8,000-word vocabularies, computed from its tensors (its random
 * initialisation takes long): the data sections of its images.  With int8
 * embeddings every weight matrix is codes, so an image is about a quarter
 * of the float32 one (the rest: a scale per row, norms and biases).
 */
TEST(int8_image_base_sizes)
{
	for (int k = 0; k < 4; k++)
	{
		cq_model_config c;
		cq_error	err;
		size_t		f32,
					q8;

		CHECK_INT_EQ(cq_config_preset("base", 8000, 8000, &c, &err), CQ_OK);
		c.tie_output = k % 2 == 0;
		c.precision = CQ_PRECISION_INT8;
		c.embedding_precision = k >= 2 ? CQ_PRECISION_INT8 : CQ_PRECISION_FLOAT32;
		f32 = cq_model_data_min(&c, false);
		q8 = cq_model_data_min(&c, true);
		printf("     base V 8000 %s, %s embeddings: data %zu bytes as float32, %zu as codes (%.3f)\n",
			   c.tie_output ? "tied" : "untied", k >= 2 ? "int8" : "float32", f32, q8,
			   (double) q8 / f32);
		if (k >= 2)
			CHECK((double) q8 / f32 < 0.26);
	}
}

/* A model loaded from an int8 image holds no float32 linear weights: no training. */
TEST(int8_image_model_is_not_trained)
{
	cq_model   *m = float_model(0, 8, true),
			   *now;
	cq_train_state *st = NULL;
	cq_train_config tc;
	size_t		len;
	unsigned char *img = image(m, &len);
	cq_error	err = {0};

	cq_train_config_default(&tc);
	now = load_packed(img, len);
	CHECK(now != NULL && now->compact);
	CHECK_INT_EQ(cq_train_state_new(now, &tc, &st, &err), CQ_EINVAL);
	CHECK(st == NULL && strstr(err.msg, "int8 image") != NULL);
	free(img);
	cq_model_free(now);
	cq_model_free(m);
}
