#include "common/rng.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static inline void
mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
	uint64_t	p = (uint64_t) a * b;

	*hi = (uint32_t) (p >> 32);
	*lo = (uint32_t) p;
}

cq_philox_ctr
cq_philox4x32(cq_philox_ctr ctr, cq_philox_key key)
{
	uint32_t	c0 = ctr.c[0],
				c1 = ctr.c[1],
				c2 = ctr.c[2],
				c3 = ctr.c[3];
	uint32_t	k0 = key.k[0],
				k1 = key.k[1];

	for (int round = 0; round < 10; round++)
	{
		uint32_t	hi0,
					lo0,
					hi1,
					lo1;

		mulhilo(PHILOX_M0, c0, &hi0, &lo0);
		mulhilo(PHILOX_M1, c2, &hi1, &lo1);
		c0 = hi1 ^ c1 ^ k0;
		c1 = lo1;
		c2 = hi0 ^ c3 ^ k1;
		c3 = lo0;
		k0 += PHILOX_W0;
		k1 += PHILOX_W1;
	}
	return (cq_philox_ctr) {{c0, c1, c2, c3}};
}

uint64_t
cq_mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

cq_philox_key
cq_philox_key_from_seed(uint64_t seed)
{
	return (cq_philox_key) {{(uint32_t) seed, (uint32_t) (seed >> 32)}};
}

void
cq_philox_uniform(cq_philox_key key, uint32_t c1, uint32_t c2, uint32_t c3,
				  uint32_t c0, int n, float *out)
{
	/* One Philox call yields four words: counter c0 / 4, word c0 % 4. */
	int			i = 0;

	while (i < n)
	{
		uint32_t	pos = c0 + (uint32_t) i;
		cq_philox_ctr r = cq_philox4x32((cq_philox_ctr) {{pos >> 2, c1, c2, c3}}, key);

		for (int w = pos & 3; w < 4 && i < n; w++, i++)
			out[i] = cq_u32_to_unit(r.c[w]);
	}
}
