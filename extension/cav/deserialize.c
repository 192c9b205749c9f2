/* Rebuilding a state from a validated buffer (for combining aggregates). */
#include "cav/state_impl.h"

#include "cav/view_impl.h"
#include "common/mem.h"

static cq_code
new_from_view(const cav_view *v, size_t byte_limit, cav_state **out,
			  cq_error *err)
{
	cav_options opt = {.l_max = v->l_max, .n_targets = v->n_restrict};
	const char **toks = cq_alloc(((size_t) v->n_restrict + 1) * sizeof(char *));
	size_t	   *lens = cq_alloc(((size_t) v->n_restrict + 1) * sizeof(size_t));
	cq_code		rc;

	if (!toks || !lens)
		rc = cq_fail(err, CQ_ENOMEM, "out of memory reading a CAV");
	else
	{
		for (uint32_t i = 0; i < v->n_restrict; i++)
			toks[i] = cav_section_str(v->buf, v->res_dict, v->n_restrict, i, &lens[i]);
		opt.targets = toks;
		opt.target_lens = lens;
		rc = cav_state_new(&opt, byte_limit, out, err);
	}
	cq_free(toks);
	cq_free(lens);
	return rc;
}

static cq_code
load_dicts(cav_state *st, const cav_view *v, cq_error *err)
{
	cq_code		rc = CQ_OK;

	for (uint32_t i = 0; rc == CQ_OK && i < v->n_src; i++)
	{
		size_t		len;
		const char *s = cav_section_str(v->buf, v->src_dict, v->n_src, i, &len);
		uint32_t	id;

		rc = cav_dict_intern(&st->src, &st->budget, s, len, &id, NULL, err);
	}
	for (uint32_t i = 0; rc == CQ_OK && i < v->n_tgt; i++)
	{
		size_t		len;
		const char *s = cav_section_str(v->buf, v->tgt_dict, v->n_tgt, i, &len);
		uint32_t	id;

		rc = cav_state_intern_tgt(st, s, len, &id, err);
	}
	return rc;
}

/* Dictionary ids equal the sorted positions, so rows map back directly. */
static cq_code
load_matrices(cav_state *st, const cav_view *v, cq_error *err)
{
	for (uint32_t i = 0; i < v->n_mat; i++)
	{
		cav_token_info info;
		cav_entry_iter it;
		cav_entry	e;
		cav_cells  *m;
		cq_code		rc;

		cav_view_token(v, i, &info);
		m = &st->mats[info.row - v->n_src];
		rc = cav_cells_reserve(m, &st->budget, info.nnz, err);
		if (rc)
			return rc;
		m->occ = info.occurrences;
		cav_entry_iter_init(v, i, &it);
		while (cav_entry_iter_next(&it, &e))
		{
			uint32_t	row = e.row < v->n_src ? e.row : CAV_TGT_BIT | (e.row - v->n_src);

			cav_cells_add(m, cav_cell_key(row, e.dist), e.count);
		}
	}
	return CQ_OK;
}

cq_code
cav_deserialize(const void *buf, size_t len, size_t byte_limit,
				cav_state **out, cq_error *err)
{
	cav_view	v;
	cav_state  *st;
	cq_code		rc;

	*out = NULL;
	rc = cav_view_open(buf, len, &v, err);
	if (rc)
		return rc;
	rc = new_from_view(&v, byte_limit, &st, err);
	if (rc)
		return rc;
	rc = load_dicts(st, &v, err);
	if (rc == CQ_OK)
		rc = load_matrices(st, &v, err);
	if (rc)
	{
		cav_state_free(st);
		return rc;
	}
	st->n_pairs = v.n_pairs;
	*out = st;
	return CQ_OK;
}
