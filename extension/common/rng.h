/*
 * Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11).
 *
 * A draw is a pure function of (key, counter): no state is carried from one
 * draw to the next, so a dropout mask can be keyed by (seed, pass, site,
 * sentence-local coordinates) and comes out the same whatever else is in the
 * batch, in whatever order, in whatever process.
 */
#ifndef CQ_RNG_H
#define CQ_RNG_H

#include <stdint.h>

typedef struct cq_philox_key
{
	uint32_t	k[2];
} cq_philox_key;

typedef struct cq_philox_ctr
{
	uint32_t	c[4];
} cq_philox_ctr;

/* Four independent 32-bit words for one (key, counter). */
cq_philox_ctr cq_philox4x32(cq_philox_ctr ctr, cq_philox_key key);

/* A key from a 64-bit seed. */
cq_philox_key cq_philox_key_from_seed(uint64_t seed);

/* 64-bit mixing (splitmix64 finaliser): folds identifiers into keys. */
uint64_t	cq_mix64(uint64_t x);

/* A 32-bit word to a float uniform on [0, 1) with 24 significant bits. */
static inline float
cq_u32_to_unit(uint32_t r)
{
	return (float) (r >> 8) * (1.0f / 16777216.0f);
}

/*
 * Uniform floats in [0, 1) at counter positions (c0 .. c0+n-1 of a stream
 * named by c1, c2, c3 under key): out[i] depends only on (key, c0 + i, ...).
 */
void		cq_philox_uniform(cq_philox_key key, uint32_t c1, uint32_t c2,
							  uint32_t c3, uint32_t c0, int n, float *out);

#endif
