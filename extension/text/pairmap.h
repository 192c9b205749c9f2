/*
 * An open-addressing hash map from a pair of symbol ids (a, b), both >= 0,
 * to an int32 value (a merge rank, or a pair index in the learner).
 */
#ifndef CQ_PAIRMAP_H
#define CQ_PAIRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef struct cq_pairmap
{
	uint64_t   *keys;			/* [cap] (a << 32 | b) + 1, 0 = empty */
	int32_t    *vals;			/* [cap] */
	size_t		cap;			/* power of two */
	size_t		n;
} cq_pairmap;

/* An empty map with room for about expected pairs; CQ_ENOMEM. */
cq_code		cq_pairmap_init(cq_pairmap *m, size_t expected);
void		cq_pairmap_free(cq_pairmap *m);

/* The value stored for (a, b), or -1 when absent. */
int32_t		cq_pairmap_get(const cq_pairmap *m, int32_t a, int32_t b);

/*
 * Store val for (a, b) unless present; *stored (may be NULL) = the value now
 * stored (the old one if present).  CQ_ENOMEM.
 */
cq_code		cq_pairmap_put_new(cq_pairmap *m, int32_t a, int32_t b, int32_t val,
							   int32_t *stored);

#endif
