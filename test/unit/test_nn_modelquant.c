/*
 * Quantizing a float32 weight file as a stream (cq_modelquant,
 * nn/model/modelfile.h): the int8 image it writes is, byte for byte, the one
 * cq_modelfile_write makes of the loaded float32 model with the int8
 * precision set (what corpq.model_quantize stored before it streamed), for
 * tied, untied and shared translation models and an encoder with a pooler,
 * both code widths and both embedding precisions, whatever the pieces the
 * input arrives in and the blocks the output leaves in (each block once,
 * a few open at once for an input in parameter order); and a damaged input is refused: a flipped byte (the
 * checksum), a non-finite weight (named), a truncated stream, an int8
 * input, a head too short for the tensor table, a misshapen tensor.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32.h"
#include "common/le.h"
#include "nn/model/modelfile.h"
#include "nn_outputs.h"
#include "unit.h"

static cq_model_config
encoder_config(void)
{
	cq_model_config c;
	cq_error	err;

	CHECK_INT_EQ(cq_config_preset("tiny", 40, 40, &c, &err), CQ_OK);
	cq_config_make_encoder(&c);
	c.d_model = 16;
	c.heads = 2;
	c.ffn_dim = 32;
	c.encoder_layers = 2;
	c.max_positions = 12;
	c.pooling = CQ_POOL_CLS;
	c.pooler = true;
	c.positions = CQ_POS_LEARNED;
	return c;
}

/* The float32 image of a random model of cfg. */
static unsigned char *
float_image(const cq_model_config *c, uint64_t seed, float poison, size_t *len)
{
	cq_model   *m = NULL;
	cq_error	err;
	unsigned char *p;

	CHECK_INT_EQ(cq_model_new(c, &m, &err), CQ_OK);
	if (!m)
		return NULL;
	cq_model_init_random(m, seed);
	if (poison != 0)
		m->params[m->tensors[m->n_tensors - 1].offset + 1] = poison;
	*len = cq_modelfile_size(m);
	p = malloc(*len);
	CHECK_INT_EQ(cq_modelfile_write(m, p, *len, &err), CQ_OK);
	cq_model_free(m);
	return p;
}

/* model_quantize's image before streaming: load, set the precision, write. */
static unsigned char *
reference(const unsigned char *f32, size_t len, int bits, cq_precision emb, size_t *out_len)
{
	cq_model   *m = NULL;
	cq_error	err;
	unsigned char *p;

	CHECK_INT_EQ(cq_modelfile_load(f32, len, &m, &err), CQ_OK);
	if (!m)
		return NULL;
	m->cfg.precision = CQ_PRECISION_INT8;
	m->cfg.weight_bits = bits;
	m->cfg.embedding_precision = emb;
	*out_len = cq_modelfile_size(m);
	p = malloc(*out_len);
	CHECK_INT_EQ(cq_modelfile_write(m, p, *out_len, &err), CQ_OK);
	cq_model_free(m);
	return p;
}

/* The most blocks the last stream() held open, by its count. */
static size_t last_peak;

/*
 * Take every ready block of q into out (out_len bytes), checking that each
 * comes once and has its length; false on a wrong block.
 */
static bool
take_blocks(cq_modelquant *q, size_t block, unsigned char *out, size_t out_len, unsigned char *seen)
{
	size_t		index,
				len;
	const void *data;

	while (cq_modelquant_next(q, &index, &data, &len))
	{
		size_t		want = (index + 1) * block <= out_len ? block : out_len - index * block;

		if (index * block >= out_len || seen[index] || len != want)
			return false;
		seen[index] = 1;
		memcpy(out + index * block, data, len);
	}
	return true;
}

/*
 * Stream f32 through the quantizer in pieces of `piece` bytes (0: all at
 * once), the int8 image in blocks of `block` bytes; the status of the first
 * failure (CQ_OK: none), the image in *out (every block came once).
 */
static cq_code
stream_blocks(const unsigned char *f32, size_t len, size_t head_len, size_t feed, int bits,
			  cq_precision emb, size_t piece, size_t block, unsigned char **out, size_t *out_len,
			  cq_error *err)
{
	cq_modelquant *q = NULL;
	unsigned char *seen = NULL;
	size_t		nb;
	cq_code		s;

	*out = NULL;
	s = cq_modelquant_begin(f32, head_len, len, bits, emb, block, &q, out_len, err);
	if (s)
		return s;
	last_peak = cq_modelquant_peak_blocks(q);
	nb = (*out_len + block - 1) / block;
	*out = malloc(*out_len);
	seen = calloc(nb, 1);
	CHECK(take_blocks(q, block, *out, *out_len, seen));
	for (size_t at = 0; s == CQ_OK && at < feed;)
	{
		size_t		n = piece == 0 || piece > feed - at ? feed - at : piece;

		s = cq_modelquant_put(q, f32 + at, n, err);
		CHECK(take_blocks(q, block, *out, *out_len, seen));
		at += n;
	}
	if (s == CQ_OK)
		s = cq_modelquant_end(q, err);
	if (s == CQ_OK)
	{
		CHECK(take_blocks(q, block, *out, *out_len, seen));
		for (size_t b = 0; b < nb; b++)
			CHECK(seen[b]);
	}
	free(seen);
	cq_modelquant_free(q);
	return s;
}

static cq_code
stream(const unsigned char *f32, size_t len, size_t head_len, size_t feed, int bits,
	   cq_precision emb, size_t piece, unsigned char **out, size_t *out_len, cq_error *err)
{
	return stream_blocks(f32, len, head_len, feed, bits, emb, piece, 4096, out, out_len, err);
}

TEST(modelquant_stream_is_model_quantize)
{
	static const size_t pieces[] = {0, 1, 7, 333, 4096, 65536};
	static const size_t blocks[] = {1, 5, 64, 1000, 4096, 1 << 30};
	int			cases = 0;

	for (int variant = 0; variant < 4; variant++)
	{
		cq_model_config c;
		size_t		len;
		unsigned char *f32;

		if (variant < 3)
			nn_test_config(variant, &c);
		else
			c = encoder_config();
		f32 = float_image(&c, 21 + variant, 0, &len);
		for (int bits = 7; bits <= 8; bits++)
			for (int e = 0; e < 2; e++)
			{
				cq_precision emb = e ? CQ_PRECISION_INT8 : CQ_PRECISION_FLOAT32;
				size_t		ref_len,
							out_len;
				unsigned char *ref = reference(f32, len, bits, emb, &ref_len);

				for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++)
				{
					unsigned char *out;
					cq_error	err;

					CHECK_INT_EQ(stream_blocks(f32, len, len, len, bits, emb, pieces[k], blocks[k], &out,
											   &out_len, &err), CQ_OK);
					CHECK(ref && out && out_len == ref_len && memcmp(out, ref, ref_len) == 0);
					/* an input in parameter order keeps a few blocks open: the
					 * codes, their scales, a tied projection's own codes */
					CHECK(last_peak >= 1 && last_peak <= 5);
					free(out);
					cases++;
				}
				free(ref);
			}
		free(f32);
	}
	CHECK_INT_EQ(cases, 4 * 2 * 2 * 6);
}

/*
 * f32 with its tensors' data in reverse order (the table rewritten, the
 * CRC too): the same model, laid out as no writer of corpq lays it out.
 */
static unsigned char *
reversed_image(const unsigned char *f32, size_t len)
{
	unsigned char *out = malloc(len);
	size_t		data_off = (size_t) cq_le_get_u64(f32 + 24),
				pos = CQ_MODELFILE_HEADER + cq_le_get_u32(f32 + 12),
				at = 0;
	uint32_t	n = cq_le_get_u32(f32 + 16);
	size_t	   *rec = malloc(sizeof(size_t) * n),
			   *bytes = malloc(sizeof(size_t) * n);

	memcpy(out, f32, len);
	memset(out + data_off, 0, len - data_off);
	for (uint32_t i = 0; i < n; i++)
	{
		size_t		nlen = cq_le_get_u16(f32 + pos);
		int			ndim = f32[pos + 2 + nlen];
		size_t		numel = 1;

		for (int k = 0; k < ndim; k++)
			numel *= cq_le_get_u32(f32 + pos + 2 + nlen + 2 + 4 * k);
		rec[i] = pos + 2 + nlen + 2 + 4 * (size_t) ndim;	/* its offset field */
		bytes[i] = 4 * numel;
		pos = rec[i] + 8;
	}
	for (uint32_t j = n; j-- > 0;)
	{
		memcpy(out + data_off + at, f32 + data_off + cq_le_get_u64(f32 + rec[j]), bytes[j]);
		cq_le_put_u64(out + rec[j], at);
		at += (bytes[j] + 63) / 64 * 64;
	}
	cq_le_put_u32(out + len - 4, cq_crc32(0, out, len - 4));
	free(rec);
	free(bytes);
	return out;
}

TEST(modelquant_any_tensor_order)
{
	for (int variant = 0; variant < 4; variant++)
	{
		cq_model_config c;
		size_t		len,
					ref_len,
					out_len,
					in_order_peak;
		unsigned char *f32,
				   *rev,
				   *ref,
				   *out;
		cq_error	err;

		if (variant < 3)
			nn_test_config(variant, &c);
		else
			c = encoder_config();
		f32 = float_image(&c, 40 + variant, 0, &len);
		rev = reversed_image(f32, len);
		ref = reference(f32, len, 8, CQ_PRECISION_FLOAT32, &ref_len);
		CHECK_INT_EQ(stream_blocks(f32, len, len, len, 8, CQ_PRECISION_FLOAT32, 333, 256, &out, &out_len, &err),
					 CQ_OK);
		in_order_peak = last_peak;
		free(out);
		/* the same int8 image, with more of it open at once */
		CHECK_INT_EQ(stream_blocks(rev, len, len, len, 8, CQ_PRECISION_FLOAT32, 333, 256, &out, &out_len, &err),
					 CQ_OK);
		CHECK(ref && out && out_len == ref_len && memcmp(out, ref, ref_len) == 0);
		CHECK(last_peak > in_order_peak);
		free(out);
		free(ref);
		free(rev);
		free(f32);
	}
}

TEST(modelquant_refusals)
{
	cq_model_config c;
	size_t		len,
				out_len;
	unsigned char *f32,
			   *bad,
			   *out;
	cq_error	err;
	uint64_t	data_off;

	nn_test_config(1, &c);
	f32 = float_image(&c, 5, 0, &len);
	data_off = cq_le_get_u64(f32 + 24);

	/* a flipped byte in the data: the checksum, at the end */
	bad = malloc(len);
	memcpy(bad, f32, len);
	bad[data_off + 100] ^= 0x10;
	CHECK_INT_EQ(stream(bad, len, len, len, 8, CQ_PRECISION_INT8, 1000, &out, &out_len, &err), CQ_EFORMAT);
	CHECK(strstr(err.msg, "checksum") != NULL);
	free(out);
	free(bad);

	/* truncated: the stream stops a byte early */
	CHECK_INT_EQ(stream(f32, len, len, len - 1, 8, CQ_PRECISION_INT8, 0, &out, &out_len, &err), CQ_EFORMAT);
	CHECK(strstr(err.msg, "truncated") != NULL);
	free(out);

	/* the table must lie in the head */
	CHECK_INT_EQ(stream(f32, len, (size_t) data_off - 1, len, 8, CQ_PRECISION_INT8, 0, &out, &out_len, &err),
				 CQ_ELIMIT);
	free(out);

	/* a data section that starts inside the configuration */
	bad = malloc(len);
	memcpy(bad, f32, len);
	cq_le_put_u64(bad + 24, 64);
	cq_le_put_u64(bad + 32, len - 64 - 4);
	CHECK_INT_EQ(stream(bad, len, len, len, 8, CQ_PRECISION_INT8, 0, &out, &out_len, &err), CQ_EFORMAT);
	CHECK(strstr(err.msg, "inconsistent") != NULL);
	free(out);
	free(bad);

	/* weight_bits */
	CHECK_INT_EQ(stream(f32, len, len, len, 6, CQ_PRECISION_INT8, 0, &out, &out_len, &err), CQ_EINVAL);
	free(out);

	/* a misshapen tensor: the first record's first dimension plus one */
	bad = malloc(len);
	memcpy(bad, f32, len);
	{
		size_t		rec = CQ_MODELFILE_HEADER + cq_le_get_u32(bad + 12);
		size_t		nlen = cq_le_get_u16(bad + rec);
		unsigned char *dim = bad + rec + 2 + nlen + 2;

		cq_le_put_u32(dim, cq_le_get_u32(dim) + 1);
	}
	CHECK_INT_EQ(stream(bad, len, len, len, 8, CQ_PRECISION_INT8, 0, &out, &out_len, &err), CQ_EFORMAT);
	CHECK(strstr(err.msg, "wrong shape") != NULL);
	free(out);
	free(bad);

	/* an int8 input */
	{
		size_t		i8_len;
		unsigned char *i8 = reference(f32, len, 8, CQ_PRECISION_INT8, &i8_len);

		CHECK_INT_EQ(stream(i8, i8_len, i8_len, i8_len, 8, CQ_PRECISION_INT8, 0, &out, &out_len, &err),
					 CQ_EINVAL);
		CHECK(strstr(err.msg, "int8 already") != NULL);
		free(out);
		free(i8);
	}
	free(f32);

	/* a non-finite weight, named */
	f32 = float_image(&c, 5, NAN, &len);
	CHECK_INT_EQ(stream(f32, len, len, len, 8, CQ_PRECISION_INT8, 4096, &out, &out_len, &err), CQ_EFORMAT);
	CHECK(strstr(err.msg, "non-finite") != NULL && strstr(err.msg, "decoder.") != NULL);
	free(out);
	free(f32);
}
