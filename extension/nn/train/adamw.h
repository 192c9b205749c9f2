/*
 * AdamW (Loshchilov & Hutter) as torch.optim.AdamW computes it, over a flat
 * float buffer.  For step t (1-based), gradient g, learning rate lr:
 *   p <- p (1 - lr wd)                          decoupled decay, every entry
 *   m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
 *   p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * fairseq's adam decays every parameter too (biases, layer norms, embeddings
 * included) and we follow it; fairseq adds eps to sqrt(v) before the bias
 * correction (eps scaled by sqrt(1 - b2^t)), a difference of order eps = 1e-9.
 */
#ifndef CQ_NN_ADAMW_H
#define CQ_NN_ADAMW_H

#include <stddef.h>
#include <stdint.h>

typedef struct cq_adamw
{
	float		beta1;			/* 0.9 */
	float		beta2;			/* 0.98 */
	float		eps;			/* 1e-9 */
	float		weight_decay;	/* 1e-4 */
} cq_adamw;

/* One update of n entries at step t >= 1; m and v start at zero. */
void		cq_adamw_update(const cq_adamw *opt, int64_t t, double lr, float *p,
							const float *g, float *m, float *v, size_t n);

#endif
