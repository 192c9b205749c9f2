/*
 * Layer normalisation kernels (the kind CQ_NORM_LAYER of ops/params.h) over
 * contiguous rows x[rows, n->d]:
 *   y = (x - mean) / sqrt(var + eps) * w + b, population variance.
 * Callers go through the norm object (nn/layers/norm.h), which picks the
 * kernels of a norm's kind.
 */
#ifndef CQ_NN_LAYER_NORM_H
#define CQ_NN_LAYER_NORM_H

#include "nn/ops/params.h"

/* Inference: float sums in 16 lanes, so that a row's loop vectorises. */
void		cq_layer_norm_forward(const cq_norm *n, const float *x, float *y, int rows);

/* Training: double sums, keeping each row's mean and rstd in st. */
void		cq_layer_norm_forward_keep(const cq_norm *n, const float *x, float *y, int rows,
									   const cq_norm_stats *st);

/*
 * dx[rows, d] += dL/dx given dy; g->w[d] += sum dy * xhat, g->b[d] += sum dy
 * (gradients accumulate).  With gy = dy w: dx = rstd (gy - mean(gy) - xhat
 * mean(gy xhat)).
 */
void		cq_layer_norm_backward(const cq_norm *n, cq_norm *g, const float *x,
								   const cq_norm_stats *st, const float *dy, float *dx,
								   int rows);

#endif
