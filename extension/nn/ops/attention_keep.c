/*
 * Attention for training (ops.h): the forward keeps each head's softmax, the
 * backward turns dout into dq, dk, dv.  Products go through OpenBLAS; the
 * per-head order of operations is fixed, so a pass is reproducible.
 * Used by the training pass (layers/block_backward.c) and by ANTAP.
 */
#include <math.h>
#include <string.h>

#include "nn/ops/backward_ops.h"
#include "nn/ops/blas.h"
#include "nn/ops/ops.h"

static bool
drops(const cq_attention_args *a)
{
	return a->drop && a->drop->on && a->drop_p > 0.0f;
}

/* Inverted dropout of the [lq, lk] block x with head h's masks. */
static void
drop_block(const cq_attention_args *a, int h, float *x)
{
	uint32_t	site = cq_dropout_site(a->drop_kind, a->layer, h);

	for (int i = 0; i < a->lq; i++)
		cq_dropout_apply(a->drop, a->drop_p, site, (uint32_t) i, x + (long) i * a->lk,
						 a->lk);
}

/* Head h's probabilities as the forward used them: P, or P dropped into pd. */
static const float *
used_probs(const cq_attention_args *a, const float *P, int h, float *pd)
{
	if (!drops(a))
		return P;
	memcpy(pd, P, sizeof(float) * a->lq * a->lk);
	drop_block(a, h, pd);
	return pd;
}

void
cq_attention_keep(const cq_attention_args *a, float *probs, float *pd)
{
	float		scale = 1.0f / sqrtf((float) a->dh);

	for (int h = 0; h < a->heads; h++)
	{
		int			col = h * a->dh;
		float	   *P = probs + (long) h * a->lq * a->lk;

		/* P[lq, lk] = softmax(Q_h K_h^T / sqrt(dh)); out_h[lq, dh] = Drop(P) V_h */
		cq_sgemm(false, true, a->lq, a->lk, a->dh, scale, a->q + col, a->ldq,
				 a->k + col, a->ldk, 0.0f, P, a->lk);
		cq_softmax_rows(P, a->lq, a->lk, a->lk, a->causal);
		cq_sgemm(false, false, a->lq, a->dh, a->lk, 1.0f, used_probs(a, P, h, pd), a->lk,
				 a->v + col, a->ldv, 0.0f, a->out + col, a->ldo);
	}
}

void
cq_attention_backward(const cq_attention_args *a, const float *probs,
					  const cq_attention_grads *g)
{
	float		scale = 1.0f / sqrtf((float) a->dh);

	for (int h = 0; h < a->heads; h++)
	{
		int			col = h * a->dh;
		const float *P = probs + (long) h * a->lq * a->lk;

		/* dV = P'^T dO; dP' = dO V^T; dP = mask dP' */
		cq_sgemm(true, false, a->lk, a->dh, a->lq, 1.0f, used_probs(a, P, h, g->pd), a->lk,
				 g->dout + col, g->ldo, 0.0f, g->dv + col, g->lddv);
		cq_sgemm(false, true, a->lq, a->lk, a->dh, 1.0f, g->dout + col, g->ldo,
				 a->v + col, a->ldv, 0.0f, g->dp, a->lk);
		if (drops(a))
			drop_block(a, h, g->dp);
		/* dS = softmax'(dP) / sqrt(dh); dQ = dS K, dK = dS^T Q */
		cq_softmax_backward_rows(P, g->dp, a->lq, a->lk, scale);
		cq_sgemm(false, false, a->lq, a->dh, a->lk, 1.0f, g->dp, a->lk,
				 a->k + col, a->ldk, 0.0f, g->dq + col, g->lddq);
		cq_sgemm(true, false, a->lk, a->dh, a->lq, 1.0f, g->dp, a->lk,
				 a->q + col, a->ldq, 0.0f, g->dk + col, g->lddk);
	}
}
