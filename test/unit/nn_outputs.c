/* Shared by the tests that compare two models bit for bit (nn_outputs.h). */
#include "nn_outputs.h"

#include <stdlib.h>

#include "nn/infer/forward.h"
#include "nn/infer/translate.h"
#include "unit.h"

static void
emit(void *arg, const cq_translation *t)
{
	nn_outputs *o = arg;
	const cq_hypothesis *h = &t->hyps[0];
	size_t		n = sizeof(int32_t) * h->len,
				f = sizeof(float) * (h->len + 1);

	if (o->trans_len + n + f > sizeof(o->trans))
		return;
	memcpy(o->trans + o->trans_len, h->tokens, n);
	memcpy(o->trans + o->trans_len + n, h->token_logprobs, f);
	o->trans_len += n + f;
}

void
nn_run(const cq_model *m, const cq_pair *p, nn_outputs *o)
{
	cq_error err;
	cq_batch_shape sh;
	size_t		bytes;
	void	   *ws;
	float		pmax[256];
	double		sl[NN_PAIRS];
	int			sc[NN_PAIRS];
	cq_source	src[NN_PAIRS];
	cq_translate_options opt;
	cq_translate_io io = {emit, NULL, o};

	memset(o, 0, sizeof(*o));
	CHECK_INT_EQ(cq_batch_shape_of(m, p, NN_PAIRS, &sh, &err), CQ_OK);
	bytes = cq_forward_workspace_bytes(&m->cfg, &sh);
	ws = malloc(bytes);
	for (int pass = 0; pass < 3; pass++)
	{
		cq_dropout d = {pass ? CQ_DROPOUT_MC : CQ_DROPOUT_OFF, 9, (uint32_t) pass};
		cq_forward_out fo = {o->logp[pass], pmax, o->entropy[pass], NULL, sl, sc};

		CHECK_INT_EQ(cq_forward(m, p, NN_PAIRS, &d, ws, bytes, &fo, &err), CQ_OK);
	}
	free(ws);
	for (int b = 0; b < NN_PAIRS; b++)
		src[b] = (cq_source) {p[b].src, p[b].src_len, (uint64_t) b, b};
	cq_translate_options_default(&opt);
	opt.beam = 3;
	bytes = cq_translate_bytes(m, &opt, src, NN_PAIRS, 2);
	ws = aligned_alloc(64, (bytes + 63) / 64 * 64);
	CHECK_INT_EQ(cq_translate(m, &opt, src, NN_PAIRS, 2, ws, bytes, &io, &err), CQ_OK);
	free(ws);
}

void
nn_test_pairs(int32_t ids[NN_PAIRS][24], cq_pair *p)
{
	for (int b = 0; b < NN_PAIRS; b++)
	{
		for (int i = 0; i < 24; i++)
			ids[b][i] = 4 + (b * 11 + i * 7) % 30;
		p[b] = (cq_pair) {ids[b], 2 + b * 2, ids[b] + 12, 1 + b, 100 + b};
	}
}

void
nn_test_config(int variant, cq_model_config *c)
{
	cq_error	err;

	CHECK_INT_EQ(cq_config_preset("tiny", 34, variant == 2 ? 34 : 36, c, &err), CQ_OK);
	c->d_model = 32;
	c->heads = 4;
	c->ffn_dim = 64;
	c->max_positions = 24;
	c->tie_output = variant != 1;
	c->share_embeddings = variant == 2;
	c->positions = variant == 0 ? CQ_POS_SINUSOIDAL : CQ_POS_LEARNED;
	c->dropout = c->attention_dropout = c->activation_dropout = 0.1f;
}
