/* Retrieval precision at 1 (retrieval.h), blocks of rows through BLAS. */
#include "nn/train/retrieval.h"

#include "nn/ops/blas.h"

long
cq_retrieval_scratch_floats(int n)
{
	return (long) (n < CQ_RETRIEVAL_BLOCK ? n : CQ_RETRIEVAL_BLOCK) * n;
}

long
cq_retrieval_hits(const float *x, const float *y, int n, int d, float *scratch, bool *hit)
{
	long		hits = 0;

	for (int r0 = 0; r0 < n; r0 += CQ_RETRIEVAL_BLOCK)
	{
		int			rows = n - r0 < CQ_RETRIEVAL_BLOCK ? n - r0 : CQ_RETRIEVAL_BLOCK;

		cq_sgemm(false, true, rows, n, d, 1.0f, x + (long) r0 * d, d, y, d, 0.0f, scratch, n);
		for (int r = 0; r < rows; r++)
		{
			const float *s = scratch + (long) r * n;
			int			i = r0 + r;
			bool		ok = true;

			for (int j = 0; j < n && ok; j++)
				ok = j == i || s[j] < s[i];
			hit[i] = ok;
			hits += ok;
		}
	}
	return hits;
}
