/*
 * The norm kernels of every kind of ops/params.h (cq_norm_kind), over
 * contiguous rows x[rows, n->d]: for each kind a forward for inference, a
 * forward keeping the row statistics for training, and the backward, with
 * the same signatures, which the norm object (nn/layers/norm.h) picks by a
 * norm's kind.  Callers go through that object.
 */
#ifndef CQ_NN_NORM_KERNELS_H
#define CQ_NN_NORM_KERNELS_H

#include "nn/ops/params.h"

/*
 * Layer normalisation (CQ_NORM_LAYER, layer_norm.c):
 *   y = (x - mean) / sqrt(var + eps) * w + b, population variance.
 */

/* Inference: float sums in 16 lanes (ops/lane_sum.h). */
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

/*
 * RMS normalisation (CQ_NORM_RMS, rms_norm.c; Zhang and Sennrich 2019,
 * Marian's rmsNorm):
 *   y = x / sqrt(mean(x^2) + eps) * w, no centring and no bias.
 */

/* Inference: the sum of squares in 16 float lanes. */
void		cq_rms_norm_forward(const cq_norm *n, const float *x, float *y, int rows);

/* Training: the sum in double, keeping each row's rstd in st (st->mean unused). */
void		cq_rms_norm_forward_keep(const cq_norm *n, const float *x, float *y, int rows,
									 const cq_norm_stats *st);

/*
 * dx[rows, d] += dL/dx given dy; g->w[d] += sum dy * xhat (accumulated).
 * With xhat = x rstd and gy = dy w: dx = rstd (gy - xhat mean(gy xhat)).
 */
void		cq_rms_norm_backward(const cq_norm *n, cq_norm *g, const float *x,
								 const cq_norm_stats *st, const float *dy, float *dx,
								 int rows);

#endif
