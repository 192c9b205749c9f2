/*
 * The row sums of the norms' inference kernels: 16 independent lanes, so
 * that the loop vectorises without -ffast-math and a row's sum has the same
 * bits on every call.
 */
#ifndef CQ_NN_LANE_SUM_H
#define CQ_NN_LANE_SUM_H

#include <stdbool.h>
#include <string.h>

typedef float cq_v16f __attribute__((vector_size(64)));

/* sum of (x[i] - shift) over [0, n), or of its squares */
static inline float
cq_lane_sum(const float *x, int n, float shift, bool square)
{
	cq_v16f		acc = {0};
	float		tail = 0.0f;
	int			i = 0;

	for (; i + 16 <= n; i += 16)
	{
		cq_v16f		v;

		memcpy(&v, x + i, sizeof(v));
		v -= shift;
		acc += square ? v * v : v;
	}
	for (; i < n; i++)
		tail += square ? (x[i] - shift) * (x[i] - shift) : x[i] - shift;
	for (int j = 0; j < 16; j++)
		tail += acc[j];
	return tail;
}

#endif
