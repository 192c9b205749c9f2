/*
 * cq_model_compact: a packed model keeps one copy of each weight and gives
 * the same bits as before compaction, for teacher-forced scoring (with and
 * without Monte Carlo dropout) and for translation.
 */
#include <stdlib.h>

#include "nn/infer/forward.h"
#include "nn/infer/translate.h"
#include "nn/model/modelfile.h"
#include "nn/train/train_pass.h"
#include "unit.h"

#define NP 5

typedef struct outputs
{
	float		logp[3][256],
				entropy[3][256];
	unsigned char trans[8192];
	size_t		trans_len;
} outputs;

static void
emit(void *arg, const cq_translation *t)
{
	outputs    *o = arg;
	const cq_hypothesis *h = &t->hyps[0];
	size_t		n = sizeof(int32_t) * h->len,
				f = sizeof(float) * (h->len + 1);

	if (o->trans_len + n + f > sizeof(o->trans))
		return;
	memcpy(o->trans + o->trans_len, h->tokens, n);
	memcpy(o->trans + o->trans_len + n, h->token_logprobs, f);
	o->trans_len += n + f;
}

static void
run(const cq_model *m, const cq_pair *p, outputs *o)
{
	cq_error err;
	cq_batch_shape sh;
	size_t		bytes;
	void	   *ws;
	float		pmax[256];
	double		sl[NP];
	int			sc[NP];
	cq_source	src[NP];
	cq_translate_options opt;
	cq_translate_io io = {emit, NULL, o};

	memset(o, 0, sizeof(*o));
	CHECK_INT_EQ(cq_batch_shape_of(m, p, NP, &sh, &err), CQ_OK);
	bytes = cq_forward_workspace_bytes(&m->cfg, &sh);
	ws = malloc(bytes);
	for (int pass = 0; pass < 3; pass++)
	{
		cq_dropout d = {pass ? CQ_DROPOUT_MC : CQ_DROPOUT_OFF, 9, (uint32_t) pass};
		cq_forward_out fo = {o->logp[pass], pmax, o->entropy[pass], NULL, sl, sc};

		CHECK_INT_EQ(cq_forward(m, p, NP, &d, ws, bytes, &fo, &err), CQ_OK);
	}
	free(ws);
	for (int b = 0; b < NP; b++)
		src[b] = (cq_source) {p[b].src, p[b].src_len, (uint64_t) b, b};
	cq_translate_options_default(&opt);
	opt.beam = 3;
	bytes = cq_translate_bytes(m, &opt, src, NP, 2);
	ws = aligned_alloc(64, (bytes + 63) / 64 * 64);
	CHECK_INT_EQ(cq_translate(m, &opt, src, NP, 2, ws, bytes, &io, &err), CQ_OK);
	free(ws);
}

TEST(nn_compact_keeps_one_copy_and_the_same_bits)
{
	int32_t		ids[NP][24];
	cq_pair		p[NP];

	for (int b = 0; b < NP; b++)
	{
		for (int i = 0; i < 24; i++)
			ids[b][i] = 4 + (b * 11 + i * 7) % 30;
		p[b] = (cq_pair) {ids[b], 2 + b * 2, ids[b] + 12, 1 + b, 100 + b};
	}
	/*
	 * 0: tied output, sinusoids; 1: untied, learned positions; 2: one
	 * embedding shared by source, target and output
	 */
	for (int variant = 0; variant < 3; variant++)
	{
		cq_model_config c;
		cq_model   *m = NULL;
		cq_error err;
		outputs    *before = malloc(sizeof(outputs)),
				   *after = malloc(sizeof(outputs));
		size_t		floats;

		CHECK_INT_EQ(cq_config_preset("tiny", 34, variant == 2 ? 34 : 36, &c, &err), CQ_OK);
		c.d_model = 32;
		c.heads = 4;
		c.ffn_dim = 64;
		c.max_positions = 24;
		c.tie_output = variant != 1;
		c.share_embeddings = variant == 2;
		c.positions = variant == 0 ? CQ_POS_SINUSOIDAL : CQ_POS_LEARNED;
		c.dropout = c.attention_dropout = c.activation_dropout = 0.1f;
		CHECK_INT_EQ(cq_model_new(&c, &m, &err), CQ_OK);
		cq_model_init_random(m, 5 + variant);
		floats = m->n_floats;
		CHECK_INT_EQ(cq_model_compact(m, &err), CQ_EINVAL);
		CHECK_INT_EQ(cq_model_pack(m, &err), CQ_OK);
		run(m, p, before);
		CHECK_INT_EQ(cq_model_compact(m, &err), CQ_OK);
		run(m, p, after);
		CHECK(memcmp(before, after, sizeof(outputs)) == 0);
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
			CHECK_INT_EQ(cq_train_pass(m, g, p, NP, NULL, 0.1f, buf, sizeof(buf), &to, &err),
						 CQ_EINVAL);
			cq_model_free(g);
		}
		cq_model_free(m);
		free(before);
		free(after);
	}
}
