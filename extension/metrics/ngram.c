#include "metrics/ngram.h"

#include <stdint.h>
#include <string.h>

#include "metrics/msort.h"

/*
 * Two ways to sort the windows, one result:
 *  - packed: when max_order items of the largest value + 1 fit in 128 bits
 *    (chrF's code points below 2^21 with 6-grams, BLEU's token ids with
 *    4-grams), each window is one unsigned 128-bit integer, items big-end
 *    first and 0 for "past the end", whose integer order is the windows'
 *    lexicographic order; an n-gram is the key's top n items;
 *  - generic: positions sorted by comparing items (any order, any values).
 */
typedef cq_u128 u128;

void
cq_ngram_work_free(cq_ngram_work *w)
{
	cq_cpbuf_free(&w->pos);
	cq_cpbuf_free(&w->tmp);
	cq_cpbuf_free(&w->keys);
}

/* ---- packed windows -------------------------------------------------------- */

/* Key of each position, from the end: the window at p is item p on top of
 * the window at p + 1 shifted down by one item. */
static void
pack_windows(const uint32_t *s, size_t n, int k, int bits, u128 *keys)
{
	u128		key = 0;
	int			top = bits * (k - 1);

	for (size_t p = n; p-- > 0;)
	{
		key = (key >> bits) | ((u128) s[p] + 1) << top;
		keys[p] = key;
	}
}

static inline int
clz128(u128 x)
{
	uint64_t	hi = (uint64_t) (x >> 64),
				lo = (uint64_t) x;

	return hi ? __builtin_clzll(hi) : 64 + __builtin_clzll(lo);
}

static inline int
ctz128(u128 x)
{
	uint64_t	hi = (uint64_t) (x >> 64),
				lo = (uint64_t) x;

	return lo ? __builtin_ctzll(lo) : 64 + __builtin_ctzll(hi);
}

/*
 * One merge of the sorted keys of all sequences counts every order at once:
 * between consecutive keys in merged order, the number of leading items they
 * share (lcp) says which n-grams continue (n <= lcp) and which end (n > lcp,
 * whose counts are then settled: min(hyp count, max reference count)).  A
 * key counts for the orders up to its window's length (its items that are
 * not 0).
 */
static void
packed_matches(const u128 *const *lists, const size_t *lens, int nrefs, int k, int bits,
			   int64_t *matches)
{
	int64_t		cnt[1 + CQ_NGRAM_MAX_REFS][CQ_NGRAM_MAX_ORDER + 1];
	size_t		at[1 + CQ_NGRAM_MAX_REFS] = {0};
	int			unused = 128 - bits * k;
	bool		first = true;
	u128		prev = 0;

	memset(cnt, 0, sizeof(int64_t) * (nrefs + 1) * (CQ_NGRAM_MAX_ORDER + 1));
	for (int n = 0; n < k; n++)
		matches[n] = 0;
	for (;;)
	{
		int			side = -1,
					lcp,
					len;
		u128		key = 0;

		/* the smallest head; the hypothesis (list 0) first on ties */
		for (int j = 0; j <= nrefs; j++)
			if (at[j] < lens[j] && (side < 0 || lists[j][at[j]] < key))
			{
				side = j;
				key = lists[j][at[j]];
			}
		lcp = side < 0 ? 0 : first ? k : key == prev ? k : (clz128(key ^ prev) - unused) / bits;
		if (first)
			lcp = 0;
		/* n-grams of orders above lcp end here */
		for (int n = lcp + 1; n <= k; n++)
		{
			int64_t		best = 0;

			for (int j = 1; j <= nrefs; j++)
			{
				best = cnt[j][n] > best ? cnt[j][n] : best;
				cnt[j][n] = 0;
			}
			matches[n - 1] += cnt[0][n] < best ? cnt[0][n] : best;
			cnt[0][n] = 0;
		}
		if (side < 0)
			break;
		len = k - ctz128(key) / bits;
		for (int n = 1; n <= len; n++)
			cnt[side][n]++;
		at[side]++;
		prev = key;
		first = false;
	}
}

static bool
packed(const uint32_t *hyp, size_t hyp_n, const uint32_t *const *refs, const size_t *ref_n,
	   int nrefs, int max_order, int bits, int64_t *matches, cq_ngram_work *w, size_t total)
{
	const u128 *lists[1 + CQ_NGRAM_MAX_REFS];
	size_t		lens[1 + CQ_NGRAM_MAX_REFS];
	u128	   *keys,
			   *tmp;
	size_t		off = 0;

	/* keys and scratch: 2 * total u128 = 8 * total uint32, 16-byte aligned */
	if (!cq_cpbuf_reserve(&w->keys, 8 * (total + 1) + 4))
		return false;
	keys = (u128 *) (((uintptr_t) w->keys.v + 15) & ~(uintptr_t) 15);
	tmp = keys + total + 1;
	for (int j = 0; j <= nrefs; j++)
	{
		const uint32_t *s = j == 0 ? hyp : refs[j - 1];
		size_t		n = j == 0 ? hyp_n : ref_n[j - 1];

		pack_windows(s, n, max_order, bits, keys + off);
		cq_sort_u128(keys + off, n, tmp);
		lists[j] = keys + off;
		lens[j] = n;
		off += n;
	}
	packed_matches(lists, lens, nrefs, max_order, bits, matches);
	return true;
}

/* ---- generic comparison ------------------------------------------------------- */

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
generic_matches(cursor *h, cursor *r, int nrefs, int order)
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

/* ---- both ---------------------------------------------------------------------- */

/* Bits per item of a packed window of max_order items, or 0 if the values
 * (plus one, for "past the end") do not fit. */
static int
packed_bits(const uint32_t *hyp, size_t hyp_n, const uint32_t *const *refs, const size_t *ref_n,
			int nrefs, int max_order)
{
	int			bits = 128 / max_order > 64 ? 64 : 128 / max_order;
	uint64_t	top = 0;

	if (bits > 32)
		return bits;			/* any uint32 item + 1 fits */
	for (size_t i = 0; i < hyp_n; i++)
		top = hyp[i] > top ? hyp[i] : top;
	for (int j = 0; j < nrefs; j++)
		for (size_t i = 0; i < ref_n[j]; i++)
			top = refs[j][i] > top ? refs[j][i] : top;
	return top + 1 < ((uint64_t) 1 << bits) ? bits : 0;
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
	int			bits;

	if (nrefs < 0 || nrefs > CQ_NGRAM_MAX_REFS || max_order < 1 || max_order > CQ_NGRAM_MAX_ORDER)
		return false;
	for (int j = 0; j < nrefs; j++)
		total += ref_n[j];
	bits = w->force_generic ? 0 : packed_bits(hyp, hyp_n, refs, ref_n, nrefs, max_order);
	if (bits > 0)
		return packed(hyp, hyp_n, refs, ref_n, nrefs, max_order, bits, matches, w, total);

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
		matches[order - 1] = generic_matches(&h, r, nrefs, order);
	return true;
}
