#include "cav/cells.h"

#include <string.h>

void
cav_cells_free(cav_cells *m, cav_budget *b)
{
	cav_budget_release(b, m->cells, (size_t) m->cap * sizeof(cav_cell));
	m->cells = NULL;
	m->cap = m->n = 0;
}

/* Load factor at most 3/4: linear probing stays short, memory stays modest. */
cq_code
cav_cells_reserve(cav_cells *m, cav_budget *b, uint32_t more, cq_error *err)
{
	uint64_t	need = (uint64_t) m->n + more;
	uint64_t	cap = m->cap ? m->cap : 16;
	cav_cell   *old = m->cells;
	cav_cell   *cells = NULL;
	uint32_t	old_cap = m->cap;
	cq_code		rc;

	while (need * 4 > cap * 3)
		cap *= 2;
	if (cap == m->cap)
		return CQ_OK;
	if (cap > (1u << 31))
		return cq_fail(err, CQ_ELIMIT, "CAV matrix with more than 2^30 nonzeros");
	rc = cav_budget_resize(b, (void **) &cells, 0, cap * sizeof(cav_cell), err);
	if (rc)
		return rc;
	memset(cells, 0xff, cap * sizeof(cav_cell));	/* every key CAV_CELL_EMPTY */
	m->cells = cells;
	m->cap = (uint32_t) cap;
	m->n = 0;
	for (uint32_t i = 0; i < old_cap; i++)
		if (old[i].key != CAV_CELL_EMPTY)
			cav_cells_add(m, old[i].key, old[i].count);
	cav_budget_release(b, old, (size_t) old_cap * sizeof(cav_cell));
	return CQ_OK;
}
