#include "unit.h"

#include <stdlib.h>

#include "common/crc32.h"
#include "common/mem.h"
#include "nn/model/modelfile.h"

static cq_model *
small_model(int d, int heads, int ffn, int vocab, bool tied, bool learned)
{
	cq_model_config c = {
		.d_model = d, .heads = heads, .encoder_layers = 2, .decoder_layers = 1,
		.ffn_dim = ffn, .activation = CQ_ACT_GELU, .dropout = 0.1f,
		.attention_dropout = 0.0f, .activation_dropout = 0.2f, .max_positions = 12,
		.positions = learned ? CQ_POS_LEARNED : CQ_POS_SINUSOIDAL,
		.tie_output = tied, .share_embeddings = false,
		.src_vocab_size = vocab, .tgt_vocab_size = vocab + 3,
	};
	cq_model   *m = NULL;
	cq_error err;

	cq_config_default_variants(&c);
	CHECK_INT_EQ(cq_model_new(&c, &m, &err), CQ_OK);
	if (m)
		cq_model_init_random(m, 7);
	return m;
}

static unsigned char *
image(const cq_model *m, size_t *len)
{
	cq_error err;
	unsigned char *buf;

	*len = cq_modelfile_size(m);
	buf = malloc(*len);
	CHECK_INT_EQ(cq_modelfile_write(m, buf, *len, &err), CQ_OK);
	return buf;
}

static void
recrc(unsigned char *p, size_t len)
{
	uint32_t	c = cq_crc32(0, p, len - 4);

	for (int i = 0; i < 4; i++)
		p[len - 4 + i] = (unsigned char) (c >> (8 * i));
}

static cq_code
load_status(const unsigned char *p, size_t len, const char *want_in_msg)
{
	cq_model   *m = (cq_model *) 1;
	cq_error err = {0};
	cq_code s = cq_modelfile_load(p, len, &m, &err);

	if (s == CQ_OK)
		cq_model_free(m);
	else
	{
		CHECK(m == NULL);
		CHECK(err.code == s && err.msg[0] != '\0');
		if (want_in_msg && !strstr(err.msg, want_in_msg))
			unit_fail(__FILE__, __LINE__, "message \"%s\" lacks \"%s\"", err.msg, want_in_msg);
	}
	return s;
}

TEST(modelfile_round_trip)
{
	for (int variant = 0; variant < 2; variant++)
	{
		cq_model   *m = small_model(16, 2, 24, 20, variant, !variant),
				   *back = NULL;
		size_t		len;
		unsigned char *p = image(m, &len);
		cq_error err;

		CHECK_INT_EQ(cq_modelfile_load(p, len, &back, &err), CQ_OK);
		CHECK(back && cq_config_equal(&back->cfg, &m->cfg));
		CHECK(back && back->n_floats == m->n_floats &&
			  memcmp(back->params, m->params, m->n_floats * sizeof(float)) == 0);
		CHECK(back && (back->out_proj == back->tgt_embed) == (variant == 1));
		cq_model_free(back);
		back = NULL;
		CHECK_INT_EQ(cq_modelfile_save_path(m, "/tmp/cq_unit_model.cqm", &err), CQ_OK);
		CHECK_INT_EQ(cq_modelfile_load_path("/tmp/cq_unit_model.cqm", &back, &err), CQ_OK);
		CHECK(back && memcmp(back->params, m->params, m->n_floats * sizeof(float)) == 0);
		cq_model_free(back);
		remove("/tmp/cq_unit_model.cqm");
		CHECK_INT_EQ(cq_modelfile_load_path("/tmp/no/such/file", &back, &err), CQ_EIO);
		free(p);
		cq_model_free(m);
	}
}

/* Offset of the first occurrence of s in p[0..len). */
static long
find(const unsigned char *p, size_t len, const char *s)
{
	size_t		n = strlen(s);

	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(p + i, s, n) == 0)
			return (long) i;
	return -1;
}

static void
put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char) (v >> (8 * i));
}

TEST(modelfile_every_corruption)
{
	cq_model   *m = small_model(16, 2, 24, 20, false, true);
	size_t		len;
	unsigned char *orig = image(m, &len),
			   *p = malloc(len + 8);
	long		at;

#define FRESH() memcpy(p, orig, len)
	FRESH();
	CHECK_INT_EQ(load_status(p, len, NULL), CQ_OK);

	FRESH();
	p[3] = 'X';
	CHECK_INT_EQ(load_status(p, len, "magic"), CQ_EFORMAT);
	CHECK_INT_EQ(load_status(p, 5, "magic"), CQ_EFORMAT);
	FRESH();
	CHECK_INT_EQ(load_status(p, 30, "truncated"), CQ_EFORMAT);
	put32(p + 8, 3);
	CHECK_INT_EQ(load_status(p, len, "version 3"), CQ_EFORMAT);
	FRESH();
	CHECK_INT_EQ(load_status(p, len - 1, "truncated"), CQ_EFORMAT);
	CHECK_INT_EQ(load_status(p, len / 2, "truncated"), CQ_EFORMAT);
	p[len] = 0;
	CHECK_INT_EQ(load_status(p, len + 1, "after its checksum"), CQ_EFORMAT);
	FRESH();
	p[len - 40] ^= 0x10;			/* a data byte */
	CHECK_INT_EQ(load_status(p, len, "checksum"), CQ_EFORMAT);
	FRESH();
	p[len - 1] ^= 1;				/* the checksum itself */
	CHECK_INT_EQ(load_status(p, len, "checksum"), CQ_EFORMAT);
	FRESH();
	put32(p + 20, 1);
	CHECK_INT_EQ(load_status(p, len, "reserved"), CQ_EFORMAT);
	FRESH();
	p[24] += 4;						/* data_offset not a multiple of 64 */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "inconsistent"), CQ_EFORMAT);
	FRESH();
	put32(p + 12, 70000);			/* config_len */
	CHECK_INT_EQ(load_status(p, len, "inconsistent"), CQ_EFORMAT);

	/* config: same length, invalid values, valid checksum */
	FRESH();
	at = find(p, len, "\"heads\": 2");
	CHECK(at > 0);
	p[at + 9] = '3';
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "multiple of heads"), CQ_EINVAL);
	FRESH();
	at = find(p, len, "{\"d_model\"");
	p[at] = '[';
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "not valid JSON"), CQ_EINVAL);
	FRESH();
	at = find(p, len, "\"ffn_dim\"");
	p[at + 1] = 'g';				/* "ffn_dim" renamed: key missing */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "\"ffn_dim\" is missing"), CQ_EINVAL);

	/* tensor table */
	FRESH();
	at = find(p, len, "encoder.layers.1.fc1.weight");
	p[at + 18] = 'X';				/* fc1 -> fX1: unknown */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "unknown tensor"), CQ_EFORMAT);
	FRESH();
	at = find(p, len, "encoder.layers.1.fc2.weight");
	p[at + 19] = '1';				/* fc2 -> fc1: twice */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "twice"), CQ_EFORMAT);
	FRESH();
	at = find(p, len, "encoder.layers.1.fc1.weight");
	at += strlen("encoder.layers.1.fc1.weight") + 2;
	put32(p + at, 25);				/* [24, 16] -> [25, 16] */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "has shape [25, 16]"), CQ_EFORMAT);
	FRESH();
	p[at - 2] = 3;					/* ndim 3 */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "malformed"), CQ_EFORMAT);
	FRESH();
	put32(p + at + 8, 0x7fffffc0u); /* offset beyond the data */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "outside the data"), CQ_EFORMAT);
	FRESH();
	p[at + 8] += 4;					/* offset not 64-aligned */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "outside the data"), CQ_EFORMAT);
	FRESH();
	put32(p + 16, (uint32_t) m->n_tensors - 1);	/* the last tensor unlisted */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "lacks tensor \"decoder.output_projection.weight\""),
				 CQ_EFORMAT);
	FRESH();
	put32(p + 16, (uint32_t) m->n_tensors + 1);	/* one record too many */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "malformed"), CQ_EFORMAT);
	FRESH();
	at = find(p, len, "decoder.output_projection.weight");
	at += strlen("decoder.output_projection.weight") + 2 + 8 + 8;
	p[at] = 0x55;					/* a stray byte after the table */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "stray"), CQ_EFORMAT);

	/* a config bigger than the data: refused before the model is allocated */
	FRESH();
	at = find(p, len, "\"d_model\": 16");
	CHECK(at > 0);
	p[at + 11] = '3';
	p[at + 12] = '2';				/* d_model 32: 4x the embedding floats */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "the config's tensors need"), CQ_EFORMAT);

	/* non-finite weights, named with their tensor and index */
	{
		const cq_tensor_info *t = cq_model_tensor(m, "encoder.layers.1.fc1.weight");
		size_t		data_off = 0;
		uint32_t	bits[3] = {0x7fc00000u, 0x7f800000u, 0xff800000u};	/* NaN, +inf, -inf */

		for (int i = 0; i < 8; i++)
			data_off |= (size_t) p[24 + i] << (8 * i);
		for (int k = 0; k < 3; k++)
		{
			FRESH();
			put32(p + data_off + (t->offset + 5) * 4, bits[k]);
			recrc(p, len);
			CHECK_INT_EQ(load_status(p, len, "tensor \"encoder.layers.1.fc1.weight\" has a non-finite value"),
						 CQ_EFORMAT);
			CHECK_INT_EQ(load_status(p, len, "at index 5"), CQ_EFORMAT);
		}
	}
#undef FRESH
	free(p);
	free(orig);
	cq_model_free(m);
}

/* Position of the ndim byte of tensor name's record (the dtype byte follows). */
static long
record_at(const unsigned char *p, size_t len, const char *name)
{
	long		at = find(p, len, name);

	CHECK(at > 0);
	return at + (long) strlen(name);
}

static uint64_t
get64(const unsigned char *p)
{
	uint64_t	v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t) p[i] << (8 * i);
	return v;
}

/* Where tensor name's data begins in the image. */
static size_t
data_at(const unsigned char *p, size_t len, const char *name)
{
	long		r = record_at(p, len, name);

	return get64(p + 24) + get64(p + r + 2 + 4 * p[r]);
}

/* An int8 model's image (version 2): its codes and scales, every refusal. */
TEST(modelfile_int8_image_refusals)
{
	cq_model   *m = small_model(16, 2, 24, 20, false, true);
	size_t		len,
				at;
	unsigned char *orig,
			   *p;
	long		r;
	const char *fc1 = "encoder.layers.1.fc1.weight",
			   *fc1s = "encoder.layers.1.fc1.weight_scale";
	const float minus_one = -1.0f,
				minus_zero = -0.0f;

	m->cfg.precision = CQ_PRECISION_INT8;
	orig = image(m, &len);
	p = malloc(len);
#define FRESH() memcpy(p, orig, len)
	FRESH();
	CHECK_INT_EQ(p[8], 2);
	CHECK_INT_EQ(load_status(p, len, NULL), CQ_OK);

	/* dtypes: unknown, or not the one the tensor needs */
	r = record_at(p, len, fc1);
	CHECK_INT_EQ(p[r + 1], 1);		/* int8 */
	p[r + 1] = 2;
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "unknown dtype 2"), CQ_EFORMAT);
	FRESH();
	p[r + 1] = 0;
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "\"encoder.layers.1.fc1.weight\" is float32, int8 expected"),
				 CQ_EFORMAT);
	FRESH();
	p[record_at(p, len, fc1s) + 1] = 1;
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "is int8, float32 expected"), CQ_EFORMAT);
	FRESH();
	p[record_at(p, len, "encoder.layers.1.fc1.bias") + 1] = 1;
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "is int8, float32 expected"), CQ_EFORMAT);

	/* a code outside [-127, 127] */
	FRESH();
	at = data_at(p, len, fc1);
	p[at + 5] = 0x80;				/* -128 */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "has code -128 at index 5, outside [-127, 127]"), CQ_EFORMAT);

	/* scales: negative (-0 too), non-finite, misshapen, missing, twice, of a float tensor */
	FRESH();
	at = data_at(p, len, fc1s);
	memcpy(p + at + 8, &minus_one, 4);
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "negative scale (-1) at index 2"), CQ_EFORMAT);
	FRESH();
	memcpy(p + at, &minus_zero, 4);
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "negative scale (-0) at index 0"), CQ_EFORMAT);
	FRESH();
	put32(p + at + 4, 0x7fc00000u);
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "weight_scale\" has a non-finite value"), CQ_EFORMAT);
	FRESH();
	r = record_at(p, len, fc1s);
	put32(p + r + 2, 25);
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "has shape [25], the config needs [24]"), CQ_EFORMAT);
	FRESH();
	put32(p + 16, (p[16] | p[17] << 8) - 1);	/* the last record unlisted */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "lacks tensor \"decoder.output_projection.weight_scale\""),
				 CQ_EFORMAT);
	FRESH();
	r = record_at(p, len, fc1s);
	memcpy(p + r - 33, "decoder.layers.0", 16);	/* encoder.layers.1 -> decoder.layers.0 */
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "tensor \"decoder.layers.0.fc1.weight_scale\" twice"),
				 CQ_EFORMAT);
	FRESH();
	r = record_at(p, len, "encoder.layers.0.self_attn.qkv.weight_scale");
	memcpy(p + r - 43, "decoder.layers.0.encoder_attn.kv.bias_scale", 43);
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "unknown tensor \"decoder.layers.0.encoder_attn.kv.bias_scale\""),
				 CQ_EFORMAT);

	/* placement: misaligned, overlapping, a section cut short */
	FRESH();
	r = record_at(p, len, fc1);
	p[r + 2 + 8] += 4;
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "\"encoder.layers.1.fc1.weight\" lies outside the data section"),
				 CQ_EFORMAT);
	FRESH();
	memcpy(p + r + 2 + 8, p + record_at(p, len, "encoder.layers.1.fc2.weight") + 2 + 8, 8);
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "overlaps an earlier tensor"), CQ_EFORMAT);
	FRESH();
	{
		uint64_t	size = get64(p + 32) - 64;

		for (int i = 0; i < 8; i++)
			p[32 + i] = (unsigned char) (size >> (8 * i));
		recrc(p, len - 64);
		CHECK_INT_EQ(load_status(p, len - 64, "lies outside the data section"), CQ_EFORMAT);
	}
#undef FRESH
	/* codes of 7-bit weights: [-63, 63] */
	free(orig);
	free(p);
	m->cfg.weight_bits = 7;
	orig = image(m, &len);
	p = malloc(len);
	memcpy(p, orig, len);
	CHECK_INT_EQ(load_status(p, len, NULL), CQ_OK);
	at = data_at(p, len, fc1);
	CHECK(p[at] != 64);
	p[at] = 64;
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "has code 64 at index 0, outside [-63, 63]"), CQ_EFORMAT);
	free(p);
	free(orig);
	cq_model_free(m);
}

/* The size of a config without a model equals the allocated model's. */
TEST(model_size_for_config)
{
	for (int variant = 0; variant < 4; variant++)
	{
		cq_model   *m = small_model(16, 2, 24 + 8 * variant, 20 + variant, variant & 1, variant & 2);
		size_t		floats,
					params;

		cq_model_size_for(&m->cfg, &floats, &params);
		CHECK(floats == cq_model_param_floats(m));
		CHECK(params == cq_model_param_count(m));
		CHECK(params <= floats);	/* 16-float alignment may pad */
		cq_model_free(m);
	}
}

/* An int8 image with int8 embeddings: the embeddings are code tensors, checked as such. */
TEST(modelfile_int8_embeddings_refusals)
{
	cq_model   *m = small_model(16, 2, 24, 20, true, false);
	size_t		len;
	unsigned char *orig,
			   *p;
	const char *emb = "decoder.embed_tokens";

	m->cfg.precision = CQ_PRECISION_INT8;
	m->cfg.embedding_precision = CQ_PRECISION_INT8;
	orig = image(m, &len);
	p = malloc(len);
	memcpy(p, orig, len);
	CHECK_INT_EQ(load_status(p, len, NULL), CQ_OK);
	/* tied: no tensor of the projection's own, the embedding's codes are it */
	CHECK(find(p, len, "decoder.output_projection.weight") < 0);
	CHECK_INT_EQ(p[record_at(p, len, emb) + 1], 1);
	p[record_at(p, len, emb) + 1] = 0;
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "\"decoder.embed_tokens\" is float32, int8 expected"),
				 CQ_EFORMAT);
	memcpy(p, orig, len);
	p[data_at(p, len, emb) + 3] = 0x80;
	recrc(p, len);
	CHECK_INT_EQ(load_status(p, len, "has code -128 at index 3, outside [-127, 127]"), CQ_EFORMAT);
	/* a float32 configuration cannot say int8 embeddings */
	{
		cq_model_config c = m->cfg;
		cq_error	err;

		c.precision = CQ_PRECISION_FLOAT32;
		CHECK_INT_EQ(cq_config_validate(&c, &err), CQ_EINVAL);
		CHECK(strstr(err.msg, "needs \"precision\": \"int8\"") != NULL);
	}
	free(p);
	free(orig);
	cq_model_free(m);
}

/* Random damage never crashes the loader nor makes it read out of bounds
 * (a float32 image, and int8 images of codes and scales: float32 and int8
 * embeddings). */
TEST(modelfile_fuzz)
{
	for (int int8 = 0; int8 < 3; int8++)
	{
		cq_model   *m = small_model(8, 2, 8, 6, true, false);
		size_t		len;
		unsigned char *orig;
		unsigned int seed = 12345;
		int			ok = 0;

		if (int8)
			m->cfg.precision = CQ_PRECISION_INT8;
		if (int8 == 2)
			m->cfg.embedding_precision = CQ_PRECISION_INT8;
		orig = image(m, &len);
		for (int it = 0; it < 3000; it++)
		{
			size_t		n = len;
			unsigned char *p;
			int			flips = 1 + rand_r(&seed) % 6;

			if (it % 5 == 0)
				n = rand_r(&seed) % (len + 1);
			p = malloc(n ? n : 1);	/* exactly n bytes: ASan sees overreads */
			memcpy(p, orig, n);
			for (int f = 0; f < flips && n > 0; f++)
			{
				/* mostly the header and table, where the structure is */
				size_t		at = rand_r(&seed) % (it % 3 ? (n < 600 ? n : 600) : n);

				p[at] = (unsigned char) rand_r(&seed);
			}
			if (it % 2 == 0 && n == len)
				recrc(p, n);
			ok += load_status(p, n, NULL) == CQ_OK;
			free(p);
		}
		CHECK(ok < 3000);
		free(orig);
		cq_model_free(m);
	}
}

/* The initialiser's distributions (model.h) on a larger model. */
TEST(model_init_random_distributions)
{
	cq_model   *m = small_model(64, 4, 128, 400, false, true),
			   *again = small_model(64, 4, 128, 400, false, true);
	const cq_tensor_info *t = cq_model_tensor(m, "encoder.embed_tokens");
	const cq_linear *fc1 = &m->enc[1].fc1;
	double		s2 = 0.0,
				mx = 0.0;
	size_t		n = 0;

	CHECK(memcmp(m->params, again->params, m->n_floats * sizeof(float)) == 0);
	for (size_t i = 0; i < t->numel; i++)
		if (i / 64 != CQ_PAD_ID)
		{
			s2 += (double) m->src_embed[i] * m->src_embed[i];
			n++;
		}
	CHECK_NEAR(sqrt(s2 / n), 1.0 / 8, 0.005);	/* N(0, 1/d) */
	for (int i = 0; i < 64; i++)
		CHECK(m->src_embed[CQ_PAD_ID * 64 + i] == 0.0f);
	for (int i = 0; i < fc1->out * fc1->in; i++)
		mx = fabs(fc1->w[i]) > mx ? fabs(fc1->w[i]) : mx;
	CHECK(mx <= sqrt(6.0 / (128 + 64)) && mx > 0.95 * sqrt(6.0 / (128 + 64)));
	CHECK(m->dec[0].ffn_ln.w[5] == 1.0f && m->dec[0].fc2.b[3] == 0.0f);
	CHECK_INT_EQ(cq_model_param_count(m),
				 400 * 64 + 403 * 64 + 2 * 12 * 64 + 403 * 64 +
				 2 * (4 * 64 + 3 * 64 * 64 + 3 * 64 + 64 * 64 + 64 + 2 * 128 * 64 + 128 + 64) +
				 (6 * 64 + 3 * 64 * 64 + 3 * 64 + 64 * 64 + 64 + 64 * 64 + 64 + 2 * 64 * 64 +
				  2 * 64 + 64 * 64 + 64 + 2 * 128 * 64 + 128 + 64) + 4 * 64);
	cq_model_free(m);
	cq_model_free(again);
}

/*
 * A model of norm "rms": every norm (sublayer, final, embedding) has its
 * gain and no bias tensor, knows its kind, size and epsilon, starts as the
 * identity, and the weight file round-trips it.
 */
TEST(model_rms_norms)
{
	cq_model   *m = small_model(16, 2, 24, 20, true, false),
			   *r = NULL,
			   *back = NULL;
	cq_model_config c = m->cfg;
	cq_error	err;
	size_t		len,
				floats,
				params;
	unsigned char *p;

	c.norm = CQ_NORM_RMS;
	c.layernorm_embedding = true;
	c.layer_norm_eps = 1e-6f;
	CHECK_INT_EQ(cq_model_new(&c, &r, &err), CQ_OK);
	cq_model_init_random(r, 7);
	for (int t = 0; t < r->n_tensors; t++)
		if (strstr(r->tensors[t].name, "norm") && strstr(r->tensors[t].name, ".bias"))
			unit_fail(__FILE__, __LINE__, "RMS model has %s", r->tensors[t].name);
	CHECK(cq_model_tensor(r, "encoder.layernorm_embedding.weight") != NULL &&
		  cq_model_tensor(r, "decoder.layers.0.encoder_attn_layer_norm.weight") != NULL);
	/* the layer-norm model with embedding norms has one bias per norm more */
	m->cfg.layernorm_embedding = true;
	cq_model_size_for(&m->cfg, &floats, &params);
	CHECK_INT_EQ(params - cq_model_param_count(r), 16 * (2 + 2 * 2 + 3 * 1 + 2));
	{
		const cq_norm *ns[] = {&r->enc[1].ffn_ln, &r->dec[0].cross_ln, &r->enc_ln,
		&r->tgt_embed_ln};

		for (int i = 0; i < 4; i++)
			CHECK(ns[i]->w && !ns[i]->b && ns[i]->d == 16 && ns[i]->kind == CQ_NORM_RMS &&
				  ns[i]->eps == 1e-6f && ns[i]->w[3] == 1.0f);
	}
	p = image(r, &len);
	CHECK_INT_EQ(cq_modelfile_load(p, len, &back, &err), CQ_OK);
	CHECK(back && cq_config_equal(&back->cfg, &r->cfg) && back->cfg.norm == CQ_NORM_RMS);
	CHECK(back && back->n_floats == r->n_floats &&
		  memcmp(back->params, r->params, r->n_floats * sizeof(float)) == 0);
	free(p);
	cq_model_free(back);
	cq_model_free(r);
	cq_model_free(m);
}
