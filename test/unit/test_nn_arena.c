/*
 * Relocatable models (model.h: cq_model_arena_bytes, cq_model_flatten,
 * cq_model_attach): a packed, compacted model flattened into an arena, the
 * arena copied to another address and the first copy and the model freed,
 * then attached, computes the same bits as the model did (teacher-forced
 * scoring, Monte Carlo dropout, translation; sentence vectors of an
 * encoder), for float32 models, int8 models quantized at load and models
 * loaded from an int8 image.  The arena's size is exact, and a damaged or
 * truncated arena is refused.
 */
#include <stdlib.h>

#include "nn/infer/encode.h"
#include "nn/model/modelfile.h"
#include "nn_outputs.h"
#include "unit.h"

/* 64-byte aligned memory of exactly n bytes (the sanitizer sees one past). */
static void *
aligned_bytes(size_t n)
{
	void	   *p = NULL;

	CHECK_INT_EQ(posix_memalign(&p, 64, n), 0);
	return p;
}

/*
 * Flatten m into an arena of exactly its size, copy that to another address,
 * free the first arena and m, and attach the copy.  *arena: the copy, to be
 * freed after the attached model.
 */
static cq_model *
relocate(cq_model *m, void **arena)
{
	cq_error	err;
	size_t		bytes = cq_model_arena_bytes(m, &err);
	unsigned char *first,
			   *canary,
			   *copy;
	cq_model   *a = NULL;
	bool		untouched = true;

	CHECK(bytes > 0);
	/* a buffer one byte short is refused; the arena writes exactly its bytes */
	first = aligned_bytes(bytes + 64);
	CHECK_INT_EQ(cq_model_flatten(m, first, bytes - 1, &err), CQ_EINVAL);
	memset(first, 0xa5, bytes + 64);
	CHECK_INT_EQ(cq_model_flatten(m, first, bytes + 64, &err), CQ_OK);
	canary = first + bytes;
	for (int i = 0; i < 64; i++)
		untouched = untouched && canary[i] == 0xa5;
	CHECK(untouched);
	/* not on a 64-byte boundary: refused */
	CHECK_INT_EQ(cq_model_flatten(m, first + 8, bytes, &err), CQ_EINVAL);
	copy = aligned_bytes(bytes);
	memcpy(copy, first, bytes);
	free(first);
	cq_model_free(m);
	/* truncated: refused */
	CHECK_INT_EQ(cq_model_attach(copy, bytes - 64, &a, &err), CQ_EINVAL);
	CHECK(a == NULL);
	CHECK_INT_EQ(cq_model_attach(copy, bytes, &a, &err), CQ_OK);
	CHECK(a != NULL && a->attached && a->compact);
	/* an attached model is an arena already */
	if (a)
		CHECK_INT_EQ(cq_model_arena_bytes(a, &err), 0);
	*arena = copy;
	return a;
}

static cq_model *
packed_model(const cq_model_config *c, uint64_t seed)
{
	cq_model   *m = NULL;
	cq_error	err;

	CHECK_INT_EQ(cq_model_new(c, &m, &err), CQ_OK);
	cq_model_init_random(m, seed);
	CHECK_INT_EQ(cq_model_pack(m, &err), CQ_OK);
	CHECK_INT_EQ(cq_model_compact(m, &err), CQ_OK);
	return m;
}

/* m loaded again from its int8 image, as the model cache loads a coded version. */
static cq_model *
through_image(cq_model *m)
{
	cq_error	err;
	size_t		len = cq_modelfile_size(m);
	unsigned char *p = malloc(len);
	cq_model   *back = NULL;

	CHECK_INT_EQ(cq_modelfile_write(m, p, len, &err), CQ_OK);
	cq_model_free(m);
	CHECK_INT_EQ(cq_modelfile_load(p, len, &back, &err), CQ_OK);
	free(p);
	CHECK(back != NULL && back->compact);
	CHECK_INT_EQ(cq_model_pack(back, &err), CQ_OK);
	CHECK_INT_EQ(cq_model_compact(back, &err), CQ_OK);
	return back;
}

TEST(nn_arena_translation_models_same_bits)
{
	int32_t		ids[NN_PAIRS][24];
	cq_pair		p[NN_PAIRS];

	nn_test_pairs(ids, p);
	/*
	 * variants 0 (tied, sinusoids), 1 (untied, learned positions), 2 (shared);
	 * float32, int8 quantized at load (8 and 7 bits, int8 embeddings or not),
	 * and loaded from an int8 image
	 */
	for (int variant = 0; variant < 3; variant++)
		for (int form = 0; form < 4; form++)
		{
			cq_model_config c;
			cq_model   *m;
			void	   *arena = NULL;
			nn_outputs *before = malloc(sizeof(nn_outputs)),
					   *after = malloc(sizeof(nn_outputs));
			cq_error	err;

			nn_test_config(variant, &c);
			if (form > 0)
			{
				c.precision = CQ_PRECISION_INT8;
				c.weight_bits = form == 2 ? 7 : 8;
				c.embedding_precision = form == 2 ? CQ_PRECISION_INT8 : CQ_PRECISION_FLOAT32;
			}
			if (form == 3)
			{
				cq_model   *f = NULL;

				c.embedding_precision = CQ_PRECISION_INT8;
				CHECK_INT_EQ(cq_model_new(&c, &f, &err), CQ_OK);
				cq_model_init_random(f, 40 + variant);
				m = through_image(f);
			}
			else
				m = packed_model(&c, 30 + variant);
			memset(before, 0, sizeof(*before));
			memset(after, 0xff, sizeof(*after));
			nn_run(m, p, before);
			m = relocate(m, &arena);
			if (m)
				nn_run(m, p, after);
			CHECK(memcmp(before, after, sizeof(nn_outputs)) == 0);
			CHECK(before->trans_len > 0);
			cq_model_free(m);
			free(arena);
			free(before);
			free(after);
		}
}

TEST(nn_arena_encoder_same_vectors)
{
	int32_t		a[] = {5, 9, 12, 7},
				b[] = {20, 4, 4, 18, 11, 6, 9};
	cq_sentence s[2] = {{a, 4, 1}, {b, 7, 2}};

	for (int int8 = 0; int8 < 2; int8++)
	{
		cq_model_config c;
		cq_model   *m;
		void	   *arena = NULL,
				   *ws;
		float		before[2 * 16],
					after[2 * 16];
		size_t		bytes;
		cq_error	err;

		CHECK_INT_EQ(cq_config_preset("tiny", 30, 30, &c, &err), CQ_OK);
		cq_config_make_encoder(&c);
		c.d_model = 16;
		c.heads = 2;
		c.ffn_dim = 32;
		c.encoder_layers = 2;
		c.max_positions = 12;
		c.pooling = CQ_POOL_CLS;
		c.pooler = true;
		c.token_type_embedding = true;
		if (int8)
			c.precision = CQ_PRECISION_INT8;
		m = packed_model(&c, 50 + int8);
		bytes = cq_encode_sentences_bytes(&m->cfg, s, 2);
		ws = malloc(bytes);
		CHECK_INT_EQ(cq_encode(m, s, 2, NULL, ws, bytes, before, &err), CQ_OK);
		m = relocate(m, &arena);
		memset(after, 0, sizeof(after));
		if (m)
			CHECK_INT_EQ(cq_encode(m, s, 2, NULL, ws, bytes, after, &err), CQ_OK);
		CHECK(memcmp(before, after, sizeof(before)) == 0);
		CHECK(before[0] != 0.0f);
		cq_model_free(m);
		free(arena);
		free(ws);
	}
}

TEST(nn_arena_refusals)
{
	cq_model_config c;
	cq_model   *m = NULL,
			   *a = NULL;
	cq_error	err;
	size_t		bytes;
	unsigned char *arena;
	uint64_t	bad = 1;

	nn_test_config(0, &c);
	/* not packed and compacted: no arena */
	CHECK_INT_EQ(cq_model_new(&c, &m, &err), CQ_OK);
	CHECK_INT_EQ(cq_model_arena_bytes(m, &err), 0);
	CHECK_INT_EQ(err.code, CQ_EINVAL);
	CHECK_INT_EQ(cq_model_pack(m, &err), CQ_OK);
	CHECK_INT_EQ(cq_model_arena_bytes(m, &err), 0);
	CHECK_INT_EQ(cq_model_compact(m, &err), CQ_OK);
	bytes = cq_model_arena_bytes(m, &err);
	CHECK(bytes > 0 && bytes % 64 == 0);
	/* the arena holds what the model holds, plus small tables */
	CHECK(bytes >= m->n_floats * sizeof(float) + m->packed_bytes);
	CHECK(bytes < m->n_floats * sizeof(float) + m->packed_bytes + 64 * 1024);
	arena = aligned_bytes(bytes);
	CHECK_INT_EQ(cq_model_flatten(m, arena, bytes, &err), CQ_OK);
	/* a damaged magic, then a pointer offset outside the arena: refused */
	arena[0] ^= 1;
	CHECK_INT_EQ(cq_model_attach(arena, bytes, &a, &err), CQ_EINVAL);
	arena[0] ^= 1;
	{
		/* the slots section's offset is in the head, after magic, format, sizes, total, 4 offsets */
		uint64_t	slots_off;

		memcpy(&slots_off, arena + 8 + 4 + 16 + 4 + 8 + 4 * 8, sizeof(slots_off));
		CHECK(slots_off > 0 && slots_off < bytes);
		if (slots_off > 0 && slots_off < bytes)
		{
			memcpy(&bad, arena + slots_off, sizeof(bad));
			bad = bytes + 4096;
			memcpy(arena + slots_off, &bad, sizeof(bad));
			CHECK_INT_EQ(cq_model_attach(arena, bytes, &a, &err), CQ_EINVAL);
			CHECK(a == NULL);
		}
	}
	free(arena);
	cq_model_free(m);
}
