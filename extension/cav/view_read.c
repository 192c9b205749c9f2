/* Readers of a validated CAV buffer: tokens, rows, entries. */
#include "cav/view_impl.h"

void
cav_view_token(const cav_view *v, uint32_t idx, cav_token_info *out)
{
	const uint8_t *r = cav_view_rec(v, idx);
	uint32_t	tgt = cq_le_get_u32(r + CAV_REC_TGT);

	out->str = cav_section_str(v->buf, v->tgt_dict, v->n_tgt, tgt, &out->len);
	out->occurrences = cq_le_get_u64(r + CAV_REC_OCC);
	out->nnz = cq_le_get_u32(r + CAV_REC_NNZ);
	out->row = v->n_src + tgt;
}

cq_code
cav_view_find(const cav_view *v, const char *tok, size_t len, uint32_t *idx,
			  cq_error *err)
{
	uint32_t	tgt = cav_section_find(v->buf, v->tgt_dict, v->n_tgt, tok, len);
	uint32_t	lo = 0,
				hi = v->n_mat;

	/* the table is sorted by target id */
	while (tgt != UINT32_MAX && lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;
		uint32_t	t = cq_le_get_u32(cav_view_rec(v, mid) + CAV_REC_TGT);

		if (t == tgt)
		{
			*idx = mid;
			return CQ_OK;
		}
		if (t < tgt)
			lo = mid + 1;
		else
			hi = mid;
	}
	return cq_fail(err, CQ_ENOTFOUND, "token \"%.*s\" has no matrix in the CAV",
					len > 64 ? 64 : (int) len, tok);
}

void
cav_view_row(const cav_view *v, uint32_t row, int *side, const char **str,
			 size_t *len)
{
	if (row < v->n_src)
	{
		*side = 0;
		*str = cav_section_str(v->buf, v->src_dict, v->n_src, row, len);
	}
	else
	{
		*side = 1;
		*str = cav_section_str(v->buf, v->tgt_dict, v->n_tgt, row - v->n_src, len);
	}
}

void
cav_entry_iter_init(const cav_view *v, uint32_t idx, cav_entry_iter *it)
{
	const uint8_t *r = cav_view_rec(v, idx);
	uint64_t	start = cq_le_get_u64(r + CAV_REC_START);
	uint64_t	end = idx + 1 < v->n_mat ?
		cq_le_get_u64(cav_view_rec(v, idx + 1) + CAV_REC_START) : v->len - v->entries;

	it->p = v->buf + v->entries + start;
	it->end = v->buf + v->entries + end;
	it->row = 0;
	it->left = cq_le_get_u32(r + CAV_REC_NNZ);
}

uint32_t
cav_view_entries(const cav_view *v, uint32_t idx, cav_entry *out)
{
	cav_entry_iter it;
	uint32_t	n = 0;

	cav_entry_iter_init(v, idx, &it);
	while (cav_entry_iter_next(&it, &out[n]))
		n++;
	return n;
}
