/*
 * The AVX2 dropout mask kernel (dropout_kernel.h): Philox4x32-10 on sixteen
 * blocks in 32-bit lanes (two sets of eight, so that one set's multiplies
 * run while the other's wait), then the blocks' words back in element order
 * and the portable kernel's comparison, lane by lane.
 *
 * Philox needs the 64-bit product of two 32-bit words.  vpmuludq takes the
 * even lanes; the odd ones are shifted down for a second vpmuludq, and the
 * high and low halves are blended back into 32-bit lanes.  (A multiply of
 * 64-bit GCC vector lanes by a constant compiles to shifts and adds, about
 * three times the instructions.)
 */
#include "nn/ops/dropout_kernel.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))
#define INLINE inline __attribute__((always_inline))

/* hi and lo words of a * m, per 32-bit lane. */
AVX2 static INLINE void
mulhilo(__m256i a, __m256i m, __m256i *hi, __m256i *lo)
{
	__m256i		even = _mm256_mul_epu32(a, m),
				odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);

	*hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
	*lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

/* One Philox round on one set of eight blocks, c[word]. */
AVX2 static INLINE void
round8(__m256i c[4], __m256i k0, __m256i k1)
{
	const __m256i m0 = _mm256_set1_epi32((int) 0xD2511F53u),
				m2 = _mm256_set1_epi32((int) 0xCD9E8D57u);
	__m256i		hi0,
				lo0,
				hi2,
				lo2;

	mulhilo(c[0], m0, &hi0, &lo0);
	mulhilo(c[2], m2, &hi2, &lo2);
	c[0] = _mm256_xor_si256(_mm256_xor_si256(hi2, c[1]), k0);
	c[1] = lo2;
	c[2] = _mm256_xor_si256(_mm256_xor_si256(hi0, c[3]), k1);
	c[3] = lo0;
}

/*
 * Words w = 0..3 of blocks b..b+7 (c[w], lane = block) to element order:
 * out[i] holds elements 8i .. 8i+7, i.e. words 0..3 of blocks b+2i, b+2i+1.
 */
AVX2 static INLINE void
to_elements(const __m256i c[4], __m256i out[4])
{
	/* per 128-bit half (blocks 0-3 and 4-7 of the set) a 4 x 4 transpose */
	__m256i		t0 = _mm256_unpacklo_epi32(c[0], c[1]),	/* b0w0 b0w1 b1w0 b1w1 */
				t1 = _mm256_unpackhi_epi32(c[0], c[1]),	/* b2w0 b2w1 b3w0 b3w1 */
				t2 = _mm256_unpacklo_epi32(c[2], c[3]),	/* b0w2 b0w3 b1w2 b1w3 */
				t3 = _mm256_unpackhi_epi32(c[2], c[3]);	/* b2w2 b2w3 b3w2 b3w3 */
	__m256i		b01 = _mm256_unpacklo_epi64(t0, t2),	/* block 0, block 1 (| 4, 5) */
				b23 = _mm256_unpackhi_epi64(t0, t2),
				b45 = _mm256_unpacklo_epi64(t1, t3),
				b67 = _mm256_unpackhi_epi64(t1, t3);

	/* b01 = block 0 | block 4, b23 = block 1 | block 5, ... */
	out[0] = _mm256_permute2x128_si256(b01, b23, 0x20);	/* blocks 0, 1 */
	out[1] = _mm256_permute2x128_si256(b45, b67, 0x20);	/* blocks 2, 3 */
	out[2] = _mm256_permute2x128_si256(b01, b23, 0x31);	/* blocks 4, 5 */
	out[3] = _mm256_permute2x128_si256(b45, b67, 0x31);	/* blocks 6, 7 */
}

/*
 * x[0..k) = (float) (u >> 8) / 2^24 < p ? 0 : x * scale, as the portable
 * kernel; k < 8 loads and stores only the first k lanes.
 */
AVX2 static INLINE void
apply8(float *x, int k, __m256i u, __m256 p, __m256 scale)
{
	__m256		unit = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(u, 8)),
									 _mm256_set1_ps(1.0f / 16777216.0f)),
				drop = _mm256_cmp_ps(unit, p, _CMP_LT_OQ);

	if (k >= 8)
		_mm256_storeu_ps(x, _mm256_andnot_ps(drop, _mm256_mul_ps(_mm256_loadu_ps(x), scale)));
	else if (k > 0)
	{
		__m256i		m = _mm256_cmpgt_epi32(_mm256_set1_epi32(k),
										   _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));

		_mm256_maskstore_ps(x, m, _mm256_andnot_ps(drop, _mm256_mul_ps(_mm256_maskload_ps(x, m), scale)));
	}
}

AVX2 int
cq_dropout_avx2(const cq_dropout_job *d, float *x, int n)
{
	const __m256 p = _mm256_set1_ps(d->p),
				scale = _mm256_set1_ps(d->scale);
	const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	int			j0;

	for (j0 = 0; j0 < n; j0 += 64)
	{
		__m256i		a[4],
					b[4],
					k0 = _mm256_set1_epi32((int) d->key.k[0]),
					k1 = _mm256_set1_epi32((int) d->key.k[1]);
		__m256i		e[4];
		int			m = n - j0;

		a[0] = _mm256_add_epi32(lanes, _mm256_set1_epi32(j0 >> 2));
		b[0] = _mm256_add_epi32(a[0], _mm256_set1_epi32(8));
		a[1] = b[1] = _mm256_set1_epi32((int) d->row);
		a[2] = b[2] = _mm256_set1_epi32((int) d->site);
		a[3] = b[3] = _mm256_set1_epi32((int) d->pass);
		for (int r = 0; r < 10; r++)
		{
			round8(a, k0, k1);
			if (m > 32)
				round8(b, k0, k1);
			k0 = _mm256_add_epi32(k0, _mm256_set1_epi32((int) 0x9E3779B9u));
			k1 = _mm256_add_epi32(k1, _mm256_set1_epi32((int) 0xBB67AE85u));
		}
		to_elements(a, e);
		for (int i = 0; i < 4; i++)
			apply8(x + j0 + 8 * i, m - 8 * i, e[i], p, scale);
		if (m <= 32)
			break;
		to_elements(b, e);
		for (int i = 0; i < 4; i++)
			apply8(x + j0 + 32 + 8 * i, m - 32 - 8 * i, e[i], p, scale);
	}
	return n;
}
#else
int
cq_dropout_avx2(const cq_dropout_job *d, float *x, int n)
{
	return 0;
}
#endif
