#include "nn/ops/loss.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "nn/ops/ops.h"

/*
 * exp_v8 passes a vector by value but is always inlined, so no call crosses
 * an ABI boundary: GCC's note that 32-byte vectors pass differently without
 * AVX (-Wpsabi, raised in the portable package build) does not apply here.
 */
#pragma GCC diagnostic ignored "-Wpsabi"

/* 8 floats in GCC's generic vectors (lowered to whatever the target has). */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

/*
 * cq_fast_expf on 8 lanes, operation for operation, so every lane has the
 * scalar function's bits: the same clamp (NaN taken as -87), floor as
 * truncation corrected downwards (exact for |y| < 2^31, and y is within
 * [-126, 128]), the same polynomial in the same order, and a NaN input
 * returned as NaN.  (GCC left the scalar loop unvectorised: 5.6 ns per
 * logit, the largest single-threaded cost of a training step after dropout.)
 */
static inline __attribute__((always_inline)) v8f
exp_v8(v8f x)
{
	const v8f	lo = (v8f) {0} - 87.0f,
				hi = (v8f) {0} + 88.0f;
	v8f			in = x,
				y,
				t,
				n,
				r,
				p;
	v8i			keep = x >= lo,
				e;

	x = (v8f) ((keep & (v8i) x) | (~keep & (v8i) lo));
	keep = x <= hi;
	x = (v8f) ((keep & (v8i) x) | (~keep & (v8i) hi));
	y = x * 1.44269504088896341f + 0.5f;
	t = __builtin_convertvector(__builtin_convertvector(y, v8i), v8f);
	n = (v8f) (((v8i) t & ~(t > y)) | ((v8i) (t - 1.0f) & (t > y)));
	r = x - n * 0.693359375f;
	r = r + n * 2.12194440e-4f;
	p = (v8f) {0} + 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * r * r + r + 1.0f;
	e = (__builtin_convertvector(n, v8i) + 127) << 23;
	p = p * (v8f) e;
	keep = in == in;
	return (v8f) ((keep & (v8i) p) | (~keep & (v8i) in));
}

/*
 * max(l[0..v)) as the scalar loop m = l[i] > m ? l[i] : m from m = l[0]
 * finds it: the same value (a NaN only when l[0] is one), 8 lanes at a time.
 */
static float
row_max(const float *l, int v)
{
	v8f			vm = (v8f) {0} + l[0];
	float		m = l[0];
	int			i = 0;

	for (; i + 8 <= v; i += 8)
	{
		v8f			x;
		v8i			gt;

		memcpy(&x, l + i, sizeof(x));
		gt = x > vm;
		vm = (v8f) ((gt & (v8i) x) | (~gt & (v8i) vm));
	}
	for (; i < v; i++)
		m = l[i] > m ? l[i] : m;
	for (int k = 0; k < 8; k++)
		m = vm[k] > m ? vm[k] : m;
	return m;
}

double
cq_ls_xent_row(float *l, int v, int gold, float eps, double *nll)
{
	float		m = row_max(l, v),
				gold_l = l[gold],
				off = eps / v,
				inv;
	double		z = 0.0,
				sum_l = 0.0,
				lse;
	v8f			vz = {0},
				vs = {0};
	int			i = 0;

	/* lane k sums the entries i + k in order; doubles close the sums */
	for (; i + 8 <= v; i += 8)
	{
		v8f			x,
					e;

		memcpy(&x, l + i, sizeof(x));
		e = exp_v8(x - m);
		vz += e;
		vs += x;
		memcpy(l + i, &e, sizeof(e));
	}
	for (; i < v; i++)
	{
		float		e = cq_fast_expf(l[i] - m);

		z += e;
		sum_l += l[i];
		l[i] = e;
	}
	for (int k = 0; k < 8; k++)
	{
		z += vz[k];
		sum_l += vs[k];
	}
	lse = m + log(z);
	*nll = lse - gold_l;
	inv = (float) (1.0 / z);
	for (i = 0; i + 8 <= v; i += 8)
	{
		v8f			x;

		memcpy(&x, l + i, sizeof(x));
		x = x * inv - off;
		memcpy(l + i, &x, sizeof(x));
	}
	for (; i < v; i++)
		l[i] = l[i] * inv - off;
	l[gold] -= 1.0f - eps;
	return (1.0 - eps) * *nll + eps * (lse - sum_l / v);
}
