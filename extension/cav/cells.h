/*
 * The sparse matrix of one target token while accumulating: an
 * open-addressing hash map (row key, distance) -> int64 count.
 *
 * Key layout (48 bits used): state row << 16 | distance, where the state row
 * is the source id, or 2^31 | target id; CAV_CELL_EMPTY marks a free slot.
 */
#ifndef CQ_CAV_CELLS_H
#define CQ_CAV_CELLS_H

#include "cav/budget.h"

#include <stdbool.h>

#define CAV_CELL_EMPTY UINT64_MAX
#define CAV_TGT_BIT 0x80000000u

typedef struct cav_cell
{
	uint64_t	key;
	int64_t		count;
} cav_cell;

typedef struct cav_cells
{
	cav_cell   *cells;			/* [cap], cap a power of two or 0 */
	uint32_t	cap;
	uint32_t	n;				/* keys in use */
	uint64_t	occ;			/* occurrences of the token */
	bool		tracked;		/* a matrix is kept for this token */
} cav_cells;

static inline uint64_t
cav_cell_key(uint32_t row, uint32_t dist)
{
	return (uint64_t) row << 16 | dist;
}

void		cav_cells_free(cav_cells *m, cav_budget *b);

/* Grow so that `more` new keys fit under the load limit. */
cq_code		cav_cells_reserve(cav_cells *m, cav_budget *b, uint32_t more,
							  cq_error *err);

static inline uint32_t
cav_cells_slot(uint64_t key, uint32_t cap)
{
	return (uint32_t) ((key * 0x9E3779B97F4A7C15ULL) >> 32) & (cap - 1);
}

/* Add delta at key; room must have been reserved. */
static inline void
cav_cells_add(cav_cells *m, uint64_t key, int64_t delta)
{
	uint32_t	mask = m->cap - 1;
	uint32_t	i = cav_cells_slot(key, m->cap);

	for (;; i = (i + 1) & mask)
	{
		cav_cell   *c = &m->cells[i];

		if (c->key == key)
		{
			c->count += delta;
			return;
		}
		if (c->key == CAV_CELL_EMPTY)
		{
			c->key = key;
			c->count = delta;
			m->n++;
			return;
		}
	}
}

#endif
