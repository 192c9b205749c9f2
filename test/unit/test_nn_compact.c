/*
 * cq_model_compact: a packed model keeps one copy of each weight and gives
 * the same bits as before compaction, for teacher-forced scoring (with and
 * without Monte Carlo dropout) and for translation.
 */
#include <stdlib.h>

#include "nn/model/modelfile.h"
#include "nn/train/train_pass.h"
#include "nn_outputs.h"
#include "unit.h"

TEST(nn_compact_keeps_one_copy_and_the_same_bits)
{
	int32_t		ids[NN_PAIRS][24];
	cq_pair		p[NN_PAIRS];

	nn_test_pairs(ids, p);
	/*
	 * 0: tied output, sinusoids; 1: untied, learned positions; 2: one
	 * embedding shared by source, target and output
	 */
	for (int variant = 0; variant < 3; variant++)
	{
		cq_model_config c;
		cq_model   *m = NULL;
		cq_error err;
		nn_outputs *before = malloc(sizeof(nn_outputs)),
				   *after = malloc(sizeof(nn_outputs));
		size_t		floats;

		nn_test_config(variant, &c);
		CHECK_INT_EQ(cq_model_new(&c, &m, &err), CQ_OK);
		cq_model_init_random(m, 5 + variant);
		floats = m->n_floats;
		CHECK_INT_EQ(cq_model_compact(m, &err), CQ_EINVAL);
		CHECK_INT_EQ(cq_model_pack(m, &err), CQ_OK);
		nn_run(m, p, before);
		CHECK_INT_EQ(cq_model_compact(m, &err), CQ_OK);
		nn_run(m, p, after);
		CHECK(memcmp(before, after, sizeof(nn_outputs)) == 0);
		CHECK(before->trans_len > 0);
		/* what is left: embeddings, positions, layer norms and biases */
		CHECK(m->n_floats < floats / 2);
		CHECK(m->enc[0].qkv.w == NULL && m->enc[0].qkv.b != NULL);
		/* a tied embedding is read from the output projection's packed copy */
		CHECK((variant == 1) == (m->tgt_embed != NULL));
		CHECK((variant == 2) == (m->src_embed == NULL));
		CHECK(m->out_proj == NULL);
		CHECK(cq_model_tensor(m, "encoder.layers.0.fc1.weight") == NULL);
		CHECK(cq_model_tensor(m, "encoder.layers.0.fc1.bias") != NULL);
		/* inference only */
		{
			char		buf[64];
			cq_model   *g = NULL;
			cq_train_pass_out to;

			CHECK_INT_EQ(cq_modelfile_write(m, buf, sizeof(buf), &err), CQ_EINVAL);
			CHECK_INT_EQ(cq_model_new(&c, &g, &err), CQ_OK);
			CHECK_INT_EQ(cq_train_pass(m, g, p, NN_PAIRS, NULL, 0.1f, buf, sizeof(buf), &to, &err),
						 CQ_EINVAL);
			cq_model_free(g);
		}
		cq_model_free(m);
		free(before);
		free(after);
	}
}
