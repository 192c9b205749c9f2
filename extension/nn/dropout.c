/*
 * Monte Carlo dropout masks from a counter-based generator.
 *
 * The Philox key is (seed, the pair's own key) and the counter is (element,
 * row, site, pass): a mask depends on nothing but the sentence pair, the
 * sentence-local coordinates and the pass, never on the pair's place in a
 * batch, so a pair scored alone or in any batch, in any process, sees the
 * same masks.
 */
#include "common/rng.h"
#include "nn/ops.h"

void
cq_dropout_apply(const cq_dropout_stream *ds, float p, uint32_t site,
				 uint32_t row, float *x, int n)
{
	cq_philox_key key;
	float		scale;

	if (!ds || !ds->on || p <= 0.0f)
		return;
	key = cq_philox_key_from_seed(cq_mix64(ds->seed ^ cq_mix64(ds->pair_key)));
	scale = 1.0f / (1.0f - p);
	for (int j = 0; j < n; j += 4)
	{
		cq_philox_ctr r = cq_philox4x32((cq_philox_ctr) {{(uint32_t) j >> 2, row, site, ds->pass}}, key);

		for (int w = 0; w < 4 && j + w < n; w++)
			x[j + w] = cq_u32_to_unit(r.c[w]) < p ? 0.0f : x[j + w] * scale;
	}
}
