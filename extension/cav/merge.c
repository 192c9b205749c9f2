/* Merging CAV state B into A: remap B's dictionaries into A's, add counts. */
#include "cav/state_impl.h"

#include "common/mem.h"

static bool
same_options(const cav_state *a, const cav_state *b)
{
	if (a->l_max != b->l_max || a->res.n != b->res.n)
		return false;
	for (uint32_t i = 0; i < b->res.n; i++)
	{
		size_t		len;
		const char *s = cav_dict_str(&b->res, i, &len);

		if (cav_dict_find(&a->res, s, len) == CAV_NO_ID)
			return false;
	}
	return true;
}

/* map[i] = A's state row of B's row i (with the side bit). */
static cq_code
remap(cav_state *a, const cav_state *b, uint32_t *smap, uint32_t *tmap,
	  cq_error *err)
{
	cq_code		rc = CQ_OK;

	for (uint32_t i = 0; rc == CQ_OK && i < b->src.n; i++)
	{
		size_t		len;
		const char *s = cav_dict_str(&b->src, i, &len);

		rc = cav_dict_intern(&a->src, &a->budget, s, len, &smap[i], NULL, err);
	}
	for (uint32_t i = 0; rc == CQ_OK && i < b->tgt.n; i++)
	{
		size_t		len;
		const char *s = cav_dict_str(&b->tgt, i, &len);

		rc = cav_state_intern_tgt(a, s, len, &tmap[i], err);
	}
	return rc;
}

static cq_code
add_mats(cav_state *a, const cav_state *b, const uint32_t *smap,
		 const uint32_t *tmap, cq_error *err)
{
	for (uint32_t t = 0; t < b->tgt.n; t++)
	{
		const cav_cells *from = &b->mats[t];
		cav_cells  *to = &a->mats[tmap[t]];
		cq_code		rc;

		if (from->occ == 0)
			continue;
		rc = cav_cells_reserve(to, &a->budget, from->n, err);
		if (rc)
			return rc;
		to->occ += from->occ;
		for (uint32_t i = 0; i < from->cap; i++)
		{
			uint64_t	key = from->cells[i].key;
			uint32_t	row,
						dist;

			if (key == CAV_CELL_EMPTY)
				continue;
			row = (uint32_t) (key >> 16);
			dist = (uint32_t) (key & 0xffff);
			row = row & CAV_TGT_BIT ? CAV_TGT_BIT | tmap[row & ~CAV_TGT_BIT] : smap[row];
			cav_cells_add(to, cav_cell_key(row, dist), from->cells[i].count);
		}
	}
	return CQ_OK;
}

cq_code
cav_state_merge(cav_state *a, const cav_state *b, cq_error *err)
{
	uint32_t   *smap,
			   *tmap;
	cq_code		rc;

	if (a == b)
		return cq_fail(err, CQ_EINVAL, "cannot merge a CAV state into itself");
	if (a->failed || b->failed)
		return cq_fail(err, CQ_EINTERNAL, "CAV state unusable after an earlier error");
	if (!same_options(a, b))
		return cq_fail(err, CQ_EMISMATCH,
						"CAV states built with different options (l_max %u vs %u, or restricted targets)",
						a->l_max, b->l_max);
	smap = cq_alloc(((size_t) b->src.n + 1) * sizeof(uint32_t));
	tmap = cq_alloc(((size_t) b->tgt.n + 1) * sizeof(uint32_t));
	if (!smap || !tmap)
	{
		cq_free(smap);
		cq_free(tmap);
		return cq_fail(err, CQ_ENOMEM, "out of memory merging CAV states");
	}
	rc = remap(a, b, smap, tmap, err);
	if (rc == CQ_OK)
		rc = add_mats(a, b, smap, tmap, err);
	if (rc == CQ_OK)
		a->n_pairs += b->n_pairs;
	cq_free(smap);
	cq_free(tmap);
	return cav_state_broken(a, rc);
}
