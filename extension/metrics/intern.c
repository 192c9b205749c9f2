#include "metrics/intern.h"

#include <stdint.h>
#include <string.h>

#include "common/rng.h"
#include "metrics/msort.h"

void
cq_intern_work_free(cq_intern_work *w)
{
	cq_cpbuf_free(&w->seq);
	cq_cpbuf_free(&w->tok);
	cq_cpbuf_free(&w->keys);
	cq_cpbuf_free(&w->reps);
}

/* FNV-1a over the code points, then a finaliser to spread the bits. */
static uint64_t
token_hash(const uint32_t *x, uint32_t len)
{
	uint64_t	h = 0xcbf29ce484222325ull;

	for (uint32_t i = 0; i < len; i++)
	{
		h ^= x[i];
		h *= 0x100000001b3ull;
	}
	return cq_mix64(h ^ len);
}

typedef struct tokens
{
	const cq_cpbuf *texts;
	const cq_spans *spans;
	const uint32_t *seq,
			   *tok;
} tokens;

static const uint32_t *
token_at(const tokens *t, uint32_t g, uint32_t *len)
{
	const cq_span *sp = &t->spans[t->seq[g]].v[t->tok[g]];

	*len = sp->len;
	return t->texts[t->seq[g]].v + sp->off;
}

static bool
same_token(const tokens *t, uint32_t a, uint32_t b)
{
	uint32_t	la,
				lb;
	const uint32_t *xa = token_at(t, a, &la),
			   *xb = token_at(t, b, &lb);

	return la == lb && memcmp(xa, xb, la * sizeof(uint32_t)) == 0;
}

bool
cq_intern_tokens(const cq_cpbuf *texts, const cq_spans *spans, int nseq,
				 cq_cpbuf *ids, cq_intern_work *w)
{
	size_t		total = 0,
				g = 0;
	uint32_t	next_id = 0;
	cq_u128    *keys,
			   *tmp;
	tokens		t;

	for (int s = 0; s < nseq; s++)
		total += spans[s].n;
	if (!cq_cpbuf_reserve(&w->seq, total + 1) || !cq_cpbuf_reserve(&w->tok, total + 1) ||
		!cq_cpbuf_reserve(&w->keys, 8 * (total + 1) + 4))
		return false;
	keys = (cq_u128 *) (((uintptr_t) w->keys.v + 15) & ~(uintptr_t) 15);
	tmp = keys + total + 1;
	t = (tokens) {texts, spans, w->seq.v, w->tok.v};
	for (int s = 0; s < nseq; s++)
	{
		if (!cq_cpbuf_reserve(&ids[s], spans[s].n + 1))
			return false;
		ids[s].n = spans[s].n;
		for (size_t i = 0; i < spans[s].n; i++, g++)
		{
			uint32_t	len;
			const uint32_t *x;

			w->seq.v[g] = (uint32_t) s;
			w->tok.v[g] = (uint32_t) i;
			x = token_at(&t, (uint32_t) g, &len);
			keys[g] = ((cq_u128) token_hash(x, len) << 64) | g;
		}
	}
	cq_sort_u128(keys, total, tmp);

	/* one hash at a time: its tokens, grouped by content */
	for (size_t i = 0; i < total;)
	{
		uint64_t	h = (uint64_t) (keys[i] >> 64);
		size_t		j = i;

		w->reps.n = 0;
		for (; j < total && (uint64_t) (keys[j] >> 64) == h; j++)
		{
			uint32_t	gj = (uint32_t) keys[j];
			size_t		r = 0;

			while (r < w->reps.n && !same_token(&t, w->reps.v[2 * r], gj))
				r++;
			if (r == w->reps.n)
			{
				if (!cq_cpbuf_reserve(&w->reps, 2 * (r + 1)))
					return false;
				w->reps.v[2 * r] = gj;
				w->reps.v[2 * r + 1] = next_id++;
				w->reps.n++;
			}
			ids[w->seq.v[gj]].v[w->tok.v[gj]] = w->reps.v[2 * r + 1];
		}
		i = j;
	}
	return true;
}
