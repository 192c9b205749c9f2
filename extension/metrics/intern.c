#include "metrics/intern.h"

#include <string.h>

#include "metrics/msort.h"

void
cq_intern_work_free(cq_intern_work *w)
{
	cq_cpbuf_free(&w->seq);
	cq_cpbuf_free(&w->tok);
	cq_cpbuf_free(&w->order);
	cq_cpbuf_free(&w->tmp);
}

/* Any total order works; length first makes most comparisons one step. */
static int
cmp_token(uint32_t a, uint32_t b, const void *ctx)
{
	const cq_intern_work *w = ctx;
	uint32_t	sa = w->seq.v[a],
				sb = w->seq.v[b];
	const cq_span *ta = &w->spans[sa].v[w->tok.v[a]],
			   *tb = &w->spans[sb].v[w->tok.v[b]];
	const uint32_t *xa = w->texts[sa].v + ta->off,
			   *xb = w->texts[sb].v + tb->off;

	if (ta->len != tb->len)
		return ta->len < tb->len ? -1 : 1;
	for (uint32_t i = 0; i < ta->len; i++)
		if (xa[i] != xb[i])
			return xa[i] < xb[i] ? -1 : 1;
	return 0;
}

bool
cq_intern_tokens(const cq_cpbuf *texts, const cq_spans *spans, int nseq,
				 cq_cpbuf *ids, cq_intern_work *w)
{
	size_t		total = 0,
				g = 0;
	uint32_t	next_id = 0;

	for (int s = 0; s < nseq; s++)
		total += spans[s].n;
	if (!cq_cpbuf_reserve(&w->seq, total + 1) || !cq_cpbuf_reserve(&w->tok, total + 1) ||
		!cq_cpbuf_reserve(&w->order, total + 1) || !cq_cpbuf_reserve(&w->tmp, total + 1))
		return false;
	for (int s = 0; s < nseq; s++)
	{
		if (!cq_cpbuf_reserve(&ids[s], spans[s].n + 1))
			return false;
		ids[s].n = spans[s].n;
		for (size_t i = 0; i < spans[s].n; i++, g++)
		{
			w->seq.v[g] = (uint32_t) s;
			w->tok.v[g] = (uint32_t) i;
			w->order.v[g] = (uint32_t) g;
		}
	}
	w->texts = texts;
	w->spans = spans;
	cq_msort(w->order.v, total, w->tmp.v, cmp_token, w);
	for (size_t i = 0; i < total; i++)
	{
		uint32_t	t = w->order.v[i];

		if (i > 0 && cmp_token(w->order.v[i - 1], t, w) != 0)
			next_id++;
		ids[w->seq.v[t]].v[w->tok.v[t]] = next_id;
	}
	return true;
}
