#include "nn/ops/loss.h"

#include <math.h>

#include "nn/ops/ops.h"

double
cq_ls_xent_row(float *l, int v, int gold, float eps, double *nll)
{
	float		m = l[0];
	double		z = 0.0,
				sum_l = 0.0,
				lse;
	float		gold_l = l[gold],
				off = eps / v;

	for (int i = 1; i < v; i++)
		m = l[i] > m ? l[i] : m;
	/* 8 float lanes keep the loop vectorisable; doubles close the sums */
	float		zl[8] = {0},
				sl[8] = {0};
	int			i = 0;

	for (; i + 8 <= v; i += 8)
		for (int k = 0; k < 8; k++)
		{
			float		e = cq_fast_expf(l[i + k] - m);

			zl[k] += e;
			sl[k] += l[i + k];
			l[i + k] = e;
		}
	for (; i < v; i++)
	{
		float		e = cq_fast_expf(l[i] - m);

		z += e;
		sum_l += l[i];
		l[i] = e;
	}
	for (int k = 0; k < 8; k++)
	{
		z += zl[k];
		sum_l += sl[k];
	}
	lse = m + log(z);
	*nll = lse - gold_l;
	float		inv = (float) (1.0 / z);

	for (int j = 0; j < v; j++)
		l[j] = l[j] * inv - off;
	l[gold] -= 1.0f - eps;
	return (1.0 - eps) * *nll + eps * (lse - sum_l / v);
}
