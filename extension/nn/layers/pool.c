/* An encoder model's sentence vectors (pool.h). */
#include "nn/layers/pool.h"

#include <math.h>
#include <string.h>

#include "nn/ops/backward_ops.h"
#include "nn/ops/ops.h"

/* p[n, d]: each sentence's mean row (summed in double) or first row. */
static void
pool_rows(const cq_model *m, const cq_pair *s, int n, const float *h, float *p)
{
	int			d = m->cfg.d_model;
	long		row = 0;

	for (int i = 0; i < n; i++)
	{
		int			len = cq_side_positions(&s[i], false);
		const float *x = h + row * d;

		if (m->cfg.pooling == CQ_POOL_CLS)
			memcpy(p + (long) i * d, x, sizeof(float) * d);
		else
			for (int j = 0; j < d; j++)
			{
				double		sum = 0.0;

				for (int t = 0; t < len; t++)
					sum += x[(long) t * d + j];
				p[(long) i * d + j] = (float) (sum / len);
			}
		row += len;
	}
}

/* e = z / max(||z||, eps) row by row (e may be z); the divisors into norm if kept. */
static void
normalize_rows(const float *z, float *e, int n, int d, float *norm)
{
	for (int i = 0; i < n; i++)
	{
		const float *zi = z + (long) i * d;
		double		sq = 0.0;
		float		div;

		for (int j = 0; j < d; j++)
			sq += (double) zi[j] * zi[j];
		div = (float) fmax(sqrt(sq), CQ_L2_EPS);
		for (int j = 0; j < d; j++)
			e[(long) i * d + j] = zi[j] / div;
		if (norm)
			norm[i] = div;
	}
}

void
cq_pool_forward(const cq_model *m, const cq_pair *s, int n, const float *h, float *tmp,
				float *e, const cq_pool_keep *keep)
{
	int			d = m->cfg.d_model;
	float	   *p = keep ? keep->p : tmp;
	float	   *z = p;

	pool_rows(m, s, n, h, p);
	if (m->cfg.pooler)
	{
		z = keep ? keep->z : e;
		cq_linear_rows(&m->pooler, p, d, z, d, n);
		for (long k = 0; k < (long) n * d; k++)
			z[k] = tanhf(z[k]);
	}
	normalize_rows(z, e, n, d, keep ? keep->norm : NULL);
}

void
cq_pool_backward(const cq_model *m, cq_model *g, const cq_pair *s, int n, const float *e,
				 const cq_pool_keep *keep, float *de, float *tmp, float *dh)
{
	int			d = m->cfg.d_model;
	const float *dp = de;
	long		row = 0;

	/* through the normalisation: dz = (de - e (e . de)) / ||z||, or de / eps when clamped */
	for (int i = 0; i < n; i++)
	{
		float	   *dei = de + (long) i * d;
		const float *ei = e + (long) i * d;
		double		dot = 0.0;
		bool		clamped = keep->norm[i] <= (float) CQ_L2_EPS;

		for (int j = 0; j < d; j++)
			dot += (double) ei[j] * dei[j];
		for (int j = 0; j < d; j++)
			dei[j] = (clamped ? dei[j] : (float) (dei[j] - ei[j] * dot)) / keep->norm[i];
	}
	/* through tanh and the pooler's dense layer */
	if (m->cfg.pooler)
	{
		for (long k = 0; k < (long) n * d; k++)
			de[k] *= 1.0f - keep->z[k] * keep->z[k];
		cq_linear_backward(&m->pooler, &g->pooler, keep->p, d, de, d, tmp, d, 0.0f, n);
		dp = tmp;
	}
	/* through the pooling: each position gets 1/len of it, or the first all */
	for (int i = 0; i < n; i++)
	{
		int			len = cq_side_positions(&s[i], false);
		bool		cls = m->cfg.pooling == CQ_POOL_CLS;

		memset(dh + row * d, 0, sizeof(float) * d * len);
		for (int t = 0; t < (cls ? 1 : len); t++)
			for (int j = 0; j < d; j++)
				dh[(row + t) * d + j] = cls ? dp[(long) i * d + j] : dp[(long) i * d + j] / len;
		row += len;
	}
}
