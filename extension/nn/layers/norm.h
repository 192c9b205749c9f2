/*
 * The norm object: the one way every pass normalises rows (the blocks'
 * sublayer norms, the final norms, the embedding norm; scoring, decoding and
 * training alike, and ANTAP).  A cq_norm (ops/params.h) holds its weights,
 * its kind and its epsilon; these functions pick the kind's kernels, so a
 * new kind is a kernel file in ops/ and a row of kinds[] in norm.c.
 *
 * A norm the model does not have (w NULL) is the identity: the forward
 * copies, the backward passes dy through.
 */
#ifndef CQ_NN_NORM_H
#define CQ_NN_NORM_H

#include "nn/ops/params.h"

/*
 * Inference: y = N(x) over `rows` rows of n->d values at row stride ld (y
 * may be x).  Row by row, so a row's bits never depend on its neighbours.
 */
void		cq_norm_forward(const cq_norm *n, const float *x, float *y, long rows, long ld);

/*
 * Training: y = N(x) over contiguous rows [rows, d], keeping the statistics
 * the backward needs in st (the kernels' own arithmetic: sums in double).
 */
void		cq_norm_forward_keep(const cq_norm *n, const float *x, float *y, long rows,
								 const cq_norm_stats *st);

/*
 * Backward of cq_norm_forward_keep over contiguous rows: dx += dL/dx given
 * dy; the gradients of n's tensors accumulate into g (a norm of the
 * gradient model, same kind).
 */
void		cq_norm_backward(const cq_norm *n, cq_norm *g, const float *x,
							 const cq_norm_stats *st, const float *dy, float *dx, long rows);

#endif
