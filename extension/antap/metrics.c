/* MSE, MAE, RMSE and R^2 of predictions (paper 002, Sec. 4.1). */
#include <math.h>

#include "antap/train.h"

void
cq_antap_metrics_of(const float *pred, const float *y, const int32_t *idx, long n,
					cq_antap_metrics *out)
{
	double		sum = 0,
				sse = 0,
				sae = 0,
				sst = 0,
				mean;

	out->n = n;
	for (long k = 0; k < n; k++)
		sum += y[idx ? idx[k] : k];
	mean = n > 0 ? sum / n : NAN;
	for (long k = 0; k < n; k++)
	{
		long		i = idx ? idx[k] : k;
		double		e = (double) pred[i] - y[i],
					d = (double) y[i] - mean;

		sse += e * e;
		sae += fabs(e);
		sst += d * d;
	}
	out->mse = n > 0 ? sse / n : NAN;
	out->mae = n > 0 ? sae / n : NAN;
	out->rmse = sqrt(out->mse);
	out->r2 = sst > 0 ? 1.0 - sse / sst : NAN;
}
