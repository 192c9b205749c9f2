/*
 * The AVX512-VNNI int8 tile (qgemm_tile.h): up to MR rows x 16 columns, one
 * zmm of int32 per row; per quad of k, one weight vector and one broadcast
 * quad of each row's biased activations into vpdpbusd (exact, qgemm.h),
 * then comp subtracted and the epilogue of cq_qgemm_out, masked to nb.
 */
#include "nn/ops/qgemm.h"
#include "nn/ops/qgemm_tile.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

#define MR CQ_QGEMM_MR_AVX512VNNI
#define AVX512VNNI __attribute__((target("avx512f,avx512vnni")))

AVX512VNNI static inline __attribute__((always_inline)) void
tile(const cq_qgemm_tile *t, const int mr)
{
	__mmask16	m = t->nb >= 16 ? 0xffff : (__mmask16) ((1u << t->nb) - 1);
	__m512i		acc[MR];
	const int8_t *w = t->w;

#pragma GCC unroll 8
	for (int r = 0; r < mr; r++)
		acc[r] = _mm512_setzero_si512();
	for (int g = 0; g < t->kg; g++, w += CQ_QGEMM_NB * CQ_QGEMM_KG)
	{
		__m512i		wv = _mm512_loadu_si512(w);

#pragma GCC unroll 8
		for (int r = 0; r < mr; r++)
		{
			int32_t		v;

			memcpy(&v, t->xq + r * t->ldxq + g * CQ_QGEMM_KG, sizeof(v));
			acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_set1_epi32(v), wv);
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < mr; r++)
	{
		__m512i		c = _mm512_sub_epi32(acc[r], _mm512_loadu_si512(t->comp));
		__m512		s = _mm512_mul_ps(_mm512_set1_ps(t->xs[r]), _mm512_loadu_ps(t->ws)),
					b = t->bias ? _mm512_maskz_loadu_ps(m, t->bias) : _mm512_setzero_ps();

		_mm512_mask_storeu_ps(t->y + r * t->ldy, m, _mm512_fmadd_ps(_mm512_cvtepi32_ps(c), s, b));
	}
}

AVX512VNNI void
cq_qgemm_tile_avx512vnni(const cq_qgemm_tile *t)
{
	switch (t->mr)
	{
#define CASE(n) case n: tile(t, n); break;
			CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7) CASE(8)
#undef CASE
	}
}
#else
void
cq_qgemm_tile_avx512vnni(const cq_qgemm_tile *t)
{
	cq_qgemm_tile_portable(t);
}
#endif
