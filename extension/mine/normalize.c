/*
 * L2 normalisation of the vectors to mine (mine.h): cosine similarity is then
 * a dot product.  The norm is summed in double in the order of the
 * components, so a vector's unit copy does not depend on anything else.
 */
#include "mine/mine.h"

#include <math.h>

cq_code
cq_mine_normalize(float *v, size_t n, int d, size_t *bad, cq_error *err)
{
	if (d < 1)
		return cq_fail(err, CQ_EINVAL, "vectors have dimension %d", d);
	for (size_t i = 0; i < n; i++)
	{
		float	   *row = v + i * (size_t) d;
		double		sq = 0;
		double		norm;

		for (int c = 0; c < d; c++)
		{
			if (!isfinite(row[c]))
			{
				if (bad)
					*bad = i;
				return cq_fail(err, CQ_EINVAL, "component %d is %g, not a finite number",
							   c + 1, (double) row[c]);
			}
			sq += (double) row[c] * row[c];
		}
		if (sq == 0)
		{
			if (bad)
				*bad = i;
			return cq_fail(err, CQ_EINVAL, "all its components are zero: it has no direction");
		}
		norm = sqrt(sq);
		for (int c = 0; c < d; c++)
			row[c] = (float) (row[c] / norm);
	}
	return CQ_OK;
}
