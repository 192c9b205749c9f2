#include <math.h>
#include <string.h>

#include "common/cpu.h"
#include "nn/ops/ops.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

void
cq_softmax_rows(float *x, int rows, int cols, int ld, bool causal)
{
	for (int r = 0; r < rows; r++)
	{
		float	   *xr = x + (long) r * ld;
		int			n = causal && r + 1 < cols ? r + 1 : cols;
		float		m = -INFINITY,
					sum = 0.0f,
					inv;

		for (int i = 0; i < n; i++)
			m = xr[i] > m ? xr[i] : m;
		/* element-wise (vectorises), then the sum in index order */
		for (int i = 0; i < n; i++)
			xr[i] = cq_fast_expf(xr[i] - m);
		for (int i = 0; i < n; i++)
			sum += xr[i];
		inv = 1.0f / sum;
		for (int i = 0; i < n; i++)
			xr[i] *= inv;
		for (int i = n; i < cols; i++)
			xr[i] = 0.0f;
	}
}

/* 16 floats with GCC's generic vectors (lowered to whatever the target has). */
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

/*
 * GCC warns that a 64-byte vector returned from a function has another ABI
 * with and without AVX-512. exp_v16 is static and always inlined, so no
 * such vector crosses a call and the warning does not apply.
 */
#pragma GCC diagnostic ignored "-Wpsabi"

/* cq_fast_expf on 16 lanes at once; the same polynomial and clamp. */
static inline __attribute__((always_inline)) v16f
exp_v16(v16f x)
{
	const v16f lo = (v16f) {0} - 87.0f;
	const v16f magic = (v16f) {0} + 12582912.0f;	/* 1.5 * 2^23: rounds */
	v16i		below = x < lo;
	v16f		n,
				r,
				p;
	v16i		e;

	x = (v16f) (((v16i) x & ~below) | ((v16i) lo & below));
	n = (x * 1.44269504088896341f + magic) - magic;	/* nearest integer */
	r = x - n * 0.693359375f;
	r = r + n * 2.12194440e-4f;
	p = r * 1.9875691500e-4f + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * r * r + r + 1.0f;
	e = (__builtin_convertvector(n, v16i) + 127) << 23;
	return p * (v16f) e;
}

/*
 * With m = max, z_v = l_v - m, Z = sum exp(z_v):
 *   log p(gold) = z_gold - ln Z,  p_max = 1 / Z,
 *   H = -sum p_v (z_v - ln Z) = ln Z - sum exp(z_v) z_v / Z.
 * One pass for the max, one for both sums, 16 lanes of partial sums.
 */
/* The largest of l[0..n), 16 lanes at a time. */
static float
row_max(const float *l, int n)
{
	v16f		vmax;
	float		m = l[0];
	int			i = 0;

	for (int j = 0; j < 16; j++)
		vmax[j] = l[0];
	for (; i + 16 <= n; i += 16)
	{
		v16f		v;
		v16i		gt;

		memcpy(&v, l + i, sizeof(v));
		gt = v > vmax;
		vmax = (v16f) (((v16i) v & gt) | ((v16i) vmax & ~gt));
	}
	for (; i < n; i++)
		m = l[i] > m ? l[i] : m;
	for (int j = 0; j < 16; j++)
		m = vmax[j] > m ? vmax[j] : m;
	return m;
}

cq_row_stats
cq_logit_row_stats_generic(const float *l, int n, int gold)
{
	v16f		vz = {0},
				vs = {0};
	float		m = row_max(l, n);
	double		z = 0.0,
				zs = 0.0;
	int			i,
				arg = 0;
	cq_row_stats s;

	while (arg < n - 1 && l[arg] != m)
		arg++;
	for (i = 0; i + 16 <= n; i += 16)
	{
		v16f		d,
					e;

		memcpy(&d, l + i, sizeof(d));
		d = d - m;
		e = exp_v16(d);
		vz += e;
		vs += e * d;
	}
	for (; i < n; i++)
	{
		float		d = l[i] - m,
					e = cq_fast_expf(d);

		z += e;
		zs += (double) e * d;
	}
	for (int j = 0; j < 16; j++)
	{
		z += vz[j];
		zs += vs[j];
	}
	s.logp_gold = (float) ((l[gold] - m) - log(z));
	s.p_max = (float) (1.0 / z);
	s.entropy = (float) (log(z) - zs / z);
	s.argmax = arg;
	return s;
}

#if defined(__x86_64__)
/*
 * cq_logit_row_stats_generic with AVX2 intrinsics, bit for bit (the unit
 * test logit_row_stats_avx2_has_the_generic_bits checks it): its 16 lanes
 * are two ymm, lanes 0-7 and 8-15; every lane sees the same operations in
 * the same order (exp_v16's multiplies and adds, no fused multiply-add: the
 * target has no FMA); the tail and the lanes are reduced as there.  GCC
 * lowers the generic 16-lane vectors to spills and reloads of their halves
 * and the argmax is a scalar search: the row statistics were 11-13% of an
 * int8 batch-64 forward on an AVX2-only EPYC (perf).  Here the argmax, the
 * first index holding the max (n - 1 if none, as for a NaN max), is found
 * eight compares at a time.
 */
#define AVX2 __attribute__((target("avx2")))

AVX2 static inline __attribute__((always_inline)) __m256
exp8(__m256 x)
{
	const __m256 lo = _mm256_set1_ps(-87.0f),
				magic = _mm256_set1_ps(12582912.0f);
	__m256		n,
				r,
				p;
	__m256i		e;

	x = _mm256_blendv_ps(x, lo, _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
	n = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), magic),
					  magic);
	r = _mm256_sub_ps(x, _mm256_mul_ps(n, _mm256_set1_ps(0.693359375f)));
	r = _mm256_add_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(2.12194440e-4f)));
	p = _mm256_add_ps(_mm256_mul_ps(r, _mm256_set1_ps(1.9875691500e-4f)),
					  _mm256_set1_ps(1.3981999507e-3f));
	p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(8.3334519073e-3f));
	p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(4.1665795894e-2f));
	p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.6666665459e-1f));
	p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(5.0000001201e-1f));
	p = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(p, r), r), r),
					  _mm256_set1_ps(1.0f));
	e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

AVX2 static cq_row_stats
row_stats_avx2(const float *l, int n, int gold)
{
	/* vmaxps(v, m) is v > m ? v : m, the generic select */
	__m256		mx0 = _mm256_set1_ps(l[0]),
				mx1 = mx0,
				z0 = _mm256_setzero_ps(),
				z1 = z0,
				s0 = z0,
				s1 = z0,
				vm;
	float		m = l[0],
				lane[32];
	double		z = 0.0,
				zs = 0.0;
	int			i,
				arg = -1;
	cq_row_stats st;

	for (i = 0; i + 16 <= n; i += 16)
	{
		mx0 = _mm256_max_ps(_mm256_loadu_ps(l + i), mx0);
		mx1 = _mm256_max_ps(_mm256_loadu_ps(l + i + 8), mx1);
	}
	for (; i < n; i++)
		m = l[i] > m ? l[i] : m;
	_mm256_storeu_ps(lane, mx0);
	_mm256_storeu_ps(lane + 8, mx1);
	for (int j = 0; j < 16; j++)
		m = lane[j] > m ? lane[j] : m;

	vm = _mm256_set1_ps(m);
	for (i = 0; i + 8 <= n - 1 && arg < 0; i += 8)
	{
		int			eq = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(l + i), vm, _CMP_EQ_OQ));

		if (eq)
			arg = i + __builtin_ctz((unsigned) eq);
	}
	for (; i < n - 1 && arg < 0; i++)
		if (l[i] == m)
			arg = i;
	if (arg < 0)
		arg = n - 1;

	for (i = 0; i + 16 <= n; i += 16)
	{
		__m256		d0 = _mm256_sub_ps(_mm256_loadu_ps(l + i), vm),
					d1 = _mm256_sub_ps(_mm256_loadu_ps(l + i + 8), vm),
					e0 = exp8(d0),
					e1 = exp8(d1);

		z0 = _mm256_add_ps(z0, e0);
		z1 = _mm256_add_ps(z1, e1);
		s0 = _mm256_add_ps(s0, _mm256_mul_ps(e0, d0));
		s1 = _mm256_add_ps(s1, _mm256_mul_ps(e1, d1));
	}
	for (; i < n; i++)
	{
		float		d = l[i] - m,
					e = cq_fast_expf(d);

		z += e;
		zs += (double) e * d;
	}
	_mm256_storeu_ps(lane, z0);
	_mm256_storeu_ps(lane + 8, z1);
	_mm256_storeu_ps(lane + 16, s0);
	_mm256_storeu_ps(lane + 24, s1);
	for (int j = 0; j < 16; j++)
	{
		z += lane[j];
		zs += lane[16 + j];
	}
	st.logp_gold = (float) ((l[gold] - m) - log(z));
	st.p_max = (float) (1.0 / z);
	st.entropy = (float) (log(z) - zs / z);
	st.argmax = arg;
	return st;
}
#undef AVX2
#endif

bool
cq_logit_row_stats_avx2_runs(void)
{
#if defined(__x86_64__)
	return (cq_cpu_detect() & CQ_CPU_BIT(CQ_CPU_AVX2)) != 0;
#else
	return false;
#endif
}

cq_row_stats
cq_logit_row_stats_avx2(const float *l, int n, int gold)
{
#if defined(__x86_64__)
	return row_stats_avx2(l, n, gold);
#else
	return cq_logit_row_stats_generic(l, n, gold);
#endif
}

/*
 * A build for AVX-512 (-march=native on such a CPU) runs the generic code,
 * whose 16 lanes are then one zmm; the AVX2 variant is for the others.
 */
cq_row_stats
cq_logit_row_stats(const float *l, int n, int gold)
{
#if defined(__AVX512F__)
	return cq_logit_row_stats_generic(l, n, gold);
#else
	static int	avx2 = -1;

	if (avx2 < 0)
		avx2 = cq_logit_row_stats_avx2_runs();
	return avx2 ? cq_logit_row_stats_avx2(l, n, gold) : cq_logit_row_stats_generic(l, n, gold);
#endif
}

/*
 * The same Z as cq_logit_row_stats (the same lanes, tail and order), so that
 * out[gold] has the bits of its logp_gold.
 */
void
cq_log_softmax_row(const float *l, int n, float *out)
{
	v16f		vz = {0};
	float		m = row_max(l, n);
	double		z = 0.0,
				log_z;
	int			i;

	for (i = 0; i + 16 <= n; i += 16)
	{
		v16f		d;

		memcpy(&d, l + i, sizeof(d));
		d = d - m;
		vz += exp_v16(d);
	}
	for (; i < n; i++)
		z += cq_fast_expf(l[i] - m);
	for (int j = 0; j < 16; j++)
		z += vz[j];
	log_z = log(z);
	for (i = 0; i < n; i++)
		out[i] = (float) ((l[i] - m) - log_z);
}
