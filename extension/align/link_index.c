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

/* Pair k needs m*(n+1) positions plus m sort keys (u64, kept 8-aligned). */
static int64_t
scratch_need(const cq_bitext_view *v, int64_t k)
{
	int64_t		m = v->f_off[k + 1] - v->f_off[k];
	int64_t		links = m * (v->e_off[k + 1] - v->e_off[k] + 1);

	return links + (links & 1) + 2 * m;
}

int64_t
cq_link_index_max_pair(const cq_bitext_view *v)
{
	int64_t		best = 0;

	for (int64_t k = 0; k < v->n_pairs; k++)
		if (scratch_need(v, k) > best)
			best = scratch_need(v, k);
	return best;
}

/* First q in [lo, hi) with col[q] >= f (or hi): probes 1, 2, 4... ahead, then bisects. */
static int64_t
gallop(const int32_t *col, int64_t lo, int64_t hi, int32_t f)
{
	int64_t		b = lo,
				step = 1;

	while (b < hi && col[b] < f)
	{
		lo = b + 1;
		b = lo + step;
		step <<= 1;
	}
	if (b > hi)
		b = hi;
	while (lo < b)
	{
		int64_t		mid = lo + (b - lo) / 2;

		if (col[mid] < f)
			lo = mid + 1;
		else
			b = mid;
	}
	return lo;
}

static void
sort_keys(uint64_t *key, int64_t m)
{
	for (int64_t a = 1; a < m; a++)
	{
		uint64_t	x = key[a];
		int64_t		b = a;

		for (; b > 0 && key[b - 1] > x; b--)
			key[b] = key[b - 1];
		key[b] = x;
	}
}

/*
 * Positions of pair k by search: the pair's target words sorted once, then
 * each row walked left to right with galloping searches, so a row is read
 * in one direction only (rows of frequent words are long).
 */
static void
fill_pair(const cq_ttable *t, const cq_bitext_view *v, int64_t k, uint32_t *out)
{
	const int32_t *e = v->e + v->e_off[k];
	const int32_t *f = v->f + v->f_off[k];
	int64_t		n = v->e_off[k + 1] - v->e_off[k];
	int64_t		m = v->f_off[k + 1] - v->f_off[k];
	int64_t		links = m * (n + 1);
	uint64_t   *key = (uint64_t *) (out + links + (links & 1));

	for (int64_t j = 0; j < m; j++)
		key[j] = ((uint64_t) (uint32_t) f[j] << 32) | (uint64_t) j;
	sort_keys(key, m);
	for (int64_t i = -1; i < n; i++)
	{
		int32_t		row = i < 0 ? t->n_e : e[i];
		int64_t		q = t->row_off[row],
					hi = t->row_off[row + 1];

		for (int64_t a = 0; a < m; a++)
		{
			/* every looked-up pair co-occurs, so the search cannot miss */
			q = gallop(t->col, q, hi, (int32_t) (key[a] >> 32));
			out[(int64_t) (key[a] & 0xffffffffu) * (n + 1) + i + 1] = (uint32_t) q;
		}
	}
}

cq_code
cq_ttable_build_indexed(cq_ttable *t, cq_link_index *li,
						const cq_bitext_view *v, size_t max_bytes,
						cq_error *err)
{
	int64_t		total = cq_link_index_entries(v);
	cq_code		rc;

	memset(li, 0, sizeof(*li));
	if ((size_t) total <= max_bytes / sizeof(uint32_t))
	{
		li->off = cq_alloc(((size_t) v->n_pairs + 1) * sizeof(int64_t));
		li->idx = cq_alloc(((size_t) total + 1) * sizeof(uint32_t));
		if (!li->off || !li->idx)
		{
			cq_link_index_free(li);
			return cq_fail(err, CQ_ENOMEM, "out of memory for the link index");
		}
		li->off[0] = 0;
		for (int64_t k = 0; k < v->n_pairs; k++)
			li->off[k + 1] = li->off[k] + (v->f_off[k + 1] - v->f_off[k]) *
				(v->e_off[k + 1] - v->e_off[k] + 1);
	}
	rc = cq_ttable_build(t, v, li->idx, li->off, err);
	if (rc == CQ_OK && t->nnz >= (int64_t) UINT32_MAX)
		rc = cq_fail(err, CQ_EINVAL, "translation table too large");
	if (rc != CQ_OK)
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
