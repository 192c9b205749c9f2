/*
 * The 8:1:1 split of the target dictionary (paper 002, Sec. 4.1: "the random
 * division of the target-side dictionary into training, development, and
 * testing subsets in a ratio of 8:1:1").
 */
#include <stdlib.h>

#include "antap/train.h"
#include "common/mem.h"
#include "common/rng.h"

void
cq_antap_split_sizes(int n, int *n_train, int *n_valid, int *n_test)
{
	int			tenth = (n + 5) / 10;

	*n_valid = tenth;
	*n_test = tenth;
	*n_train = n - 2 * tenth;
}

/* A word in [0, bound) from (key, i): 32 random bits scaled, no modulo bias worth naming. */
static uint32_t
draw(cq_philox_key key, uint32_t i, uint32_t bound)
{
	cq_philox_ctr r = cq_philox4x32((cq_philox_ctr) {{i, 0x5b117, 0, 0}}, key);

	return (uint32_t) (((uint64_t) r.c[0] * bound) >> 32);
}

void
cq_antap_split(int n, uint64_t seed, uint8_t *split)
{
	cq_philox_key key = cq_philox_key_from_seed(cq_mix64(seed));
	int			n_train,
				n_valid,
				n_test;

	cq_antap_split_sizes(n, &n_train, &n_valid, &n_test);
	/* the permutation is applied to labels: shuffle them in place (Fisher-Yates) */
	for (int i = 0; i < n; i++)
		split[i] = i < n_train ? CQ_ANTAP_TRAIN : i < n_train + n_valid ? CQ_ANTAP_VALID
			: CQ_ANTAP_TEST;
	for (int i = n - 1; i > 0; i--)
	{
		uint32_t	j = draw(key, (uint32_t) i, (uint32_t) i + 1);
		uint8_t		t = split[i];

		split[i] = split[j];
		split[j] = t;
	}
}
