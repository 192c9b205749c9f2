#include "nn/model/positions.h"

#include <math.h>

void
cq_sinusoid_table(float *table, int n_positions, int d, int offset, bool half)
{
	int			h = d / 2;
	double		step = half ? log(10000.0) / h : (h > 1 ? log(10000.0) / (h - 1) : 0.0);

	for (int p = 0; p < n_positions; p++)
		for (int i = 0; i < h; i++)
		{
			double		angle = (double) (p + offset) * exp(-i * step);

			table[(long) p * d + i] = (float) sin(angle);
			table[(long) p * d + h + i] = (float) cos(angle);
		}
}
