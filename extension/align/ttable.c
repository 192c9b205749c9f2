#include "align/ttable.h"

#include <stdlib.h>
#include <string.h>

#include "common/mem.h"

cq_code
cq_ttable_alloc(cq_ttable *t, int32_t n_e, int32_t n_f, int64_t nnz,
				bool with_counts, cq_error *err)
{
	memset(t, 0, sizeof(*t));
	t->n_e = n_e;
	t->n_f = n_f;
	t->nnz = nnz;
	t->row_off = cq_alloc0(((size_t) n_e + 2) * sizeof(int64_t));
	t->col = cq_alloc((size_t) nnz * sizeof(int32_t));
	t->prob = cq_alloc0((size_t) nnz * sizeof(double));
	if (with_counts)
		t->count = cq_alloc0((size_t) nnz * sizeof(double));
	if (!t->row_off || !t->col || !t->prob || (with_counts && !t->count))
	{
		cq_ttable_free(t);
		return cq_fail(err, CQ_ENOMEM, "out of memory for a translation table of %lld entries",
							 (long long) nnz);
	}
	return CQ_OK;
}

static int
cmp_i32(const void *a, const void *b)
{
	int32_t		x = *(const int32_t *) a,
				y = *(const int32_t *) b;

	return (x > y) - (x < y);
}

/* Inverted index e -> pairs containing e (each pair once per e). */
static cq_code
invert(const cq_bitext_view *v, int64_t **inv_off_out, int64_t **inv_out)
{
	int64_t    *off = cq_alloc0(((size_t) v->e_vocab + 1) * sizeof(int64_t));
	int64_t    *last = cq_alloc(((size_t) v->e_vocab + 1) * sizeof(int64_t));
	int64_t    *inv = NULL;

	if (!off || !last)
		goto oom;
	for (int32_t e = 0; e < v->e_vocab; e++)
		last[e] = -1;
	for (int64_t k = 0; k < v->n_pairs; k++)
		for (int64_t p = v->e_off[k]; p < v->e_off[k + 1]; p++)
			if (last[v->e[p]] != k)
			{
				last[v->e[p]] = k;
				off[v->e[p] + 1]++;
			}
	for (int32_t e = 0; e < v->e_vocab; e++)
		off[e + 1] += off[e];
	inv = cq_alloc(((size_t) off[v->e_vocab] + 1) * sizeof(int64_t));
	if (!inv)
		goto oom;
	for (int32_t e = 0; e < v->e_vocab; e++)
		last[e] = off[e];		/* reused as fill cursor */
	for (int64_t k = 0; k < v->n_pairs; k++)
		for (int64_t p = v->e_off[k]; p < v->e_off[k + 1]; p++)
		{
			int32_t		e = v->e[p];

			if (last[e] == off[e] || inv[last[e] - 1] != k)
				inv[last[e]++] = k;
		}
	cq_free(last);
	*inv_off_out = off;
	*inv_out = inv;
	return CQ_OK;
oom:
	cq_free(off);
	cq_free(last);
	cq_free(inv);
	return CQ_ENOMEM;
}

/* Appends to a growing column array. */
typedef struct colbuf
{
	int32_t    *v;
	int64_t		n,
				cap;
} colbuf;

static bool
colbuf_push(colbuf *b, int32_t x)
{
	if (b->n == b->cap)
	{
		int64_t		cap = b->cap ? 2 * b->cap : 1024;
		int32_t    *nv = cq_realloc(b->v, (size_t) cap * sizeof(int32_t));

		if (!nv)
			return false;
		b->v = nv;
		b->cap = cap;
	}
	b->v[b->n++] = x;
	return true;
}

/*
 * Link index entries of row e (positions start.. in the table, f -> position
 * in pos): every occurrence of e in the pairs of inv[lo..hi).  e < 0 fills
 * the NULL slots of every pair.
 */
static void
index_row(const cq_bitext_view *v, int32_t e, const int64_t *inv, int64_t lo,
		  int64_t hi, const uint32_t *pos, uint32_t *idx, const int64_t *idx_off)
{
	for (int64_t q = lo; q < hi; q++)
	{
		int64_t		k = inv ? inv[q] : q;
		const int32_t *es = v->e + v->e_off[k];
		const int32_t *fs = v->f + v->f_off[k];
		int64_t		n = v->e_off[k + 1] - v->e_off[k];
		int64_t		m = v->f_off[k + 1] - v->f_off[k];
		uint32_t   *out = idx + idx_off[k];

		for (int64_t i = -1; i < n; i++)
		{
			if ((e < 0) != (i < 0) || (i >= 0 && es[i] != e))
				continue;
			for (int64_t j = 0; j < m; j++)
				out[j * (n + 1) + i + 1] = pos[fs[j]];
		}
	}
}

cq_code
cq_ttable_build(cq_ttable *t, const cq_bitext_view *v, uint32_t *idx,
				const int64_t *idx_off, cq_error *err)
{
	int64_t    *inv_off = NULL,
			   *inv = NULL,
			   *row_off = NULL;
	int32_t    *mark = NULL;
	uint32_t   *pos = NULL;
	colbuf		cols = {0};
	cq_code		rc;

	memset(t, 0, sizeof(*t));
	if (invert(v, &inv_off, &inv) != CQ_OK)
		return cq_fail(err, CQ_ENOMEM, "out of memory building the co-occurrence index");
	row_off = cq_alloc0(((size_t) v->e_vocab + 2) * sizeof(int64_t));
	mark = cq_alloc(((size_t) v->f_vocab + 1) * sizeof(int32_t));
	if (idx)
		pos = cq_alloc(((size_t) v->f_vocab + 1) * sizeof(uint32_t));
	if (!row_off || !mark || (idx && !pos))
		goto oom;
	for (int32_t f = 0; f < v->f_vocab; f++)
		mark[f] = -1;
	/* each row: the distinct f of the pairs containing e, sorted */
	for (int32_t e = 0; e < v->e_vocab; e++)
	{
		int64_t		start = cols.n;

		for (int64_t q = inv_off[e]; q < inv_off[e + 1]; q++)
		{
			int64_t		k = inv[q];

			for (int64_t p = v->f_off[k]; p < v->f_off[k + 1]; p++)
				if (mark[v->f[p]] != e)
				{
					mark[v->f[p]] = e;
					if (!colbuf_push(&cols, v->f[p]))
						goto oom;
				}
		}
		if (cols.n > start)
			qsort(cols.v + start, cols.n - start, sizeof(int32_t), cmp_i32);
		row_off[e + 1] = cols.n;
		if (idx)
		{
			for (int64_t q = start; q < cols.n; q++)
				pos[cols.v[q]] = (uint32_t) q;
			index_row(v, e, inv, inv_off[e], inv_off[e + 1], pos, idx, idx_off);
		}
	}
	/* NULL row: every f present, already in order */
	for (int64_t p = 0; p < v->f_off[v->n_pairs]; p++)
		mark[v->f[p]] = -2;
	for (int32_t f = 0; f < v->f_vocab; f++)
		if (mark[f] == -2)
		{
			if (idx)
				pos[f] = (uint32_t) cols.n;
			if (!colbuf_push(&cols, f))
				goto oom;
		}
	row_off[v->e_vocab + 1] = cols.n;
	if (idx)
		index_row(v, -1, NULL, 0, v->n_pairs, pos, idx, idx_off);

	rc = cq_ttable_alloc(t, v->e_vocab, v->f_vocab, cols.n, true, err);
	if (rc == CQ_OK)
	{
		memcpy(t->row_off, row_off, ((size_t) v->e_vocab + 2) * sizeof(int64_t));
		if (cols.n)
			memcpy(t->col, cols.v, (size_t) cols.n * sizeof(int32_t));
	}
	cq_free(inv_off);
	cq_free(inv);
	cq_free(row_off);
	cq_free(mark);
	cq_free(pos);
	cq_free(cols.v);
	return rc;
oom:
	cq_free(inv_off);
	cq_free(inv);
	cq_free(row_off);
	cq_free(mark);
	cq_free(pos);
	cq_free(cols.v);
	return cq_fail(err, CQ_ENOMEM, "out of memory building the translation table");
}

int64_t
cq_ttable_find(const cq_ttable *t, int32_t e, int32_t f)
{
	int64_t		lo,
				hi;

	if (e < 0 || e > t->n_e)
		return -1;
	lo = t->row_off[e];
	hi = t->row_off[e + 1];
	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (t->col[mid] < f)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (lo < t->row_off[e + 1] && t->col[lo] == f) ? lo : -1;
}

double
cq_ttable_prob_or(const cq_ttable *t, int32_t e, int32_t f, double missing)
{
	int64_t		q = cq_ttable_find(t, e, f);

	return q < 0 ? missing : t->prob[q];
}

size_t
cq_ttable_bytes(const cq_ttable *t)
{
	size_t		per = sizeof(int32_t) + sizeof(double) + (t->count ? sizeof(double) : 0);

	return ((size_t) t->n_e + 2) * sizeof(int64_t) + (size_t) t->nnz * per;
}

void
cq_ttable_free(cq_ttable *t)
{
	cq_free(t->row_off);
	cq_free(t->col);
	cq_free(t->prob);
	cq_free(t->count);
	t->row_off = NULL;
	t->col = NULL;
	t->prob = t->count = NULL;
	t->nnz = 0;
}

void
cq_ttable_iter_init(cq_ttable_iter *it, const cq_ttable *t, double min_prob)
{
	it->t = t;
	it->min_prob = min_prob;
	it->row = 0;
	it->pos = 0;
}

bool
cq_ttable_iter_next(cq_ttable_iter *it, int32_t *e, int32_t *f, double *prob)
{
	const cq_ttable *t = it->t;

	for (; it->pos < t->nnz; it->pos++)
	{
		while (it->pos >= t->row_off[it->row + 1])
			it->row++;
		if (t->prob[it->pos] >= it->min_prob)
		{
			*e = it->row == t->n_e ? -1 : it->row;
			*f = t->col[it->pos];
			*prob = t->prob[it->pos];
			it->pos++;
			return true;
		}
	}
	return false;
}
