/*
 * Monte Carlo dropout masks from a counter-based generator.
 *
 * The Philox key is (seed, the pair's own key) and the counter is (element,
 * row, site, pass): a mask depends on nothing but the sentence pair, the
 * sentence-local coordinates and the pass, never on the pair's place in a
 * batch, so a pair scored alone or in any batch, in any process, sees the
 * same masks.  The words are those of cq_philox4x32 (common/rng.h); the
 * portable kernel runs eight Philox blocks (32 elements) side by side in GCC
 * vectors, the AVX2 one (dropout_avx2.c) sixteen, in 32-bit lanes.
 */
#include <string.h>

#include "common/cpu.h"
#include "common/rng.h"
#include "nn/ops/dropout_kernel.h"
#include "nn/ops/ops.h"

typedef uint64_t v8u __attribute__((vector_size(64)));

/* Philox4x32-10 on 8 counters; each lane holds one 32-bit word. */
static void
philox8(v8u c[4], uint32_t k0, uint32_t k1)
{
	const v8u	low = (v8u) {0} + 0xFFFFFFFFu;

	for (int round = 0; round < 10; round++)
	{
		v8u			p0 = c[0] * 0xD2511F53u,
					p1 = c[2] * 0xCD9E8D57u;
		v8u			n0 = (p1 >> 32) ^ c[1] ^ k0,
					n2 = (p0 >> 32) ^ c[3] ^ k1;

		c[0] = n0;
		c[1] = p1 & low;
		c[2] = n2;
		c[3] = p0 & low;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
}

void
cq_dropout_portable(const cq_dropout_job *d, float *x, int j0, int n)
{
	for (; j0 < n; j0 += 32)
	{
		const v8u	lanes = {0, 1, 2, 3, 4, 5, 6, 7};
		v8u			c[4];
		uint32_t	words[32];
		int			m = n - j0 < 32 ? n - j0 : 32;

		c[0] = lanes + (uint32_t) (j0 >> 2);
		c[1] = (v8u) {0} + d->row;
		c[2] = (v8u) {0} + d->site;
		c[3] = (v8u) {0} + d->pass;
		philox8(c, d->key.k[0], d->key.k[1]);
		for (int lane = 0; lane < 8; lane++)
			for (int w = 0; w < 4; w++)
				words[4 * lane + w] = (uint32_t) c[w][lane];
		for (int j = 0; j < m; j++)
			x[j0 + j] = cq_u32_to_unit(words[j]) < d->p ? 0.0f : x[j0 + j] * d->scale;
	}
}

void
cq_dropout_apply(const cq_dropout_stream *ds, float p, uint32_t site,
				 uint32_t row, float *x, int n)
{
	cq_dropout_job d;
	int			done = 0;

	if (!ds || !ds->on || p <= 0.0f)
		return;
	d.key = cq_philox_key_from_seed(cq_mix64(ds->seed ^ cq_mix64(ds->pair_key)));
	d.p = p;
	d.scale = 1.0f / (1.0f - p);
	d.row = row;
	d.site = site;
	d.pass = ds->pass;
	if (cq_cpu_detect() & CQ_CPU_BIT(CQ_CPU_AVX2))
		done = cq_dropout_avx2(&d, x, n);
	cq_dropout_portable(&d, x, done, n);
}
