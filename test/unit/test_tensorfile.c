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
#include "nn/modelfile.h"

static void
golden(const unsigned char *p, size_t len, size_t want_len, uint32_t want_crc)
{
	uint32_t	crc = cq_crc32(0, p, len - 4);	/* the whole file's CRC is the residue */

	if (getenv("CQ_PRINT_GOLDEN"))
		printf("golden: %zu bytes, crc 0x%08x\n", len, (unsigned) crc);
	CHECK_INT_EQ(len, want_len);
	CHECK_INT_EQ(crc, want_crc);
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
		cq_nn_error err;
		size_t		len;
		unsigned char *p;

		CHECK_INT_EQ(cq_model_new(&c, &m, &err), CQ_NN_OK);
		cq_model_init_random(m, 7);
		len = cq_modelfile_size(m);
		p = malloc(len);
		CHECK_INT_EQ(cq_modelfile_write(m, p, len, &err), CQ_NN_OK);
		golden(p, len, want_len[variant], want_crc[variant]);
		free(p);
		cq_model_free(m);
	}
}

TEST(tensorfile_antap_bytes_unchanged)
{
	static const cq_antap_config cfg = {
		.pool_rows = 5, .pool_cols = 4, .seq_len = 3, .d_model = 4, .heads = 2,
		.ffn_dim = 6, .pred_factor = 3
	};
	cq_antap_model *m = NULL;
	cq_error	err = {0};
	size_t		len;
	unsigned char *p;

	CHECK_INT_EQ(cq_antap_new(&cfg, &m, &err), CQ_OK);
	cq_antap_init_random(m, 7);
	len = cq_antap_file_size(m);
	p = malloc(len);
	CHECK_INT_EQ(cq_antap_file_write(m, p, len, &err), CQ_OK);
	golden(p, len, 2564, 0x7424d95b);
	free(p);
	cq_antap_free(m);
}
