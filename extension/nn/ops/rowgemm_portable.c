/*
 * The portable tile (rowgemm_block.h), for CPUs without FMA: each step rounds
 * the product and then the sum.  The core is built with -ffp-contract=off, so
 * the compiler does not fuse them on some elements and not on others.
 */
#include "nn/ops/rowgemm.h"
#include "nn/ops/rowgemm_block.h"

void
cq_rowgemm_block_portable(const cq_rowgemm_block *t)
{
	float		acc[CQ_ROWGEMM_MR_PORTABLE][CQ_ROWGEMM_NB];

	for (int r = 0; r < t->mr; r++)
		for (int j = 0; j < t->nb; j++)
			acc[r][j] = t->cont ? t->c[r * t->ldc + j] : t->bias ? t->bias[j] : 0.0f;
	for (int k = 0; k < t->kc; k++)
	{
		const float *b = t->b + k * t->ldb;

		for (int r = 0; r < t->mr; r++)
		{
			float		x = t->a[r * t->lda + k];

			for (int j = 0; j < t->nb; j++)
				acc[r][j] = acc[r][j] + x * b[j];
		}
	}
	for (int r = 0; r < t->mr; r++)
		for (int j = 0; j < t->nb; j++)
			t->c[r * t->ldc + j] = acc[r][j];
}
