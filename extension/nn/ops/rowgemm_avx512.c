/*
 * The AVX-512F tile (rowgemm_block.h): up to 12 rows x 32 columns in 24
 * accumulators; per k, two vectors of b and one broadcast element of each
 * row's a.  Column tails are masked loads and stores, so b and c are never
 * touched beyond nb columns.
 */
#include "nn/ops/rowgemm.h"
#include "nn/ops/rowgemm_block.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define MR CQ_ROWGEMM_MR_AVX512
#define AVX512 __attribute__((target("avx512f")))

/* Inlined with mr constant, so acc[][] lives in registers. */
AVX512 static inline __attribute__((always_inline)) void
tile(const cq_rowgemm_block *t, const int mr)
{
	__mmask16	m0 = t->nb >= 16 ? 0xffff : (__mmask16) ((1u << t->nb) - 1),
				m1 = t->nb >= 32 ? 0xffff : t->nb > 16 ? (__mmask16) ((1u << (t->nb - 16)) - 1) : 0;
	long		lda = t->lda;
	const float *a = t->a,
			   *b = t->b;
	__m512		acc[MR][2];

#pragma GCC unroll 12
	for (int r = 0; r < mr; r++)
	{
		const float *from = t->cont ? t->c + r * t->ldc : t->bias;

		acc[r][0] = from ? _mm512_maskz_loadu_ps(m0, from) : _mm512_setzero_ps();
		acc[r][1] = from ? _mm512_maskz_loadu_ps(m1, from + 16) : _mm512_setzero_ps();
	}
	for (int k = 0; k < t->kc; k++, b += t->ldb)
	{
		__m512		b0 = _mm512_maskz_loadu_ps(m0, b),
					b1 = _mm512_maskz_loadu_ps(m1, b + 16);

		/* B from L2 or beyond: the first tile of a panel would wait on it */
		_mm_prefetch((const char *) (b + CQ_ROWGEMM_PREFETCH * t->ldb), _MM_HINT_T0);
		_mm_prefetch((const char *) (b + CQ_ROWGEMM_PREFETCH * t->ldb + 16), _MM_HINT_T0);

#pragma GCC unroll 12
		for (int r = 0; r < mr; r++)
		{
			__m512		x = _mm512_set1_ps(a[r * lda + k]);

			acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
			acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
		}
	}
#pragma GCC unroll 12
	for (int r = 0; r < mr; r++)
	{
		_mm512_mask_storeu_ps(t->c + r * t->ldc, m0, acc[r][0]);
		_mm512_mask_storeu_ps(t->c + r * t->ldc + 16, m1, acc[r][1]);
	}
}

AVX512 void
cq_rowgemm_block_avx512(const cq_rowgemm_block *t)
{
	switch (t->mr)
	{
#define CASE(n) case n: tile(t, n); break;
			CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6)
			CASE(7) CASE(8) CASE(9) CASE(10) CASE(11) CASE(12)
#undef CASE
	}
}
#else
void
cq_rowgemm_block_avx512(const cq_rowgemm_block *t)
{
	cq_rowgemm_block_portable(t);
}
#endif
