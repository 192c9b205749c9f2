#include <math.h>

#include "nn/ops/ops.h"

void
cq_relu(float *x, long n)
{
	for (long i = 0; i < n; i++)
		x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void
cq_gelu_erf(float *x, long n)
{
	for (long i = 0; i < n; i++)
		x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

void
cq_swish(float *x, long n)
{
	for (long i = 0; i < n; i++)
		x[i] = x[i] / (1.0f + expf(-x[i]));
}

void
cq_activation_apply(cq_activation act, float *x, long n)
{
	if (act == CQ_ACT_GELU)
		cq_gelu_erf(x, n);
	else if (act == CQ_ACT_SWISH)
		cq_swish(x, n);
	else
		cq_relu(x, n);
}
