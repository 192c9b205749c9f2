/*
 * Carving one caller-owned workspace into 64-byte aligned pieces.  The same
 * code sizes a workspace (base NULL: only the offsets advance) and lays it
 * out, so the two can never disagree.  Used by the passes that take a single
 * workspace (the training pass, the translator).
 */
#ifndef CQ_CARVE_H
#define CQ_CARVE_H

#include <stddef.h>
#include <stdint.h>

typedef struct cq_carver
{
	char	   *base;			/* NULL: sizing only */
	size_t		off;
} cq_carver;

/* A carver over base; its first piece starts at base's next 64-byte boundary. */
static inline cq_carver
cq_carver_start(void *base)
{
	cq_carver	c = {base, 0};

	if (base)
		c.off = 64 - ((uintptr_t) base & 63);
	return c;
}

/* The next piece of `bytes` (NULL when sizing). */
static inline void *
cq_carve(cq_carver *c, size_t bytes)
{
	void	   *p = c->base ? c->base + c->off : NULL;

	c->off += (bytes + 63) / 64 * 64;
	return p;
}

static inline float *
cq_carve_floats(cq_carver *c, long floats)
{
	return cq_carve(c, sizeof(float) * (size_t) floats);
}

/* The workspace bytes the carving needs, whatever base's alignment. */
static inline size_t
cq_carver_bytes(const cq_carver *c)
{
	return c->off + 64;
}

#endif
