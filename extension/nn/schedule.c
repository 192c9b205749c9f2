#include "nn/schedule.h"

#include <math.h>

double
cq_inverse_sqrt_lr(double peak, double init, int64_t warmup, int64_t u)
{
	if (u < warmup)
		return init + (peak - init) * (double) u / (double) warmup;
	if (warmup <= 0)
		return peak / sqrt((double) (u > 1 ? u : 1));
	return peak * sqrt((double) warmup / (double) u);
}
