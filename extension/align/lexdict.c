#include "align/lexdict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"

/* Link counts keyed by (x << 32 | y), compacted by sorting when full. */
typedef struct entry
{
	uint64_t	key;
	int64_t		count;
} entry;

struct cq_lexdict_builder
{
	int32_t		n_src,
				n_tgt;
	entry	   *e;
	int64_t		n,
				cap,
				compacted;		/* entries after the last compaction */
};

cq_code
cq_lexdict_builder_create(int32_t n_src, int32_t n_tgt, cq_lexdict_builder **out,
						  cq_error *err)
{
	cq_lexdict_builder *b;

	*out = NULL;
	if (n_src < 0 || n_tgt < 0)
		return cq_fail(err, CQ_EINVAL, "negative vocabulary size");
	b = cq_alloc0(sizeof(*b));
	if (!b)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	b->n_src = n_src;
	b->n_tgt = n_tgt;
	*out = b;
	return CQ_OK;
}

static int
cmp_entry(const void *a, const void *b)
{
	uint64_t	x = ((const entry *) a)->key,
				y = ((const entry *) b)->key;

	return (x > y) - (x < y);
}

static void
compact(cq_lexdict_builder *b)
{
	int64_t		w = 0;

	if (b->n > 1)
		qsort(b->e, b->n, sizeof(entry), cmp_entry);
	for (int64_t r = 0; r < b->n; r++)
	{
		if (w > 0 && b->e[w - 1].key == b->e[r].key)
			b->e[w - 1].count += b->e[r].count;
		else
			b->e[w++] = b->e[r];
	}
	b->n = b->compacted = w;
}

static cq_code
push(cq_lexdict_builder *b, uint64_t key, cq_error *err)
{
	if (b->n == b->cap)
	{
		if (b->n >= 2 * b->compacted + 65536)
			compact(b);
		if (b->n > b->cap / 2 || b->cap == 0)
		{
			int64_t		cap = b->cap ? 2 * b->cap : 65536;
			entry	   *ne = cq_realloc(b->e, (size_t) cap * sizeof(entry));

			if (!ne)
				return cq_fail(err, CQ_ENOMEM, "out of memory for link counts");
			b->e = ne;
			b->cap = cap;
		}
	}
	b->e[b->n].key = key;
	b->e[b->n++].count = 1;
	return CQ_OK;
}

cq_code
cq_lexdict_builder_add(cq_lexdict_builder *b, const int32_t *src, int n_src,
					   const int32_t *tgt, int n_tgt, const cq_link *links,
					   int n_links, cq_error *err)
{
	for (int k = 0; k < n_links; k++)
	{
		int32_t		x,
					y;
		cq_code		rc;

		if (links[k].s < 0 || links[k].s >= n_src || links[k].t < 0 || links[k].t >= n_tgt)
			return cq_fail(err, CQ_EINVAL, "link %d-%d outside the pair",
								 links[k].s, links[k].t);
		x = src[links[k].s];
		y = tgt[links[k].t];
		if (x < 0 || x >= b->n_src || y < 0 || y >= b->n_tgt)
			return cq_fail(err, CQ_EINVAL, "word id outside the vocabulary");
		if ((rc = push(b, ((uint64_t) x << 32) | (uint32_t) y, err)) != CQ_OK)
			return rc;
	}
	return CQ_OK;
}

cq_code
cq_lexdict_builder_finish(cq_lexdict_builder *b, cq_lexdict *d,
						  cq_error *err)
{
	memset(d, 0, sizeof(*d));
	compact(b);
	d->n_src = b->n_src;
	d->n_tgt = b->n_tgt;
	d->nnz = b->n;
	d->row_off = cq_alloc0(((size_t) b->n_src + 1) * sizeof(int64_t));
	d->col = cq_alloc(((size_t) b->n + 1) * sizeof(int32_t));
	d->count = cq_alloc(((size_t) b->n + 1) * sizeof(int64_t));
	d->prob = cq_alloc(((size_t) b->n + 1) * sizeof(double));
	d->row_links = cq_alloc0(((size_t) b->n_src + 1) * sizeof(int64_t));
	d->entropy = cq_alloc0(((size_t) b->n_src + 1) * sizeof(double));
	if (!d->row_off || !d->col || !d->count || !d->prob || !d->row_links || !d->entropy)
	{
		cq_lexdict_free(d);
		return cq_fail(err, CQ_ENOMEM, "out of memory for the dictionary");
	}
	for (int64_t q = 0; q < b->n; q++)
	{
		int32_t		x = (int32_t) (b->e[q].key >> 32);

		d->col[q] = (int32_t) (b->e[q].key & 0xffffffffu);
		d->count[q] = b->e[q].count;
		d->row_off[x + 1]++;
		d->row_links[x] += b->e[q].count;
	}
	for (int32_t x = 0; x < b->n_src; x++)
		d->row_off[x + 1] += d->row_off[x];
	for (int32_t x = 0; x < b->n_src; x++)
	{
		double		h = 0.0;

		for (int64_t q = d->row_off[x]; q < d->row_off[x + 1]; q++)
		{
			double		p = (double) d->count[q] / (double) d->row_links[x];

			d->prob[q] = p;
			h -= p * log(p);
		}
		d->entropy[x] = h;
	}
	return CQ_OK;
}

void
cq_lexdict_builder_free(cq_lexdict_builder *b)
{
	if (b)
	{
		cq_free(b->e);
		cq_free(b);
	}
}

double
cq_lexdict_uncertainty(const cq_lexdict *d, const int32_t *ids, int n)
{
	double		s = 0.0;

	if (n <= 0)
		return 0.0;
	for (int t = 0; t < n; t++)
		s += (ids[t] >= 0 && ids[t] < d->n_src && d->row_links[ids[t]] > 0) ?
			d->entropy[ids[t]] : CQ_LEXDICT_MISSING_ENTROPY;
	return s / n;
}

void
cq_lexdict_free(cq_lexdict *d)
{
	cq_free(d->row_off);
	cq_free(d->col);
	cq_free(d->count);
	cq_free(d->prob);
	cq_free(d->row_links);
	cq_free(d->entropy);
	memset(d, 0, sizeof(*d));
}
