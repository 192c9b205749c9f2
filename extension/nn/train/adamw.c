#include "nn/train/adamw.h"

#include <math.h>

void
cq_adamw_update(const cq_adamw *o, int64_t t, double lr, float *p, const float *g,
				float *m, float *v, size_t n)
{
	double		bc1 = 1.0 - pow(o->beta1, (double) t),
				bc2 = 1.0 - pow(o->beta2, (double) t);
	float		decay = (float) (1.0 - lr * o->weight_decay),
				step = (float) (lr / bc1),
				inv_sqrt_bc2 = (float) (1.0 / sqrt(bc2)),
				b1 = o->beta1,
				b2 = o->beta2;

	for (size_t i = 0; i < n; i++)
	{
		float		gi = g[i];

		p[i] *= decay;
		m[i] = b1 * m[i] + (1.0f - b1) * gi;
		v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
		p[i] -= step * m[i] / (sqrtf(v[i]) * inv_sqrt_bc2 + o->eps);
	}
}
