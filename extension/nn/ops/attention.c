#include <math.h>

#include "nn/ops/ops.h"
#include "nn/ops/rowgemm.h"

/*
 * Both products run the row-independent kernel (rowgemm.h): a score is one
 * chain over the head's dh dimensions, an output element one chain over the
 * keys in order 0 .. lk-1.  A causal row's probabilities beyond its own
 * position are exact zeros, and fma(0, v, acc) = acc, so query i's output is
 * the same bits as attention over keys 0..i alone (an incremental decoder's
 * step), and no row depends on which other queries are computed with it.
 */
void
cq_attention(const cq_attention_args *a)
{
	float		scale = 1.0f / sqrtf((float) a->dh);

	for (int h = 0; h < a->heads; h++)
	{
		int			col = h * a->dh;
		uint32_t	site = cq_dropout_site(a->drop_kind, a->layer, h);

		/* scores[lq, lk] = Q_h K_h^T / sqrt(dh) */
		cq_rowgemm_nt(a->q + col, a->ldq, a->k + col, a->ldk, NULL, a->scores, a->lk,
					  a->lq, a->lk, a->dh);
		for (long i = 0; i < (long) a->lq * a->lk; i++)
			a->scores[i] *= scale;
		cq_softmax_rows(a->scores, a->lq, a->lk, a->lk, a->causal);
		if (a->drop && a->drop->on && a->drop_p > 0.0f)
			for (int i = 0; i < a->lq; i++)
				cq_dropout_apply(a->drop, a->drop_p, site, (uint32_t) i,
								 a->scores + (long) i * a->lk, a->lk);
		/* out_h[lq, dh] = P V_h */
		cq_rowgemm_nn(a->scores, a->lk, a->v + col, a->ldv, NULL, a->out + col, a->ldo,
					  a->lq, a->dh, a->lk);
	}
}
