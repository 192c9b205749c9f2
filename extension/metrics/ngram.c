#include "metrics/ngram.h"

#include "metrics/msort.h"

void
cq_ngram_work_free(cq_ngram_work *w)
{
	cq_cpbuf_free(&w->pos);
	cq_cpbuf_free(&w->tmp);
}

typedef struct window_ctx
{
	const uint32_t *s;
	size_t		n;
	int			k;
} window_ctx;

/* Lexicographic order of the windows s[a..a+k) and s[b..b+k), clipped at
 * the end of s (a clipped window sorts before its extensions). */
static int
cmp_window(uint32_t a, uint32_t b, const void *ctx)
{
	const window_ctx *c = ctx;
	size_t		la = c->n - a < (size_t) c->k ? c->n - a : (size_t) c->k,
				lb = c->n - b < (size_t) c->k ? c->n - b : (size_t) c->k;

	for (size_t t = 0; t < la && t < lb; t++)
		if (c->s[a + t] != c->s[b + t])
			return c->s[a + t] < c->s[b + t] ? -1 : 1;
	return la < lb ? -1 : la > lb;
}

/* Order of two n-grams, both known to be complete. */
static inline int
cmp_ngram(const uint32_t *x, const uint32_t *y, int n)
{
	for (int t = 0; t < n; t++)
		if (x[t] != y[t])
			return x[t] < y[t] ? -1 : 1;
	return 0;
}

static void
sort_positions(const uint32_t *s, size_t n, int k, uint32_t *pos, uint32_t *tmp)
{
	window_ctx	c = {s, n, k};

	for (size_t i = 0; i < n; i++)
		pos[i] = (uint32_t) i;
	cq_msort(pos, n, tmp, cmp_window, &c);
}

/* A sorted list of one sequence's positions and a cursor into it. */
typedef struct cursor
{
	const uint32_t *s;
	size_t		n;
	const uint32_t *pos;
	size_t		at;
} cursor;

/* Skip positions whose n-gram runs past the end of the sequence. */
static inline void
skip_short(cursor *c, int order)
{
	while (c->at < c->n && c->pos[c->at] + (size_t) order > c->n)
		c->at++;
}

static int64_t
matches_of_order(cursor *h, cursor *r, int nrefs, int order)
{
	int64_t		m = 0;

	h->at = 0;
	for (int j = 0; j < nrefs; j++)
		r[j].at = 0;
	skip_short(h, order);
	while (h->at < h->n)
	{
		const uint32_t *g = h->s + h->pos[h->at];
		int64_t		hc = 0,
					best = 0;

		/* the group of hyp positions with n-gram g */
		do
		{
			hc++;
			h->at++;
			skip_short(h, order);
		} while (h->at < h->n && cmp_ngram(h->s + h->pos[h->at], g, order) == 0);

		for (int j = 0; j < nrefs; j++)
		{
			cursor	   *c = &r[j];
			int64_t		rc = 0;
			int			d = -1;

			for (skip_short(c, order); c->at < c->n; skip_short(c, order))
			{
				d = cmp_ngram(c->s + c->pos[c->at], g, order);
				if (d > 0)
					break;
				rc += d == 0;
				c->at++;
			}
			if (rc > best)
				best = rc;
		}
		m += hc < best ? hc : best;
	}
	return m;
}

bool
cq_ngram_matches(const uint32_t *hyp, size_t hyp_n,
				 const uint32_t *const *refs, const size_t *ref_n, int nrefs,
				 int max_order, int64_t *matches, cq_ngram_work *w)
{
	cursor		h,
				r[CQ_NGRAM_MAX_REFS];
	size_t		total = hyp_n,
				off;

	if (nrefs < 0 || nrefs > CQ_NGRAM_MAX_REFS || max_order < 1 || max_order > CQ_NGRAM_MAX_ORDER)
		return false;
	for (int j = 0; j < nrefs; j++)
		total += ref_n[j];
	if (!cq_cpbuf_reserve(&w->pos, total + 1) || !cq_cpbuf_reserve(&w->tmp, total + 1))
		return false;

	sort_positions(hyp, hyp_n, max_order, w->pos.v, w->tmp.v);
	h = (cursor) {hyp, hyp_n, w->pos.v, 0};
	off = hyp_n;
	for (int j = 0; j < nrefs; j++)
	{
		sort_positions(refs[j], ref_n[j], max_order, w->pos.v + off, w->tmp.v);
		r[j] = (cursor) {refs[j], ref_n[j], w->pos.v + off, 0};
		off += ref_n[j];
	}
	for (int order = 1; order <= max_order; order++)
		matches[order - 1] = matches_of_order(&h, r, nrefs, order);
	return true;
}
