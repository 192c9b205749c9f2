/*
 * ANTAP's input from SQL values: a cav datum and a token -> CAV(token)
 * normalised over the whole matrix and pooled (cav_view_pool_layer_norm,
 * the one implementation of the pipeline, shared with corpq.cav_pool).
 *
 * A corpus usually has one CAV value for all its tokens, passed row after
 * row (a join of the CAV with cav_tokens(), or a cavs query returning it per
 * token).  Such a stored value reaches us as the same on-disk toast pointer
 * each time; a toast value never changes while it is referenced, so the
 * detoasted, validated copy of the last one is reused while the pointer is
 * the same.  Any other datum is detoasted and validated on each call, as the
 * cav functions do.
 */
#include "postgres.h"

#include "access/detoast.h"
#include "utils/memutils.h"

#include "pg/antap/antap.h"
#include "pg/base/errors.h"

void
antap_cav_cache_init(AntapCavCache *c, MemoryContext parent)
{
	memset(c, 0, sizeof(*c));
	c->cxt = AllocSetContextCreate(parent, "ANTAP cav input", ALLOCSET_DEFAULT_SIZES);
}

static void
open_view(const struct varlena *p, cav_view *v)
{
	cq_error	err = {0};

	if (cav_view_open(VARDATA_ANY(p), VARSIZE_ANY_EXHDR(p), v, &err) != CQ_OK)
	{
		/* it passed the validator when it entered: now it is corrupted */
		err.code = CQ_ECORRUPT;
		corpq_core_error(&err, NULL, "invalid corpq.cav value");
	}
}

/* The view of d: the cached one when d is the cached toast value. */
static const cav_view *
view_of(AntapCavCache *c, Datum d, cav_view *scratch)
{
	struct varlena *raw = (struct varlena *) DatumGetPointer(d);
	struct varatt_external ext;

	if (VARATT_IS_EXTERNAL_ONDISK(raw))
	{
		VARATT_EXTERNAL_GET_POINTER(ext, raw);
		if (c->valid && c->toastrelid == ext.va_toastrelid && c->valueid == ext.va_valueid)
			return &c->view;
		MemoryContextReset(c->cxt);
		c->valid = false;
		c->cells = NULL;
		c->n_cells = 0;
		{
			MemoryContext old = MemoryContextSwitchTo(c->cxt);

			c->copy = detoast_attr(raw);
			MemoryContextSwitchTo(old);
		}
		open_view(c->copy, &c->view);
		c->toastrelid = ext.va_toastrelid;
		c->valueid = ext.va_valueid;
		c->valid = true;
		return &c->view;
	}
	open_view(pg_detoast_datum_packed(raw), scratch);
	return scratch;
}

bool
antap_cav_input(AntapCavCache *c, Datum d, const char *token, int len, int rows, int cols,
				float *out)
{
	cav_view	scratch;
	const cav_view *v = view_of(c, d, &scratch);
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
