#include "align/link_index.h"

#include <string.h>

#include "common/mem.h"

int64_t
cq_link_index_entries(const cq_bitext_view *v)
{
	int64_t		total = 0;

	for (int64_t k = 0; k < v->n_pairs; k++)
		total += (v->f_off[k + 1] - v->f_off[k]) * (v->e_off[k + 1] - v->e_off[k] + 1);
	return total;
}

int64_t
cq_link_index_max_pair(const cq_bitext_view *v)
{
	int64_t		best = 0;

	for (int64_t k = 0; k < v->n_pairs; k++)
	{
		int64_t		sz = (v->f_off[k + 1] - v->f_off[k]) * (v->e_off[k + 1] - v->e_off[k] + 1);

		if (sz > best)
			best = sz;
	}
	return best;
}

/* Fills out with the positions of pair k; returns the entries written. */
static int64_t
fill_pair(const cq_ttable *t, const cq_bitext_view *v, int64_t k, uint32_t *out)
{
	const int32_t *e = v->e + v->e_off[k];
	int64_t		n = v->e_off[k + 1] - v->e_off[k];
	uint32_t   *start = out;

	for (int64_t p = v->f_off[k]; p < v->f_off[k + 1]; p++)
	{
		/* every looked-up pair co-occurs, so find() cannot miss */
		*out++ = (uint32_t) cq_ttable_find(t, t->n_e, v->f[p]);
		for (int64_t i = 0; i < n; i++)
			*out++ = (uint32_t) cq_ttable_find(t, e[i], v->f[p]);
	}
	return out - start;
}

int
cq_ttable_build_indexed(cq_ttable *t, cq_link_index *li,
						const cq_bitext_view *v, size_t max_bytes,
						cq_align_error *err)
{
	int64_t		total = cq_link_index_entries(v);
	int			rc;

	memset(li, 0, sizeof(*li));
	if ((size_t) total <= max_bytes / sizeof(uint32_t))
	{
		li->off = cq_alloc(((size_t) v->n_pairs + 1) * sizeof(int64_t));
		li->idx = cq_alloc(((size_t) total + 1) * sizeof(uint32_t));
		if (!li->off || !li->idx)
		{
			cq_link_index_free(li);
			return cq_align_fail(err, CQ_ALIGN_ENOMEM, "out of memory for the link index");
		}
		li->off[0] = 0;
		for (int64_t k = 0; k < v->n_pairs; k++)
			li->off[k + 1] = li->off[k] + (v->f_off[k + 1] - v->f_off[k]) *
				(v->e_off[k + 1] - v->e_off[k] + 1);
	}
	rc = cq_ttable_build(t, v, li->idx, li->off, err);
	if (rc == CQ_ALIGN_OK && t->nnz >= (int64_t) UINT32_MAX)
		rc = cq_align_fail(err, CQ_ALIGN_EINVAL, "translation table too large");
	if (rc != CQ_ALIGN_OK)
	{
		cq_link_index_free(li);
		cq_ttable_free(t);
	}
	return rc;
}

const uint32_t *
cq_link_index_pair(const cq_link_index *li, const cq_ttable *t,
				   const cq_bitext_view *v, int64_t k, uint32_t *scratch)
{
	if (li->idx)
		return li->idx + li->off[k];
	fill_pair(t, v, k, scratch);
	return scratch;
}

size_t
cq_link_index_bytes(const cq_link_index *li, int64_t n_pairs)
{
	if (!li->idx)
		return 0;
	return ((size_t) n_pairs + 1) * sizeof(int64_t) +
		(size_t) li->off[n_pairs] * sizeof(uint32_t);
}

void
cq_link_index_free(cq_link_index *li)
{
	cq_free(li->off);
	cq_free(li->idx);
	li->off = NULL;
	li->idx = NULL;
}
