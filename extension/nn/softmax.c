#include <math.h>

#include "nn/ops.h"

void
cq_softmax_rows(float *x, int rows, int cols, int ld, bool causal)
{
	for (int r = 0; r < rows; r++)
	{
		float	   *xr = x + (long) r * ld;
		int			n = causal && r + 1 < cols ? r + 1 : cols;
		float		m = -INFINITY,
					sum = 0.0f,
					inv;

		for (int i = 0; i < n; i++)
			m = xr[i] > m ? xr[i] : m;
		for (int i = 0; i < n; i++)
		{
			xr[i] = cq_fast_expf(xr[i] - m);
			sum += xr[i];
		}
		inv = 1.0f / sum;
		for (int i = 0; i < n; i++)
			xr[i] *= inv;
		for (int i = n; i < cols; i++)
			xr[i] = 0.0f;
	}
}

/*
 * With m = max, z_v = l_v - m, Z = sum exp(z_v):
 *   log p(gold) = z_gold - ln Z,  p_max = 1 / Z,
 *   H = -sum p_v (z_v - ln Z) = ln Z - sum exp(z_v) z_v / Z.
 * One pass for the max, one for both sums.  LANES independent partial
 * results let the compiler vectorise without reassociating a reduction.
 */
#define LANES 16

cq_row_stats
cq_logit_row_stats(const float *l, int n, int gold)
{
	float		mx[LANES],
				az[LANES] = {0},
				as[LANES] = {0};
	float		m = l[0];
	double		z = 0.0,
				zs = 0.0;
	int			i = 0,
				arg = 0;
	float		lnz;
	cq_row_stats s;

	for (int j = 0; j < LANES; j++)
		mx[j] = l[0];
	for (; i + LANES <= n; i += LANES)
		for (int j = 0; j < LANES; j++)
			mx[j] = l[i + j] > mx[j] ? l[i + j] : mx[j];
	for (; i < n; i++)
		m = l[i] > m ? l[i] : m;
	for (int j = 0; j < LANES; j++)
		m = mx[j] > m ? mx[j] : m;
	while (arg < n - 1 && l[arg] != m)
		arg++;
	for (i = 0; i + LANES <= n; i += LANES)
		for (int j = 0; j < LANES; j++)
		{
			float		d = l[i + j] - m,
						e = cq_fast_expf(d);

			az[j] += e;
			as[j] += e * d;
		}
	for (; i < n; i++)
	{
		float		d = l[i] - m,
					e = cq_fast_expf(d);

		z += e;
		zs += (double) e * d;
	}
	for (int j = 0; j < LANES; j++)
	{
		z += az[j];
		zs += as[j];
	}
	lnz = (float) log(z);
	s.logp_gold = (l[gold] - m) - lnz;
	s.p_max = (float) (1.0 / z);
	s.entropy = (float) (log(z) - zs / z);
	s.argmax = arg;
	return s;
}
