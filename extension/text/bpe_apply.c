/* Segmenting words and sentences with a BPE model (apply_bpe.py's encode). */
#include "text/bpe.h"

#include <string.h>

#include "common/interrupt.h"
#include "common/mem.h"

cq_code
cq_bpe_cache_init(cq_bpe_cache *c, size_t max_words)
{
	memset(c, 0, sizeof(*c));
	c->max_words = max_words ? max_words : 1;
	return cq_strmap_init(&c->words, 1024);
}

void
cq_bpe_cache_free(cq_bpe_cache *c)
{
	cq_strmap_free(&c->words);
	cq_free(c->segs);
	memset(c, 0, sizeof(*c));
}

static int
cache_get(const cq_bpe_cache *c, const char *w, size_t n, uint32_t *ends, size_t *n_out)
{
	int64_t		e = cq_strmap_find(&c->words, w, n);

	if (e < 0)
		return 0;
	const uint32_t *s = c->segs + c->words.vals[e];

	*n_out = s[0];
	memcpy(ends, s + 1, s[0] * sizeof(uint32_t));
	return 1;
}

static cq_code
cache_put(cq_bpe_cache *c, const char *w, size_t n, const uint32_t *ends, size_t k)
{
	if (c->words.n >= c->max_words)
	{
		size_t		max = c->max_words;

		cq_bpe_cache_free(c);
		if (cq_bpe_cache_init(c, max) != CQ_OK)
			return CQ_ENOMEM;
	}
	if (c->segs_len + k + 1 > c->segs_cap)
	{
		size_t		cap = c->segs_cap ? c->segs_cap : 1024;

		while (cap < c->segs_len + k + 1)
			cap *= 2;
		uint32_t   *s = cq_realloc(c->segs, cap * sizeof(uint32_t));

		if (!s)
			return CQ_ENOMEM;
		c->segs = s;
		c->segs_cap = cap;
	}
	int64_t		e;
	cq_code		rc = cq_strmap_intern(&c->words, w, n, &e, NULL);

	if (rc != CQ_OK)
		return rc;
	c->words.vals[e] = (int64_t) c->segs_len;
	c->segs[c->segs_len] = (uint32_t) k;
	memcpy(c->segs + c->segs_len + 1, ends, k * sizeof(uint32_t));
	c->segs_len += k + 1;
	return CQ_OK;
}

/* Symbol id of word[s..e) (+ "</w>" if eow), or -1 if the model lacks it. */
static int32_t
char_symbol(const cq_bpe *bpe, const char *word, size_t s, size_t e, int eow)
{
	char		buf[8];

	if (!eow)
		return (int32_t) cq_strmap_find(&bpe->syms, word + s, e - s);
	memcpy(buf, word + s, e - s);
	memcpy(buf + (e - s), CQ_BPE_EOW, 4);
	return (int32_t) cq_strmap_find(&bpe->syms, buf, e - s + 4);
}

/*
 * The merge loop on symbols sym[0..n) with end offsets end[]; unknown
 * symbols are -1 and never merge.  Returns the new symbol count.
 */
static size_t
merge_symbols(const cq_bpe *bpe, int32_t *sym, uint32_t *end, size_t n)
{
	while (n > 1)
	{
		int32_t		best = INT32_MAX;

		/* each pass is O(n): a word of thousands of symbols polls the host */
		if (n > 1024)
			cq_poll();
		for (size_t i = 0; i + 1 < n; i++)
		{
			if (sym[i] < 0 || sym[i + 1] < 0)
				continue;
			int32_t		r = cq_pairmap_get(&bpe->ranks, sym[i], sym[i + 1]);

			if (r >= 0 && r < best)
				best = r;
		}
		if (best == INT32_MAX)
			break;
		int32_t		a = bpe->left[best],
					b = bpe->right[best];
		size_t		o = 0;

		for (size_t i = 0; i < n; o++)
		{
			if (i + 1 < n && sym[i] == a && sym[i + 1] == b)
			{
				sym[o] = bpe->merged[best];
				end[o] = end[i + 1];
				i += 2;
			}
			else
			{
				sym[o] = sym[i];
				end[o] = end[i];
				i++;
			}
		}
		n = o;
	}
	return n;
}

/* Segment word[0..wlen) without the cache; sym/end have room for wlen + 1. */
static size_t
segment_uncached(const cq_bpe *bpe, const char *word, size_t wlen,
				 int32_t *sym, uint32_t *end)
{
	size_t		n = 0;

	for (size_t p = 0; p < wlen;)
	{
		size_t		cl = cq_utf8_char_len(word + p, word + wlen);
		int			last = (p + cl == wlen);

		sym[n] = char_symbol(bpe, word, p, p + cl, last && bpe->version == 2);
		end[n++] = (uint32_t) (p + cl);
		p += cl;
	}
	if (bpe->version == 1)
	{
		/* codes 0.1: the end-of-word marker is a symbol of its own */
		sym[n] = (int32_t) cq_strmap_find(&bpe->syms, CQ_BPE_EOW, 4);
		end[n++] = (uint32_t) wlen;
	}
	n = merge_symbols(bpe, sym, end, n);
	/* a lone "</w>" (version 0.1) has an empty span: drop it */
	if (n > 1 && end[n - 1] == end[n - 2])
		n--;
	return n;
}

cq_code
cq_bpe_segment_word(const cq_bpe *bpe, cq_bpe_cache *cache,
					const char *word, size_t wlen, uint32_t *ends, size_t *n_out)
{
	if (wlen == 0)
	{
		*n_out = 0;
		return CQ_OK;
	}
	if (cq_utf8_char_len(word, word + wlen) == wlen)
	{
		/* one character: returned unchanged, as apply_bpe.py does */
		ends[0] = (uint32_t) wlen;
		*n_out = 1;
		return CQ_OK;
	}
	if (cache && cache_get(cache, word, wlen, ends, n_out))
		return CQ_OK;

	int32_t		sym_stack[128];
	uint32_t	end_stack[128];
	int32_t    *sym = sym_stack;
	uint32_t   *end = end_stack;

	if (wlen + 1 > 128)
	{
		sym = cq_alloc((wlen + 1) * sizeof(int32_t));
		end = cq_alloc((wlen + 1) * sizeof(uint32_t));
		if (!sym || !end)
		{
			cq_free(sym);
			cq_free(end);
			return CQ_ENOMEM;
		}
	}
	size_t		n = segment_uncached(bpe, word, wlen, sym, end);

	memcpy(ends, end, n * sizeof(uint32_t));
	*n_out = n;
	if (sym != sym_stack)
	{
		cq_free(sym);
		cq_free(end);
	}
	return cache ? cache_put(cache, word, wlen, ends, n) : CQ_OK;
}

cq_code
cq_bpe_tokenize(const cq_bpe *bpe, cq_bpe_cache *cache,
				const char *text, size_t len, cq_tokens *out)
{
	if (!bpe)
		return cq_whitespace_tokenize(text, len, out);

	uint32_t	ends_stack[128];
	uint32_t   *ends = ends_stack;
	size_t		ends_cap = 128;
	size_t		pos = 0,
				s,
				wl,
				k;
	cq_code		rc = CQ_OK;

	cq_tokens_clear(out);
	while (rc == CQ_OK && cq_next_word(text, len, &pos, &s, &wl))
	{
		if (wl > ends_cap)
		{
			if (ends != ends_stack)
				cq_free(ends);
			ends = cq_alloc(wl * sizeof(uint32_t));
			ends_cap = wl;
			if (!ends)
				return CQ_ENOMEM;
		}
		rc = cq_bpe_segment_word(bpe, cache, text + s, wl, ends, &k);
		for (size_t i = 0, b = 0; rc == CQ_OK && i < k; b = ends[i++])
			rc = cq_tokens_push(out, text + s + b, ends[i] - b,
								i + 1 < k ? CQ_BPE_SEP : NULL);
	}
	if (ends != ends_stack)
		cq_free(ends);
	return rc;
}

char *
cq_bpe_apply(const cq_bpe *bpe, cq_bpe_cache *cache,
			 const char *text, size_t len, size_t *out_len)
{
	cq_tokens	t;
	char	   *s = NULL;

	cq_tokens_init(&t);
	if (cq_bpe_tokenize(bpe, cache, text, len, &t) == CQ_OK)
		s = cq_tokens_join(&t, out_len);
	cq_tokens_free(&t);
	return s;
}
