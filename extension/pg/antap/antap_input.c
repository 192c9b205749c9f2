/*
 * ANTAP's input from SQL values: a cav datum and a token -> CAV(token)
 * normalised over the whole matrix and pooled (cav_view_pool_layer_norm,
 * the one implementation of the pipeline, shared with corpq.cav_pool).
 *
 * A corpus usually has one CAV value for all its tokens, passed row after
 * row: the cav glue's CavValueCache (cav.h) reads a stored one once.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "pg/antap/antap.h"
#include "pg/base/errors.h"

void
antap_cav_cache_init(AntapCavCache *c, MemoryContext parent)
{
	memset(c, 0, sizeof(*c));
	cavsql_cache_init(&c->value, parent);
	c->cxt = AllocSetContextCreate(parent, "ANTAP cav input", ALLOCSET_DEFAULT_SIZES);
}

bool
antap_cav_input(AntapCavCache *c, Datum d, const char *token, int len, int rows, int cols,
				float *out)
{
	cav_view	scratch;
	const cav_view *v = cavsql_cached_view(&c->value, d, &scratch);
	uint32		idx;
	cq_error	err = {0};
	int			n = rows * cols;

	if (cav_view_find(v, token, (size_t) len, &idx, NULL) != CQ_OK)
		return false;
	if (c->n_cells < n)
	{
		c->cells = MemoryContextAllocHuge(c->cxt, sizeof(double) * n);
		c->n_cells = n;
	}
	if (cav_view_pool_layer_norm(v, idx, (uint32) rows, (uint32) cols, CAV_LAYER_NORM_EPS,
								 c->cells, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not pool the CAV of token \"%.*s\"", len, token);
	for (int i = 0; i < n; i++)
		out[i] = (float) c->cells[i];
	return true;
}
