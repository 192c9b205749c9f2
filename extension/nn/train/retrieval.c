/* Retrieval precision at 1 (retrieval.h), blocks of rows through BLAS. */
#include "nn/train/retrieval.h"

#include <stddef.h>

#include "nn/ops/blas.h"

long
cq_retrieval_scratch_floats(int n)
{
	return (long) (n < CQ_RETRIEVAL_BLOCK ? n : CQ_RETRIEVAL_BLOCK) * n;
}

long
cq_retrieval_hits(const float *x, const float *y, int n, int d, float *scratch, bool *hit)
{
	return cq_retrieval_figures(x, y, n, d, scratch, hit, NULL, NULL);
}

/* Row r of a block: source i's hit, its positive and its mean negative. */
static bool
row_figures(const float *s, int i, int n, double *pos, double *neg)
{
	bool		ok = true;
	double		sum = 0;

	for (int j = 0; j < n; j++)
	{
		ok = ok && (j == i || s[j] < s[i]);
		if (j != i)
			sum += s[j];
	}
	if (pos)
		pos[i] = s[i];
	if (neg)
		neg[i] = n > 1 ? sum / (n - 1) : 0;
	return ok;
}

long
cq_retrieval_figures(const float *x, const float *y, int n, int d, float *scratch,
					 bool *hit, double *pos, double *neg)
{
	long		hits = 0;

	for (int r0 = 0; r0 < n; r0 += CQ_RETRIEVAL_BLOCK)
	{
		int			rows = n - r0 < CQ_RETRIEVAL_BLOCK ? n - r0 : CQ_RETRIEVAL_BLOCK;

		cq_sgemm(false, true, rows, n, d, 1.0f, x + (long) r0 * d, d, y, d, 0.0f, scratch, n);
		for (int r = 0; r < rows; r++)
		{
			int			i = r0 + r;

			hit[i] = row_figures(scratch + (long) r * n, i, n, pos, neg);
			hits += hit[i];
		}
	}
	return hits;
}
