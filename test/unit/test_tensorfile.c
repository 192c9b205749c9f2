/*
 * The shared tensor-file framing (extension/common/tensorfile.h) through its
 * two users: a model file and an ANTAP file written today are byte for byte
 * the files the two separate writers produced before the framing was shared
 * (golden sizes and CRC-32s of the image before its trailer, taken from the
 * old writers).
 */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>

#include "antap/model.h"
#include "common/crc32.h"
#include "common/le.h"
#include "nn/model/modelfile.h"

static void
golden(const unsigned char *p, size_t len, size_t want_len, uint32_t want_crc)
{
	uint32_t	crc = cq_crc32(0, p, len - 4);	/* the whole file's CRC is the residue */

	if (getenv("CQ_PRINT_GOLDEN"))
		printf("golden: %zu bytes, crc 0x%08x\n", len, (unsigned) crc);
	CHECK_INT_EQ(len, want_len);
	CHECK_INT_EQ(crc, want_crc);
}

/* Model c (its default variants), weights from seed 7, and its file image. */
static unsigned char *
model_image(cq_model_config c, cq_model **m, size_t *len)
{
	cq_error err;
	unsigned char *img;

	cq_config_default_variants(&c);
	CHECK_INT_EQ(cq_model_new(&c, m, &err), CQ_OK);
	cq_model_init_random(*m, 7);
	*len = cq_modelfile_size(*m);
	img = malloc(*len);
	CHECK_INT_EQ(cq_modelfile_write(*m, img, *len, &err), CQ_OK);
	return img;
}

/* A small model (d_model 16, a layer a side) and its file image. */
static unsigned char *
small_model_image(cq_model **m, size_t *len)
{
	const cq_model_config c = {
		.d_model = 16, .heads = 2, .encoder_layers = 1, .decoder_layers = 1,
		.ffn_dim = 24, .activation = CQ_ACT_RELU, .max_positions = 12,
		.positions = CQ_POS_SINUSOIDAL, .src_vocab_size = 20, .tgt_vocab_size = 23,
	};

	return model_image(c, m, len);
}

/* A small AnTAP model, weights from seed 7, and its file image. */
static unsigned char *
antap_image(cq_antap_model **m, size_t *len)
{
	static const cq_antap_config cfg = {
		.pool_rows = 5, .pool_cols = 4, .seq_len = 3, .d_model = 4, .heads = 2,
		.ffn_dim = 6, .pred_factor = 3
	};
	cq_error	err = {0};
	unsigned char *img;

	CHECK_INT_EQ(cq_antap_new(&cfg, m, &err), CQ_OK);
	cq_antap_init_random(*m, 7);
	*len = cq_antap_file_size(*m);
	img = malloc(*len);
	CHECK_INT_EQ(cq_antap_file_write(*m, img, *len, &err), CQ_OK);
	return img;
}

TEST(tensorfile_model_bytes_unchanged)
{
	for (int variant = 0; variant < 2; variant++)
	{
		cq_model_config c = {
			.d_model = 16, .heads = 2, .encoder_layers = 2, .decoder_layers = 1,
			.ffn_dim = 24, .activation = CQ_ACT_GELU, .dropout = 0.1f,
			.attention_dropout = 0.0f, .activation_dropout = 0.2f, .max_positions = 12,
			.positions = variant ? CQ_POS_SINUSOIDAL : CQ_POS_LEARNED,
			.tie_output = variant, .share_embeddings = false,
			.src_vocab_size = 20, .tgt_vocab_size = 23,
		};
		static const size_t want_len[2] = {37252, 34116};
		static const uint32_t want_crc[2] = {0x8f42c873, 0x4073d0a7};
		cq_model   *m = NULL;
		size_t		len;
		unsigned char *p = model_image(c, &m, &len);

		golden(p, len, want_len[variant], want_crc[variant]);
		free(p);
		cq_model_free(m);
	}
}

TEST(tensorfile_antap_bytes_unchanged)
{
	cq_antap_model *m = NULL;
	size_t		len;
	unsigned char *p = antap_image(&m, &len);

	golden(p, len, 2564, 0x7424d95b);
	free(p);
	cq_antap_free(m);
}

/* ---- images that break the format (issue 31) ---- */

#define MAX_RECORDS 128

/* Positions of the table records of image p (n_tensors of them). */
static int
records(const unsigned char *p, size_t *pos)
{
	uint32_t	clen = cq_le_get_u32(p + 12),
				n = cq_le_get_u32(p + 16);
	size_t		q = 40 + clen;

	for (uint32_t i = 0; i < n && i < MAX_RECORDS; i++)
	{
		pos[i] = q;
		q += 2 + (p[q] | p[q + 1] << 8);
		q += 2 + 4 * p[q] + 8;
	}
	pos[n < MAX_RECORDS ? n : MAX_RECORDS] = q;
	return (int) n;
}

/* The record of the tensor called name, or -1. */
static int
record_of(const unsigned char *p, const size_t *pos, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if ((p[pos[i]] | p[pos[i] + 1] << 8) == strlen(name) &&
			memcmp(p + pos[i] + 2, name, strlen(name)) == 0)
			return i;
	return -1;
}

/* Offset field of record i. */
static unsigned char *
offset_field(unsigned char *p, const size_t *pos, int i)
{
	size_t		q = pos[i] + 2 + (p[pos[i]] | p[pos[i] + 1] << 8);

	return p + q + 2 + 4 * p[q];
}

static void
fix_crc(unsigned char *p, size_t len)
{
	cq_le_put_u32(p + len - 4, cq_crc32(0, p, len - 4));
}

/*
 * The five kinds of break on a copy of orig (checksum recomputed each time):
 * 0 tensor `small` placed on top of tensor `big`, 1 the header's reserved
 * u32 set, 2 a record's reserved byte set, 3 a NUL inside the first name,
 * 4 a NUL appended to the first name (the table shifted by one byte into the
 * padding).  Returns the broken copy, NULL when the image has no room (4).
 */
static unsigned char *
broken(const unsigned char *orig, size_t len, int kind, const char *big, const char *small)
{
	unsigned char *p = malloc(len);
	size_t		pos[MAX_RECORDS + 1];
	int			n,
				b,
				s;

	memcpy(p, orig, len);
	n = records(p, pos);
	switch (kind)
	{
		case 0:
			b = record_of(p, pos, n, big);
			s = record_of(p, pos, n, small);
			CHECK(b >= 0 && s >= 0);
			memcpy(offset_field(p, pos, s), offset_field(p, pos, b), 8);
			break;
		case 1:
			p[20] = 1;
			break;
		case 2:
			p[pos[1] + 2 + (p[pos[1]] | p[pos[1] + 1] << 8) + 1] = 1;
			break;
		case 3:
			p[pos[0] + 3] = '\0';
			break;
		case 4:
			{
				size_t		nlen = p[pos[0]] | p[pos[0] + 1] << 8,
							at = pos[0] + 2 + nlen,
							data_off = cq_le_get_u64(p + 24);

				if (pos[n] >= data_off)
				{
					free(p);
					return NULL;
				}
				memmove(p + at + 1, p + at, pos[n] - at);
				p[at] = '\0';
				p[pos[0]] = (unsigned char) (nlen + 1);
			}
			break;
	}
	fix_crc(p, len);
	return p;
}

static const char *const want_msg[] = {"overlaps", "reserved", "reserved", "printable ASCII",
"printable ASCII"};

TEST(tensorfile_model_rejects_broken_images)
{
	cq_model   *m = NULL;
	cq_error err;
	size_t		len;
	unsigned char *orig = small_model_image(&m, &len);
	for (int kind = 0; kind < 5; kind++)
	{
		unsigned char *p = broken(orig, len, kind, "encoder.layers.0.fc1.weight",
								  "encoder.layers.0.fc1.bias");
		cq_model   *back = (cq_model *) 1;
		cq_code s;

		if (!p)
		{
			unit_fail(__FILE__, __LINE__, "no padding to append a NUL to a name");
			continue;
		}
		err.msg[0] = '\0';
		s = cq_modelfile_load(p, len, &back, &err);
		if (s == CQ_OK)
		{
			unit_fail(__FILE__, __LINE__, "broken image %d loads", kind);
			cq_model_free(back);
		}
		else
		{
			CHECK_INT_EQ(s, CQ_EFORMAT);
			CHECK(back == NULL);
			if (!strstr(err.msg, want_msg[kind]))
				unit_fail(__FILE__, __LINE__, "kind %d: message \"%s\" lacks \"%s\"", kind,
						  err.msg, want_msg[kind]);
		}
		free(p);
	}
	free(orig);
	cq_model_free(m);
}

TEST(tensorfile_antap_rejects_broken_images)
{
	cq_antap_model *m = NULL;
	cq_error	err = {0};
	size_t		len,
				pos[MAX_RECORDS + 1];
	unsigned char *orig;
	const char *big,
			   *small;
	int			n;

	orig = antap_image(&m, &len);
	/* the largest tensor and a smaller one */
	n = records(orig, pos);
	CHECK(n == m->n_tensors && n >= 2);
	big = m->tensors[0].name;
	small = m->tensors[1].name;
	for (int i = 0; i < n; i++)
		if (m->tensors[i].numel > cq_antap_tensor(m, big)->numel)
			big = m->tensors[i].name;
	for (int i = 0; i < n; i++)
		if (m->tensors[i].numel < cq_antap_tensor(m, big)->numel)
			small = m->tensors[i].name;
	for (int kind = 0; kind < 5; kind++)
	{
		unsigned char *p = broken(orig, len, kind, big, small);
		cq_antap_model *back = NULL;

		if (!p)
		{
			unit_fail(__FILE__, __LINE__, "no padding to append a NUL to a name");
			continue;
		}
		err.msg[0] = '\0';
		if (cq_antap_file_load(p, len, &back, &err) == CQ_OK)
		{
			unit_fail(__FILE__, __LINE__, "broken ANTAP image %d loads", kind);
			cq_antap_free(back);
		}
		else
		{
			CHECK_INT_EQ(err.code, CQ_EFORMAT);
			CHECK(back == NULL);
			if (!strstr(err.msg, want_msg[kind]))
				unit_fail(__FILE__, __LINE__, "kind %d: message \"%s\" lacks \"%s\"", kind,
						  err.msg, want_msg[kind]);
		}
		free(p);
	}
	free(orig);
	cq_antap_free(m);
}

/* A model file whose config JSON has a leading-zero number or a key that
 * is not UTF-8 (checksum recomputed) fails as a configuration error. */
TEST(tensorfile_model_config_strict_json)
{
	cq_model   *m = NULL;
	cq_error err;
	size_t		len;
	unsigned char *orig = small_model_image(&m, &len);
	for (int kind = 0; kind < 2; kind++)
	{
		unsigned char *p = malloc(len);
		char	   *key = NULL;
		cq_model   *back = NULL;

		memcpy(p, orig, len);
		for (size_t i = 40; i + 15 <= 40 + cq_le_get_u32(p + 12) && !key; i++)
			if (memcmp(p + i, "\"max_positions\"", 15) == 0)
				key = (char *) p + i;
		CHECK(key != NULL);
		if (!key)
		{
			free(p);
			continue;
		}
		if (kind == 0)
		{
			char	   *v = key + 15;

			while (*v == ':' || *v == ' ')
				v++;
			CHECK(v[0] == '1' && v[1] == '2');
			v[0] = '0';			/* "02" */
		}
		else
			key[1] = (char) 0xff;
		fix_crc(p, len);
		err.msg[0] = '\0';
		CHECK_INT_EQ(cq_modelfile_load(p, len, &back, &err), CQ_EINVAL);
		if (!strstr(err.msg, kind == 0 ? "leading zero" : "UTF-8"))
			unit_fail(__FILE__, __LINE__, "message \"%s\"", err.msg);
		if (back)
			cq_model_free(back);
		free(p);
	}
	free(orig);
	cq_model_free(m);
}
