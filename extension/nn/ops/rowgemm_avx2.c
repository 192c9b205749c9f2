/*
 * The AVX2+FMA tile (rowgemm_block.h): up to 6 rows x 16 columns in 12 of the
 * 16 ymm registers, run once per 16-column half of the block.  Column tails
 * are masked loads and stores.
 */
#include "nn/ops/rowgemm.h"
#include "nn/ops/rowgemm_block.h"

#include <stdbool.h>

#if defined(__x86_64__)
#include <immintrin.h>

#define MR CQ_ROWGEMM_MR_AVX2
#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static inline __m256i
lanes_below(int n)
{
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/*
 * Columns col .. col+15 of the block (nb - col of them valid, at least 1).
 * full: all 16 valid, so plain loads and stores (a masked load costs more
 * than a plain one on several AVX2 cores, and B is read once per k).
 */
AVX2 static inline __attribute__((always_inline)) void
half(const cq_rowgemm_block *t, const int mr, int col, const bool full)
{
	__m256i		m0 = lanes_below(t->nb - col),
				m1 = lanes_below(t->nb - col - 8);
	long		lda = t->lda;
	const float *a = t->a,
			   *b = t->b + col;
	__m256		acc[MR][2];

#pragma GCC unroll 6
	for (int r = 0; r < mr; r++)
	{
		const float *from = t->cont ? t->c + r * t->ldc + col : t->bias ? t->bias + col : NULL;

		acc[r][0] = !from ? _mm256_setzero_ps() : full ? _mm256_loadu_ps(from) : _mm256_maskload_ps(from, m0);
		acc[r][1] = !from ? _mm256_setzero_ps() : full ? _mm256_loadu_ps(from + 8) : _mm256_maskload_ps(from + 8, m1);
	}
	for (int k = 0; k < t->kc; k++, b += t->ldb)
	{
		__m256		b0 = full ? _mm256_loadu_ps(b) : _mm256_maskload_ps(b, m0),
					b1 = full ? _mm256_loadu_ps(b + 8) : _mm256_maskload_ps(b + 8, m1);

		_mm_prefetch((const char *) (b + CQ_ROWGEMM_PREFETCH * t->ldb), _MM_HINT_T0);

#pragma GCC unroll 6
		for (int r = 0; r < mr; r++)
		{
			__m256		x = _mm256_broadcast_ss(a + r * lda + k);

			acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
			acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
		}
	}
#pragma GCC unroll 6
	for (int r = 0; r < mr; r++)
	{
		if (full)
		{
			_mm256_storeu_ps(t->c + r * t->ldc + col, acc[r][0]);
			_mm256_storeu_ps(t->c + r * t->ldc + col + 8, acc[r][1]);
		}
		else
		{
			_mm256_maskstore_ps(t->c + r * t->ldc + col, m0, acc[r][0]);
			_mm256_maskstore_ps(t->c + r * t->ldc + col + 8, m1, acc[r][1]);
		}
	}
}

AVX2 static inline __attribute__((always_inline)) void
tile(const cq_rowgemm_block *t, const int mr)
{
	for (int col = 0; col < t->nb; col += 16)
	{
		if (t->nb - col >= 16)
			half(t, mr, col, true);
		else
			half(t, mr, col, false);
	}
}

AVX2 void
cq_rowgemm_block_avx2(const cq_rowgemm_block *t)
{
	switch (t->mr)
	{
#define CASE(n) case n: tile(t, n); break;
			CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6)
#undef CASE
	}
}
#else
void
cq_rowgemm_block_avx2(const cq_rowgemm_block *t)
{
	cq_rowgemm_block_portable(t);
}
#endif
