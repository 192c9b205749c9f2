/*
 * The AVX2 and AVX-VNNI int8 tiles (qgemm_tile.h): up to MR rows x 16
 * columns, two ymm accumulators of int32 per row; per quad of k, two weight
 * vectors (8 columns x 4 bytes each) and one broadcast quad of each row's
 * activations.  Four rows for the AVX2 tiles: 8 accumulators, the weights
 * (and for 8-bit codes their magnitudes), the ones and a quad fill 14 of
 * the 16 ymm registers without a spill.  The products are exact
 * (qgemm.h); the epilogue is the one formula of cq_qgemm_out, lane by lane.  Three tiles: AVX2 with 8-bit
 * weights (the sign trick, four instructions per 32 products), AVX2 with
 * 7-bit weights (biased activations, three), AVX-VNNI (one).
 */
#include "nn/ops/qgemm.h"
#include "nn/ops/qgemm_tile.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))
#define AVXVNNI __attribute__((target("avx2,fma,avxvnni")))
#define INLINE inline __attribute__((always_inline))
#define GROUP (CQ_QGEMM_NB * CQ_QGEMM_KG)

/* Row r's activation quad g, in every int32 lane. */
AVX2 static INLINE __m256i
quad(const cq_qgemm_tile *t, int r, int g)
{
	int32_t		v;

	memcpy(&v, t->xq + r * t->ldxq + g * CQ_QGEMM_KG, sizeof(v));
	return _mm256_set1_epi32(v);
}

AVX2 static INLINE __m256i
lanes_below(int n)
{
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/*
 * y[r][8h ..] = fma((float) acc, xs[r] * ws, bias or 0), masked to nb.  A
 * full panel (all but the last of a layer) takes plain loads and stores:
 * AMD's masked ymm stores are slow enough to cost about a tenth of the
 * tile at k = 256 (perf, AVX2-only EPYC).  The arithmetic is the same.
 */
AVX2 static INLINE void
epilogue(const cq_qgemm_tile *t, int r, int h, __m256i acc)
{
	__m256		s = _mm256_mul_ps(_mm256_set1_ps(t->xs[r]), _mm256_loadu_ps(t->ws + 8 * h));

	if (t->nb == CQ_QGEMM_NB)
	{
		__m256		b = t->bias ? _mm256_loadu_ps(t->bias + 8 * h) : _mm256_setzero_ps();

		_mm256_storeu_ps(t->y + r * t->ldy + 8 * h,
						 _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), s, b));
	}
	else
	{
		__m256i		m = lanes_below(t->nb - 8 * h);
		__m256		b = t->bias ? _mm256_maskload_ps(t->bias + 8 * h, m) : _mm256_setzero_ps();

		_mm256_maskstore_ps(t->y + r * t->ldy + 8 * h, m,
							_mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), s, b));
	}
}

/*
 * acc += v, the sum written into acc's own register.  With the intrinsic,
 * GCC 12 adds into the product's register and copies it back to the
 * accumulator, one vmovdqa per accumulator and quad (6 of the 38
 * instructions of a 3-row quad; the loop is bound by instruction
 * throughput, not by the multiplies).  The same vpaddd, so the same sum.
 */
AVX2 static INLINE __m256i
add_into(__m256i acc, __m256i v)
{
	__asm__("vpaddd %1, %0, %0" : "+x"(acc) : "x"(v));
	return acc;
}

/*
 * acc += xq . w per lane, exactly: |w| <= 127 as unsigned bytes times xq
 * with w's sign (|.| <= 127), so vpmaddubsw's int16 pair sums stay within
 * 2 * 127^2 and never saturate; vpmaddwd by ones widens them to int32.
 * (|w| is shared by the tile's rows, the activation quad by its columns.)
 */
AVX2 static INLINE __m256i
dot_sign(__m256i acc, __m256i a, __m256i abs_w, __m256i w)
{
	__m256i		pairs = _mm256_maddubs_epi16(abs_w, _mm256_sign_epi8(a, w));

	return add_into(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

#define MR CQ_QGEMM_MR_AVX2

AVX2 static INLINE void
tile_avx2(const cq_qgemm_tile *t, const int mr)
{
	__m256i		acc[MR][2];
	const int8_t *w = t->w;

#pragma GCC unroll 4
	for (int r = 0; r < mr; r++)
		acc[r][0] = acc[r][1] = _mm256_setzero_si256();
	for (int g = 0; g < t->kg; g++, w += GROUP)
	{
		__m256i		w0 = _mm256_loadu_si256((const __m256i *) w),
					w1 = _mm256_loadu_si256((const __m256i *) (w + 32)),
					abs_w0 = _mm256_abs_epi8(w0),
					abs_w1 = _mm256_abs_epi8(w1);

#pragma GCC unroll 4
		for (int r = 0; r < mr; r++)
		{
			__m256i		a = quad(t, r, g);

			acc[r][0] = dot_sign(acc[r][0], a, abs_w0, w0);
			acc[r][1] = dot_sign(acc[r][1], a, abs_w1, w1);
		}
	}
#pragma GCC unroll 4
	for (int r = 0; r < mr; r++)
	{
		epilogue(t, r, 0, acc[r][0]);
		epilogue(t, r, 1, acc[r][1]);
	}
}

AVX2 void
cq_qgemm_tile_avx2(const cq_qgemm_tile *t)
{
	switch (t->mr)
	{
#define CASE(n) case n: tile_avx2(t, n); break;
			CASE(1) CASE(2) CASE(3) CASE(4)
#undef CASE
	}
}

#undef MR
#define MR CQ_QGEMM_MR_AVX2_U8

/*
 * acc += (xq + 128) . w per lane, exactly: the biased activations (1 .. 255)
 * are vpmaddubsw's unsigned operand and the 7-bit weights (|w| <= 63) its
 * signed one, so each int16 pair sum is at most 2 * 255 * 63 = 32130 and
 * never saturates; vpmaddwd by ones widens the pairs to int32 exactly.
 */
AVX2 static INLINE __m256i
dot_biased(__m256i acc, __m256i a, __m256i w, __m256i ones)
{
	return add_into(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, w), ones));
}

AVX2 static INLINE void
tile_avx2_u8(const cq_qgemm_tile *t, const int mr)
{
	__m256i		acc[MR][2];
	const int8_t *w = t->w;
	const __m256i ones = _mm256_set1_epi16(1);
	__m256i		c0 = _mm256_loadu_si256((const __m256i *) t->comp),
				c1 = _mm256_loadu_si256((const __m256i *) (t->comp + 8));

#pragma GCC unroll 4
	for (int r = 0; r < mr; r++)
		acc[r][0] = acc[r][1] = _mm256_setzero_si256();
	for (int g = 0; g < t->kg; g++, w += GROUP)
	{
		__m256i		w0 = _mm256_loadu_si256((const __m256i *) w),
					w1 = _mm256_loadu_si256((const __m256i *) (w + 32));

#pragma GCC unroll 4
		for (int r = 0; r < mr; r++)
		{
			__m256i		a = quad(t, r, g);

			acc[r][0] = dot_biased(acc[r][0], a, w0, ones);
			acc[r][1] = dot_biased(acc[r][1], a, w1, ones);
		}
	}
#pragma GCC unroll 4
	for (int r = 0; r < mr; r++)
	{
		epilogue(t, r, 0, _mm256_sub_epi32(acc[r][0], c0));
		epilogue(t, r, 1, _mm256_sub_epi32(acc[r][1], c1));
	}
}

AVX2 void
cq_qgemm_tile_avx2_u8(const cq_qgemm_tile *t)
{
	switch (t->mr)
	{
#define CASE(n) case n: tile_avx2_u8(t, n); break;
			CASE(1) CASE(2) CASE(3) CASE(4)
#undef CASE
	}
}

#undef MR
#define MR CQ_QGEMM_MR_AVXVNNI

/* vpdpbusd: biased activations (uint8) times weights, exact in int32. */
AVXVNNI static INLINE void
tile_avxvnni(const cq_qgemm_tile *t, const int mr)
{
	__m256i		acc[MR][2];
	const int8_t *w = t->w;
	__m256i		c0 = _mm256_loadu_si256((const __m256i *) t->comp),
				c1 = _mm256_loadu_si256((const __m256i *) (t->comp + 8));

#pragma GCC unroll 6
	for (int r = 0; r < mr; r++)
		acc[r][0] = acc[r][1] = _mm256_setzero_si256();
	for (int g = 0; g < t->kg; g++, w += GROUP)
	{
		__m256i		w0 = _mm256_loadu_si256((const __m256i *) w),
					w1 = _mm256_loadu_si256((const __m256i *) (w + 32));

#pragma GCC unroll 6
		for (int r = 0; r < mr; r++)
		{
			__m256i		a = quad(t, r, g);

			acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], a, w0);
			acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], a, w1);
		}
	}
#pragma GCC unroll 6
	for (int r = 0; r < mr; r++)
	{
		epilogue(t, r, 0, _mm256_sub_epi32(acc[r][0], c0));
		epilogue(t, r, 1, _mm256_sub_epi32(acc[r][1], c1));
	}
}

AVXVNNI void
cq_qgemm_tile_avxvnni(const cq_qgemm_tile *t)
{
	switch (t->mr)
	{
#define CASE(n) case n: tile_avxvnni(t, n); break;
			CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6)
#undef CASE
	}
}

/*
 * cq_qgemm_quantize_vec_bits (qgemm.c) on 8 lanes, the same bits: the max
 * of |v| (vmaxps(a, m) is a > m ? a : m, so NaN never wins, as there; a max
 * is the same in any order), the same scale, then per element the same
 * division, round half even (vroundps to nearest, rintf in the default
 * mode), clamp by compares (a NaN stays NaN past them, as there) and NaN
 * to 0.  The quantization was 5% of an int8 batch-64 forward on an
 * AVX2-only EPYC (perf).
 */
AVX2 float
cq_qgemm_quantize_avx2(const float *v, int k, float qmax, int8_t *q)
{
	const __m256 sign = _mm256_set1_ps(-0.0f);
	__m256		vmax = _mm256_setzero_ps();
	float		lane[8],
				m = 0.0f,
				scale;
	int			i = 0;

	for (; i + 8 <= k; i += 8)
		vmax = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(v + i)), vmax);
	_mm256_storeu_ps(lane, vmax);
	for (; i < k; i++)
		lane[0] = fabsf(v[i]) > lane[0] ? fabsf(v[i]) : lane[0];
	for (i = 0; i < 8; i++)
		m = lane[i] > m ? lane[i] : m;
	scale = m / qmax;
	if (!(scale > 0.0f))
	{
		memset(q, 0, k);
		return scale;
	}
	{
		const __m256 s = _mm256_set1_ps(scale),
					hi = _mm256_set1_ps(qmax),
					lo = _mm256_set1_ps(-qmax);

		for (i = 0; i + 8 <= k; i += 8)
		{
			__m256		c = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(v + i), s),
											_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
			__m256i		n;
			__m128i		w;

			c = _mm256_blendv_ps(c, hi, _mm256_cmp_ps(c, hi, _CMP_GT_OQ));
			c = _mm256_blendv_ps(c, lo, _mm256_cmp_ps(c, lo, _CMP_LT_OQ));
			c = _mm256_and_ps(c, _mm256_cmp_ps(c, c, _CMP_EQ_OQ));
			n = _mm256_cvtps_epi32(c);
			w = _mm_packs_epi32(_mm256_castsi256_si128(n), _mm256_extracti128_si256(n, 1));
			_mm_storel_epi64((__m128i *) (q + i), _mm_packs_epi16(w, w));
		}
	}
	for (; i < k; i++)
	{
		float		c = rintf(v[i] / scale);

		c = c > qmax ? qmax : c < -qmax ? -qmax : c;
		q[i] = c == c ? (int8_t) c : 0;
	}
	return scale;
}

#else
void
cq_qgemm_tile_avx2(const cq_qgemm_tile *t)
{
	cq_qgemm_tile_portable(t);
}

void
cq_qgemm_tile_avx2_u8(const cq_qgemm_tile *t)
{
	cq_qgemm_tile_portable(t);
}

void
cq_qgemm_tile_avxvnni(const cq_qgemm_tile *t)
{
	cq_qgemm_tile_portable(t);
}

float
cq_qgemm_quantize_avx2(const float *v, int k, float qmax, int8_t *q)
{
	(void) v, (void) k, (void) qmax, (void) q;
	return NAN;					/* never called: AVX2 is x86-64 only */
}
#endif
