#include "nn/model/positions.h"

#include <math.h>

/* Row p of the table into row (add: added to it). */
static void
sinusoid_row(float *row, int p, int d, int offset, bool half, bool add)
{
	int			h = d / 2;
	double		step = half ? log(10000.0) / h : (h > 1 ? log(10000.0) / (h - 1) : 0.0);

	for (int i = 0; i < h; i++)
	{
		double		angle = (double) (p + offset) * exp(-i * step);
		float		s = (float) sin(angle),
					c = (float) cos(angle);

		if (add)
		{
			row[i] += s;
			row[h + i] += c;
		}
		else
		{
			row[i] = s;
			row[h + i] = c;
		}
	}
}

void
cq_sinusoid_table(float *table, int n_positions, int d, int offset, bool half)
{
	for (int p = 0; p < n_positions; p++)
		sinusoid_row(table + (long) p * d, p, d, offset, half, false);
}

void
cq_sinusoid_add(float *x, int p, int d, int offset, bool half)
{
	sinusoid_row(x, p, d, offset, half, true);
}
