#include <math.h>

#include "nn/ops.h"

void
cq_layer_norm_rows(const float *x, float *y, int rows, int d,
				   const float *w, const float *b, float eps)
{
	for (int r = 0; r < rows; r++)
	{
		const float *xr = x + (long) r * d;
		float	   *yr = y + (long) r * d;
		float		mean = 0.0f,
					var = 0.0f,
					inv;

		for (int i = 0; i < d; i++)
			mean += xr[i];
		mean /= d;
		for (int i = 0; i < d; i++)
			var += (xr[i] - mean) * (xr[i] - mean);
		inv = 1.0f / sqrtf(var / d + eps);
		for (int i = 0; i < d; i++)
			yr[i] = (xr[i] - mean) * inv * w[i] + b[i];
	}
}
