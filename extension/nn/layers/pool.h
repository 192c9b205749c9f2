/*
 * An encoder model's sentence vector (models/FORMAT.md, "Encoder models"),
 * written once for embedding (infer/encode.c) and training (train/dual_pass.c):
 *
 *   p = Pool(h)                 mean of the sentence's output rows, or its
 *                               first row (<s>, BERT's [CLS]): cfg.pooling
 *   z = tanh(p W^T + b)         the pooler, when the model has one
 *   e = z / max(||z||, 1e-12)   L2 normalisation (torch.nn.functional.normalize)
 *
 * h is the encoder's output after its final norm, packed sentence after
 * sentence as the source side of cq_pair (packed.h): sentence i has
 * cq_side_positions(&s[i], false) rows.  Each sentence is computed from its
 * own rows only, so its vector has the same bits alone or in any batch.
 */
#ifndef CQ_NN_POOL_H
#define CQ_NN_POOL_H

#include "nn/layers/packed.h"
#include "nn/model/model.h"

/* The norm below which a vector is not scaled up further. */
#define CQ_L2_EPS 1e-12

/*
 * What the forward keeps for the backward (NULL members in inference):
 * p [n, d] the pooled rows, z [n, d] the pooler's output, norm [n] the
 * divisor of each vector.
 */
typedef struct cq_pool_keep
{
	float	   *p;
	float	   *z;
	float	   *norm;
} cq_pool_keep;

/*
 * e[n, d] (row stride d) from the packed rows h (stride d) of n sentences;
 * tmp is [n, d] scratch when keep is NULL.
 */
void		cq_pool_forward(const cq_model *m, const cq_pair *s, int n, const float *h,
							float *tmp, float *e, const cq_pool_keep *keep);

/*
 * Backward of cq_pool_forward with keep, from de[n, d] (overwritten) with
 * tmp [n, d] scratch: dh (the packed rows) gets d(loss)/dh, overwritten; the
 * pooler's gradients accumulate into g's.
 */
void		cq_pool_backward(const cq_model *m, cq_model *g, const cq_pair *s, int n,
							 const float *e, const cq_pool_keep *keep, float *de, float *tmp,
							 float *dh);

#endif
