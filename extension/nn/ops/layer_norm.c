/* Layer normalisation: forward, forward keeping statistics, backward (norm_kernels.h). */
#include "nn/ops/norm_kernels.h"

#include <math.h>

#include "nn/ops/lane_sum.h"

/*
 * The kernels copy the parameters into locals: the core builds with
 * -fno-strict-aliasing, so a store to y could otherwise alias n's pointers
 * and force a reload in every iteration (no vectorisation).
 */
void
cq_layer_norm_forward(const cq_norm *n, const float *x, float *y, int rows)
{
	const float *w = n->w,
			   *b = n->b;
	float		eps = n->eps;
	int			d = n->d;

	for (int r = 0; r < rows; r++)
	{
		const float *xr = x + (long) r * d;
		float	   *yr = y + (long) r * d;
		float		mean = cq_lane_sum(xr, d, 0.0f, false) / d;
		float		inv = 1.0f / sqrtf(cq_lane_sum(xr, d, mean, true) / d + eps);

		for (int i = 0; i < d; i++)
			yr[i] = (xr[i] - mean) * inv * w[i] + b[i];
	}
}

void
cq_layer_norm_forward_keep(const cq_norm *n, const float *x, float *y, int rows,
						   const cq_norm_stats *st)
{
	const float *w = n->w,
			   *b = n->b;
	float	   *mean = st->mean,
			   *rstd = st->rstd;
	double		eps = n->eps;
	int			d = n->d;

	for (int r = 0; r < rows; r++)
	{
		const float *xr = x + (long) r * d;
		float	   *yr = y + (long) r * d;
		double		s = 0.0,
					ss = 0.0;

		for (int i = 0; i < d; i++)
			s += xr[i];
		float		mu = (float) (s / d);

		for (int i = 0; i < d; i++)
			ss += (double) (xr[i] - mu) * (xr[i] - mu);
		float		inv = (float) (1.0 / sqrt(ss / d + eps));

		mean[r] = mu;
		rstd[r] = inv;
		for (int i = 0; i < d; i++)
			yr[i] = (xr[i] - mu) * inv * w[i] + b[i];
	}
}

void
cq_layer_norm_backward(const cq_norm *n, cq_norm *g, const float *x,
					   const cq_norm_stats *st, const float *dy, float *dx, int rows)
{
	const float *w = n->w;
	float	   *gw = g->w,
			   *gb = g->b;
	int			d = n->d;

	for (int r = 0; r < rows; r++)
	{
		const float *xr = x + (long) r * d,
				   *dyr = dy + (long) r * d;
		float	   *dxr = dx + (long) r * d;
		float		mu = st->mean[r],
					inv = st->rstd[r],
					sg = 0.0f,
					sgx = 0.0f;

		for (int i = 0; i < d; i++)
		{
			float		xh = (xr[i] - mu) * inv,
						gy = dyr[i] * w[i];

			sg += gy;
			sgx += gy * xh;
			gw[i] += dyr[i] * xh;
			gb[i] += dyr[i];
		}
		sg /= d;
		sgx /= d;
		for (int i = 0; i < d; i++)
		{
			float		xh = (xr[i] - mu) * inv;

			dxr[i] += inv * (dyr[i] * w[i] - sg - xh * sgx);
		}
	}
}
