/* RMS normalisation: forward, forward keeping statistics, backward (norm_kernels.h). */
#include "nn/ops/norm_kernels.h"

#include <math.h>

#include "nn/ops/lane_sum.h"

/* Parameters in locals, as in layer_norm.c (no reloads under aliasing). */
void
cq_rms_norm_forward(const cq_norm *n, const float *x, float *y, int rows)
{
	const float *w = n->w;
	float		eps = n->eps;
	int			d = n->d;

	for (int r = 0; r < rows; r++)
	{
		const float *xr = x + (long) r * d;
		float	   *yr = y + (long) r * d;
		float		inv = 1.0f / sqrtf(cq_lane_sum(xr, d, 0.0f, true) / d + eps);

		for (int i = 0; i < d; i++)
			yr[i] = xr[i] * inv * w[i];
	}
}

void
cq_rms_norm_forward_keep(const cq_norm *n, const float *x, float *y, int rows,
						 const cq_norm_stats *st)
{
	const float *w = n->w;
	float	   *rstd = st->rstd;
	double		eps = n->eps;
	int			d = n->d;

	for (int r = 0; r < rows; r++)
	{
		const float *xr = x + (long) r * d;
		float	   *yr = y + (long) r * d;
		double		ss = 0.0;

		for (int i = 0; i < d; i++)
			ss += (double) xr[i] * xr[i];
		float		inv = (float) (1.0 / sqrt(ss / d + eps));

		rstd[r] = inv;
		for (int i = 0; i < d; i++)
			yr[i] = xr[i] * inv * w[i];
	}
}

void
cq_rms_norm_backward(const cq_norm *n, cq_norm *g, const float *x,
					 const cq_norm_stats *st, const float *dy, float *dx, int rows)
{
	const float *w = n->w;
	float	   *gw = g->w;
	int			d = n->d;

	for (int r = 0; r < rows; r++)
	{
		const float *xr = x + (long) r * d,
				   *dyr = dy + (long) r * d;
		float	   *dxr = dx + (long) r * d;
		float		inv = st->rstd[r],
					sgx = 0.0f;

		for (int i = 0; i < d; i++)
		{
			float		xh = xr[i] * inv;

			sgx += dyr[i] * w[i] * xh;
			gw[i] += dyr[i] * xh;
		}
		sgx /= d;
		for (int i = 0; i < d; i++)
			dxr[i] += inv * (dyr[i] * w[i] - xr[i] * inv * sgx);
	}
}
