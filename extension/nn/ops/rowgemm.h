/*
 * Row-independent single-precision GEMM: the inference path's only matrix
 * product (linear layers through cq_linear_rows, attention, the output
 * projection).
 *
 * The contract, by construction: every output element
 *     c[r][j] = bias[j] + sum_k a[r][k] b[k][j]
 * is ONE chain of fused multiply-adds in the fixed order k = 0, 1, .., K-1,
 * starting from bias[j] (0 without a bias):
 *     acc = bias[j];  for k: acc = fma(a[r][k], b[k][j], acc);  c[r][j] = acc.
 * Vectors run across output columns j and the A element is broadcast, so no
 * lane ever holds a partial sum of another k; register blocking over rows and
 * columns and cache blocking over k (the partial acc is stored and reloaded
 * exactly) change only which elements are computed together, never the
 * arithmetic of one element.  Hence a row's result is the same bits whatever
 * other rows are in the call, how many, in which position or tile, with any
 * leading dimension, and whether B is prepacked, plain or transposed.
 *
 * The ISA variant (AVX-512F, AVX2+FMA, portable C) is chosen from cpuid
 * (common/cpu.h), a pure function of the machine.  AVX-512 and AVX2 give
 * identical bits (both round once per fused multiply-add); the portable
 * variant, used only on CPUs without FMA, rounds the product and the sum
 * separately.
 *
 * Error bound (each element, float32, u = 2^-24): |c - exact| <= K u sum_k |a b|
 * + O(u^2) -- the standard bound for a recursive sum of K products.
 */
#ifndef CQ_NN_ROWGEMM_H
#define CQ_NN_ROWGEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "common/cpu.h"

/* Output columns per packed panel (two AVX-512 vectors, four AVX2 ones). */
#define CQ_ROWGEMM_NB 32

typedef enum cq_rowgemm_isa
{
	CQ_ROWGEMM_PORTABLE,			/* plain C, multiply then add */
	CQ_ROWGEMM_AVX2,				/* AVX2 + FMA */
	CQ_ROWGEMM_AVX512				/* AVX-512F */
} cq_rowgemm_isa;

#define CQ_ROWGEMM_N_ISA 3

/* The variant for a feature set, this machine's, and its name ("avx512"). */
cq_rowgemm_isa cq_rowgemm_isa_for(cq_cpu_features f);
cq_rowgemm_isa cq_rowgemm_machine(void);
const char *cq_rowgemm_isa_name(cq_rowgemm_isa isa);

/*
 * Packing of W[n, k] (row-major, y = x W^T): panels of CQ_ROWGEMM_NB output
 * columns, each k-major (packed[p][kk][jj] = W[p NB + jj][kk]), the last one
 * padded with zero columns.
 */
size_t		cq_rowgemm_packed_floats(int n, int k);
void		cq_rowgemm_pack(const float *w, long ldw, int n, int k, float *packed);

/* W[j][kk] read back from its packed copy (the same bits). */
static inline float
cq_rowgemm_packed_at(const float *packed, int k, int j, int kk)
{
	return packed[((size_t) (j / CQ_ROWGEMM_NB) * k + kk) * CQ_ROWGEMM_NB + j % CQ_ROWGEMM_NB];
}

/*
 * y[rows, n] = x[rows, k] W^T + bias, W packed by cq_rowgemm_pack; bias [n]
 * or NULL (zero).  x and y must not overlap.
 */
void		cq_rowgemm_packed(const float *packed, int n, int k, const float *bias,
							  const float *x, long ldx, float *y, long ldy, int rows);

/* c[rows, n] = a[rows, k] B^T + bias, B [n, k] row-major (stride ldb), unpacked. */
void		cq_rowgemm_nt(const float *a, long lda, const float *b, long ldb,
						  const float *bias, float *c, long ldc, int rows, int n, int k);

/* c[rows, n] = a[rows, k] B + bias, B [k, n] row-major (stride ldb). */
void		cq_rowgemm_nn(const float *a, long lda, const float *b, long ldb,
						  const float *bias, float *c, long ldc, int rows, int n, int k);

/*
 * The same three with the variant named, for tests and benchmarks (the
 * variant must be one this CPU can execute).
 */
void		cq_rowgemm_packed_isa(cq_rowgemm_isa isa, const float *packed, int n, int k,
								  const float *bias, const float *x, long ldx,
								  float *y, long ldy, int rows);
void		cq_rowgemm_nt_isa(cq_rowgemm_isa isa, const float *a, long lda,
							  const float *b, long ldb, const float *bias,
							  float *c, long ldc, int rows, int n, int k);
void		cq_rowgemm_nn_isa(cq_rowgemm_isa isa, const float *a, long lda,
							  const float *b, long ldb, const float *bias,
							  float *c, long ldc, int rows, int n, int k);

#endif
