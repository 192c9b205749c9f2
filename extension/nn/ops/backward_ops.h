/*
 * Backward kernels of the training pass.  Like ops.h they take caller-owned
 * buffers and allocate nothing; gradients of parameters are ACCUMULATED
 * (+=), so tied or shared tensors and several micro-batches add up.
 */
#ifndef CQ_NN_BACKWARD_OPS_H
#define CQ_NN_BACKWARD_OPS_H

#include <stdbool.h>

#include "nn/ops/params.h"
#include "nn/ops/ops.h"

/*
 * y = x W^T + b backward: G->w [out, in] += dy^T x, G->b += column sums of dy,
 * dx = dy W (dx_beta 0: overwrite, 1: add; dx NULL: skip).
 */
void		cq_linear_backward(const cq_linear *W, cq_linear *G, const float *x, int ldx,
							   const float *dy, int ldy, float *dx, int lddx,
							   float dx_beta, long rows);

/* du[n] *= act'(u[n]) (ReLU: u > 0; GELU: Phi(u) + u phi(u)). */
void		cq_relu_backward(const float *u, float *du, long n);
void		cq_gelu_erf_backward(const float *u, float *du, long n);
void		cq_swish_backward(const float *u, float *du, long n);	/* s (1 + u (1 - s)) */

/* du[n] *= act'(u[n]) for the model's activation: the backward's one switch. */
void		cq_activation_backward(cq_activation act, const float *u, float *du, long n);

/*
 * Softmax backward of rows of probabilities p[rows, cols] (rows of a causal
 * block have zeros past the diagonal): ds = scale * p (dp - sum_j dp_j p_j),
 * written over dp.
 */
void		cq_softmax_backward_rows(const float *p, float *dp, int rows, int cols,
									 float scale);

#endif
