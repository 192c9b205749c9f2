/*
 * The memory of loading a model, computed from its configuration
 * (cq_model_load_memory, cq_modelfile_memory) before anything is allocated,
 * against the bytes the allocator is asked for when the model is loaded as
 * the model cache loads it (cq_modelfile_load, cq_model_pack,
 * cq_model_compact): what the loaded model keeps, exactly, and the most held
 * at once on the way, exactly.  corpq.max_model_mb is checked against these
 * (pg/model/model_cache.c).  Also: a sinusoid table is at most
 * CQ_SINUSOID_TABLE_ROWS rows, and positions past it embed to the same bits.
 */
#include <stdlib.h>

#include "common/le.h"
#include "common/mem.h"
#include "common/tensorfile.h"
#include "nn/layers/packed.h"
#include "nn/model/modelfile.h"
#include "nn/model/positions.h"
#include "nn_outputs.h"
#include "unit.h"

/* ---- a counting allocator (each block prefixed by its size) ---- */

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

/* ---- images ---- */

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

/*
 * m's image: its weight file, or (v1) its float32 weights in a version-1
 * file, as int8 versions were stored before int8 images (quantized at load).
 */
static unsigned char *
image(const cq_model *m, bool v1, size_t *len)
{
	static const cq_tensorfile_format v1_format = {
		.magic = CQ_MODELFILE_MAGIC, .version = 1, .what = "weight file",
		.bad_magic = "not a corpq weight file", .config_max = 65536, .tensors_max = 100000,
		.section_max = (uint64_t) 1 << 48,
	};
	unsigned char *p;
	cq_error	err;

	if (v1)
	{
		cq_tensorfile_source src = {m->n_tensors, v1_entry, v1_fill, m};
		char		cfg[1024];
		size_t		clen = cq_config_to_json(&m->cfg, cfg, sizeof(cfg));

		*len = cq_tensorfile_size(clen, &src);
		p = malloc(*len);
		CHECK_INT_EQ(cq_tensorfile_write(&v1_format, p, *len, cfg, clen, &src, &err), CQ_OK);
		return p;
	}
	*len = cq_modelfile_size(m);
	p = malloc(*len);
	CHECK_INT_EQ(cq_modelfile_write(m, p, *len, &err), CQ_OK);
	return p;
}

/*
 * Load c's model from its image (v1: the version-1 image of an int8 model)
 * as the cache does, counting, and compare with the computed memory.
 */
static void
check_load(const char *what, const cq_model_config *c, bool v1)
{
	static const cq_allocator counting = {count_alloc, count_realloc, count_free};
	cq_model   *m = NULL,
			   *loaded = NULL;
	cq_model_memory mem,
				from_image;
	cq_error	err;
	size_t		len,
				head,
				reading,
				packing,
				held;
	unsigned char *img;
	bool		coded = c->precision == CQ_PRECISION_INT8 && !v1;

	CHECK_INT_EQ(cq_model_new(c, &m, &err), CQ_OK);
	if (!m)
		return;
	cq_model_init_random(m, 5);
	img = image(m, v1, &len);
	cq_model_free(m);
	cq_model_load_memory(c, coded, len, &mem);
	/* from the image's header and configuration alone */
	head = CQ_MODELFILE_HEADER + cq_le_get_u32(img + 12);
	CHECK_INT_EQ(cq_modelfile_memory(img, head, len, &from_image, &err), CQ_OK);
	CHECK_INT_EQ(from_image.loaded, mem.loaded);
	CHECK_INT_EQ(from_image.peak, mem.peak);
	CHECK_INT_EQ(cq_modelfile_memory(img, head - 1, len, &from_image, &err), CQ_EFORMAT);
	CHECK_INT_EQ(cq_modelfile_memory(img + 1, head, len, &from_image, &err), CQ_EFORMAT);
	/* a streaming reader's head check: the configuration, and the framing
	 * against the image's length (a truncated or padded stream is refused) */
	{
		cq_model_config got;

		CHECK_INT_EQ(cq_modelfile_head(img, head, len, &got, &err), CQ_OK);
		CHECK(cq_config_equal(&got, c));
		CHECK_INT_EQ(cq_modelfile_head(img, head, len - 1, &got, &err), CQ_EFORMAT);
		CHECK_INT_EQ(cq_modelfile_head(img, head, len + 4, &got, &err), CQ_EFORMAT);
		CHECK_INT_EQ(cq_modelfile_head(img, head - 1, len, &got, &err), CQ_EFORMAT);
	}

	cq_set_allocator(&counting);
	live_bytes = peak_bytes = 0;
	CHECK_INT_EQ(cq_modelfile_load(img, len, &loaded, &err), CQ_OK);
	/* the image is held while it is read, then freed (the cache frees it) */
	reading = len + peak_bytes;
	peak_bytes = live_bytes;
	if (loaded)
	{
		CHECK_INT_EQ(cq_model_pack(loaded, &err), CQ_OK);
		CHECK_INT_EQ(cq_model_compact(loaded, &err), CQ_OK);
	}
	packing = peak_bytes;
	held = live_bytes;
	cq_model_free(loaded);
	CHECK_INT_EQ(live_bytes, 0);
	cq_set_allocator(NULL);
	printf("     %s: image %zu bytes, loaded %zu (computed %zu), peak %zu (computed %zu)\n",
		   what, len, held, mem.loaded, reading > packing ? reading : packing, mem.peak);
	CHECK_INT_EQ(held, mem.loaded);
	CHECK_INT_EQ(reading > packing ? reading : packing, mem.peak);
	free(img);
}

TEST(load_memory_is_computed_exactly)
{
	for (int variant = 0; variant < 3; variant++)
	{
		cq_model_config c;
		char		what[96];

		/* float32 */
		nn_test_config(variant, &c);
		snprintf(what, sizeof(what), "variant %d float32", variant);
		check_load(what, &c, false);
		/* variants of the layout: output bias, embedding norms, learned or long sinusoids */
		nn_test_config(variant, &c);
		c.output_bias = true;
		c.layernorm_embedding = true;
		c.max_positions = variant == 0 ? 3000 : 100;
		c.decoder_layers = 1;
		snprintf(what, sizeof(what), "variant %d float32, bias, norms, max_positions %d", variant,
				 c.max_positions);
		check_load(what, &c, false);
		/* int8 images, float32 or int8 embeddings, 8 or 7 bits; and the version-1 way */
		for (int k = 0; k < 4; k++)
		{
			nn_test_config(variant, &c);
			c.precision = CQ_PRECISION_INT8;
			c.weight_bits = k % 2 ? 7 : 8;
			c.embedding_precision = k >= 2 ? CQ_PRECISION_INT8 : CQ_PRECISION_FLOAT32;
			snprintf(what, sizeof(what), "variant %d int8 (%d bits), %s embeddings", variant,
					 c.weight_bits, k >= 2 ? "int8" : "float32");
			check_load(what, &c, false);
			snprintf(what, sizeof(what), "variant %d int8 (%d bits), %s embeddings, version 1",
					 variant, c.weight_bits, k >= 2 ? "int8" : "float32");
			check_load(what, &c, true);
		}
	}
	/* encoders: with and without a pooler and token type vector, float32 and int8 */
	for (int k = 0; k < 6; k++)
	{
		cq_model_config c;
		cq_error	err;
		char		what[128];

		CHECK_INT_EQ(cq_config_preset("tiny", 40, 40, &c, &err), CQ_OK);
		cq_config_make_encoder(&c);
		c.d_model = 16;
		c.heads = 2;
		c.ffn_dim = 32;
		c.encoder_layers = 2;
		c.max_positions = k == 1 ? 5000 : 12;
		c.pooler = k % 2 == 0;
		c.token_type_embedding = k % 2 == 0;
		if (k >= 2)
		{
			c.precision = CQ_PRECISION_INT8;
			c.embedding_precision = k >= 4 ? CQ_PRECISION_INT8 : CQ_PRECISION_FLOAT32;
		}
		snprintf(what, sizeof(what), "encoder %s pooler, %s, max_positions %d",
				 c.pooler ? "with" : "without", k < 2 ? "float32" : k < 4 ? "int8" : "int8 embeddings",
				 c.max_positions);
		check_load(what, &c, false);
		if (k >= 2)
		{
			strcat(what, ", version 1");
			check_load(what, &c, true);
		}
	}
}

/*
 * The case: an encoder of max_positions 65536 and d_model 512 would
 * have held a 128 MB table; it holds 1024 rows (2 MB), and its load's
 * memory is counted from the configuration.
 */
TEST(sinusoid_table_is_capped)
{
	cq_model_config c;
	cq_model_memory mem;
	cq_error	err;

	CHECK_INT_EQ(cq_config_preset("tiny", 1000, 1000, &c, &err), CQ_OK);
	cq_config_make_encoder(&c);
	c.d_model = 512;
	c.heads = 8;
	c.ffn_dim = 64;
	c.encoder_layers = 1;
	c.max_positions = 65536;
	c.precision = CQ_PRECISION_INT8;
	c.embedding_precision = CQ_PRECISION_INT8;
	CHECK_INT_EQ(cq_config_validate(&c, &err), CQ_OK);
	CHECK_INT_EQ(cq_model_position_bytes(&c), (size_t) CQ_SINUSOID_TABLE_ROWS * 512 * 4);
	cq_model_load_memory(&c, true, 0, &mem);
	printf("     encoder d_model 512, max_positions 65536, int8: loaded %zu bytes\n", mem.loaded);
	CHECK(mem.loaded < 4 * 1024 * 1024);
	CHECK(mem.loaded > (size_t) CQ_SINUSOID_TABLE_ROWS * 512 * 4);
	c.positions = CQ_POS_LEARNED;
	CHECK_INT_EQ(cq_model_position_bytes(&c), 0);
}

/*
 * A position past the table embeds to the bits a full table gives: the
 * embedding of every token at positions around and far past the table's
 * end, against E[tok] s + table[pos] from a table of every position.
 */
TEST(sinusoid_past_the_table_same_bits)
{
	for (int variant = 0; variant < 3; variant++)
	{
		cq_model_config c;
		cq_model   *m = NULL;
		cq_error	err;
		int			n = 4000,
					d;
		float	   *full,
				   *x,
					scale;
		int			positions[] = {0, 1, CQ_SINUSOID_TABLE_ROWS - 1, CQ_SINUSOID_TABLE_ROWS,
		CQ_SINUSOID_TABLE_ROWS + 1, 2500, n - 1};
		long		diffs = 0;

		nn_test_config(0, &c);
		c.max_positions = n;
		c.position_offset = variant == 1 ? 2 : 0;
		c.sinusoid_half = variant == 2;
		d = c.d_model;
		CHECK_INT_EQ(cq_model_new(&c, &m, &err), CQ_OK);
		if (!m)
			continue;
		cq_model_init_random(m, 9);
		CHECK_INT_EQ(m->sinusoid_rows, CQ_SINUSOID_TABLE_ROWS);
		full = malloc(sizeof(float) * (size_t) n * d);
		x = malloc(sizeof(float) * d);
		cq_sinusoid_table(full, n, d, c.position_offset, c.sinusoid_half);
		scale = cq_embed_scale(&c);
		for (int k = 0; k < (int) (sizeof(positions) / sizeof(positions[0])); k++)
			for (int tok = 0; tok < c.src_vocab_size; tok++)
			{
				cq_embed_token(m, false, tok, positions[k], x);
				for (int i = 0; i < d; i++)
				{
					/* rounded once each, as the core (-ffp-contract=off) */
					volatile float prod = m->src_embed[(long) tok * d + i] * scale;
					float		want = prod + full[(long) positions[k] * d + i];

					diffs += memcmp(&want, &x[i], sizeof(float)) != 0;
				}
			}
		CHECK_INT_EQ(diffs, 0);
		free(full);
		free(x);
		cq_model_free(m);
	}
}
