#include <math.h>

#include "nn/blas.h"
#include "nn/ops.h"

void
cq_attention(const cq_attention_args *a)
{
	float		scale = 1.0f / sqrtf((float) a->dh);

	for (int h = 0; h < a->heads; h++)
	{
		int			col = h * a->dh;
		uint32_t	site = cq_dropout_site(a->drop_kind, a->layer, h);

		/* scores[lq, lk] = Q_h K_h^T / sqrt(dh) */
		cq_sgemm(false, true, a->lq, a->lk, a->dh, scale, a->q + col, a->ldq,
				 a->k + col, a->ldk, 0.0f, a->scores, a->lk);
		cq_softmax_rows(a->scores, a->lq, a->lk, a->lk, a->causal);
		if (a->drop && a->drop->on && a->drop_p > 0.0f)
			for (int i = 0; i < a->lq; i++)
				cq_dropout_apply(a->drop, a->drop_p, site, (uint32_t) i,
								 a->scores + (long) i * a->lk, a->lk);
		/* out_h[lq, dh] = P V_h */
		cq_sgemm(false, false, a->lq, a->dh, a->lk, 1.0f, a->scores, a->lk,
				 a->v + col, a->ldv, 0.0f, a->out + col, a->ldo);
	}
}
