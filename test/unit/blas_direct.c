/* Unit tests bind the core's GEMM straight to OpenBLAS (one thread). */
#include "nn/ops/blas.h"

#include <cblas.h>

static void
openblas_sgemm(bool ta, bool tb, int m, int n, int k, float alpha,
			   const float *a, int lda, const float *b, int ldb,
			   float beta, float *c, int ldc)
{
	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
				tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
				beta, c, ldc);
}

__attribute__((constructor)) static void
bind_openblas(void)
{
	openblas_set_num_threads(1);
	cq_blas_bind(openblas_sgemm);
}
