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
