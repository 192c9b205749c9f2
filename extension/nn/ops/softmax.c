#include <math.h>
#include <string.h>

#include "nn/ops/ops.h"

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
cq_logit_row_stats(const float *l, int n, int gold)
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
