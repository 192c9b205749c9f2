/*
 * Single-precision GEMM for training, dispatched through a pointer.
 * (Inference multiplies with nn/ops/rowgemm.h instead, whose results do not
 * depend on the batch or on OpenBLAS's kernels.)
 *
 * OpenBLAS starts its thread pool from a library constructor, so linking it
 * into corpq.so would start threads in the postmaster when corpq is in
 * shared_preload_libraries.  The core therefore calls cq_sgemm(), and the host
 * binds it: the extension dlopen()s OpenBLAS lazily in a backend or worker
 * (extension/pg/base/blas_loader.c), the unit tests bind cblas_sgemm directly.
 *
 * Row-major: C[M x N] = alpha * op(A)[M x K] * op(B)[K x N] + beta * C.
 */
#ifndef CQ_BLAS_H
#define CQ_BLAS_H

#include <stdbool.h>

typedef void (*cq_sgemm_fn) (bool trans_a, bool trans_b, int m, int n, int k,
							 float alpha, const float *a, int lda,
							 const float *b, int ldb,
							 float beta, float *c, int ldc);

/* Bind the implementation; returns the previous one. */
cq_sgemm_fn cq_blas_bind(cq_sgemm_fn fn);
bool		cq_blas_bound(void);

/* Calls the bound implementation, or a slow portable loop when none is bound. */
void		cq_sgemm(bool trans_a, bool trans_b, int m, int n, int k,
					 float alpha, const float *a, int lda,
					 const float *b, int ldb,
					 float beta, float *c, int ldc);

/* The portable reference loop, exported for tests. */
void		cq_sgemm_reference(bool trans_a, bool trans_b, int m, int n, int k,
							   float alpha, const float *a, int lda,
							   const float *b, int ldb,
							   float beta, float *c, int ldc);

#endif
