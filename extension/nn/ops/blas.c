#include "nn/ops/blas.h"

#include <stddef.h>

#include "common/interrupt.h"

static cq_sgemm_fn bound = NULL;

cq_sgemm_fn
cq_blas_bind(cq_sgemm_fn fn)
{
	cq_sgemm_fn prev = bound;

	bound = fn;
	return prev;
}

bool
cq_blas_bound(void)
{
	return bound != NULL;
}

void
cq_sgemm_reference(bool trans_a, bool trans_b, int m, int n, int k,
				   float alpha, const float *a, int lda,
				   const float *b, int ldb,
				   float beta, float *c, int ldc)
{
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++)
		{
			double		acc = 0.0;

			for (int p = 0; p < k; p++)
			{
				float		av = trans_a ? a[(size_t) p * lda + i] : a[(size_t) i * lda + p];
				float		bv = trans_b ? b[(size_t) j * ldb + p] : b[(size_t) p * ldb + j];

				acc += (double) av * bv;
			}
			c[(size_t) i * ldc + j] = (float) (alpha * acc +
											   (beta == 0.0f ? 0.0 : (double) beta * c[(size_t) i * ldc + j]));
		}
}

void
cq_sgemm(bool trans_a, bool trans_b, int m, int n, int k,
		 float alpha, const float *a, int lda,
		 const float *b, int ldb,
		 float beta, float *c, int ldc)
{
	/* a cancel point before each product, never inside the library's threads */
	cq_poll();
	(bound ? bound : cq_sgemm_reference) (trans_a, trans_b, m, n, k, alpha,
										  a, lda, b, ldb, beta, c, ldc);
}
