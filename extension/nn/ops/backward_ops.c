/* Row-wise backward kernels (backward_ops.h). */
#include "nn/ops/backward_ops.h"

#include <math.h>

#include "nn/ops/blas.h"

void
cq_linear_backward(const cq_linear *W, cq_linear *G, const float *x, int ldx,
				   const float *dy, int ldy, float *dx, int lddx,
				   float dx_beta, long rows)
{
	cq_sgemm(true, false, W->out, W->in, (int) rows, 1.0f, dy, ldy, x, ldx,
			 1.0f, G->w, W->in);
	for (long r = 0; r < rows; r++)
	{
		const float *dr = dy + r * ldy;

		for (int j = 0; j < W->out; j++)
			G->b[j] += dr[j];
	}
	if (dx)
		cq_sgemm(false, false, (int) rows, W->in, W->out, 1.0f, dy, ldy, W->w,
				 W->in, dx_beta, dx, lddx);
}

void
cq_relu_backward(const float *u, float *du, long n)
{
	for (long i = 0; i < n; i++)
		du[i] = u[i] > 0.0f ? du[i] : 0.0f;
}

void
cq_activation_backward(cq_activation act, const float *u, float *du, long n)
{
	if (act == CQ_ACT_GELU)
		cq_gelu_erf_backward(u, du, n);
	else if (act == CQ_ACT_SWISH)
		cq_swish_backward(u, du, n);
	else
		cq_relu_backward(u, du, n);
}

void
cq_swish_backward(const float *u, float *du, long n)
{
	for (long i = 0; i < n; i++)
	{
		float		s = 1.0f / (1.0f + expf(-u[i]));

		du[i] *= s * (1.0f + u[i] * (1.0f - s));
	}
}

void
cq_gelu_erf_backward(const float *u, float *du, long n)
{
	for (long i = 0; i < n; i++)
	{
		float		x = u[i],
					cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f)),
					pdf = 0.39894228040143268f * expf(-0.5f * x * x);

		du[i] *= cdf + x * pdf;
	}
}

void
cq_softmax_backward_rows(const float *p, float *dp, int rows, int cols, float scale)
{
	for (int r = 0; r < rows; r++)
	{
		const float *pr = p + (long) r * cols;
		float	   *dr = dp + (long) r * cols;
		float		dot = 0.0f;

		for (int j = 0; j < cols; j++)
			dot += pr[j] * dr[j];
		for (int j = 0; j < cols; j++)
			dr[j] = scale * pr[j] * (dr[j] - dot);
	}
}
