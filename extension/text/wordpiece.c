/*
 * A sentence to WordPiece pieces (text/wordpiece.h, steps 1-4): special
 * tokens, the basic tokenizer's words, greedy longest match.
 */
#include "text/wordpiece_impl.h"

#include <string.h>

#include "common/cptext.h"
#include "common/interrupt.h"
#include "common/mem.h"
#include "common/utf8.h"

/* Whether special k is spelled at t[i..n). */
static bool
special_is_at(const cq_wordpiece *wp, int k, const uint32_t *t, size_t i, size_t n)
{
	const cq_cpbuf *s = &wp->special_cp[k];

	return wp->o.special[k] != NULL && s->n <= n - i &&
		memcmp(s->v, t + i, s->n * sizeof(uint32_t)) == 0;
}

/*
 * The special token spelled at t[i..n): the first in order (a regular
 * expression's alternation, as transformers' lower-casing pass protects
 * them) or the longest (the split at special tokens); -1 for none.
 */
static int
special_at(const cq_wordpiece *wp, const uint32_t *t, size_t i, size_t n, bool longest)
{
	int			best = -1;

	for (int k = 0; k < CQ_WORDPIECE_N_SPECIAL; k++)
		if (special_is_at(wp, k, t, i, n))
		{
			if (!longest)
				return k;
			if (best < 0 || wp->special_cp[k].n > wp->special_cp[best].n)
				best = k;
		}
	return best;
}

/* Step 1 of the slow variant: src lower-cased but for special tokens, into dst. */
static cq_code
lower_but_specials(cq_wordpiece *wp, const uint32_t *src, size_t n, cq_cpbuf *dst)
{
	cq_code		rc;

	dst->n = 0;
	for (size_t i = 0; i < n;)
	{
		int			k = special_at(wp, src, i, n, false);
		size_t		len = k >= 0 ? wp->special_cp[k].n : 1;

		if ((i & 65535) == 65535)
			cq_poll();
		if (k >= 0)
		{
			if ((rc = cq_wp_room(dst, len)) != CQ_OK)
				return rc;
			memcpy(dst->v + dst->n, src + i, len * sizeof(uint32_t));
			dst->n += len;
		}
		else if ((rc = cq_wp_lower(src + i, 1, dst, &wp->u16a)) != CQ_OK)
			return rc;
		i += len;
	}
	return CQ_OK;
}

/* w[0..n) in UTF-8 at wp->utf8 + 2, wp->ends[i] the byte offset after character i. */
static cq_code
word_utf8(cq_wordpiece *wp, const uint32_t *w, size_t n)
{
	uint32_t	b = 0;

	if (n > wp->utf8_cap)
	{
		char	   *u = cq_realloc(wp->utf8, 2 + 4 * n);
		uint32_t   *e;

		if (!u)
			return CQ_ENOMEM;
		wp->utf8 = u;
		if (!(e = cq_realloc(wp->ends, n * sizeof(uint32_t))))
			return CQ_ENOMEM;
		wp->ends = e;
		wp->utf8_cap = n;
	}
	for (size_t i = 0; i < n; i++)
	{
		b += (uint32_t) cq_utf8_put((uint8_t *) wp->utf8 + 2 + b, w[i]);
		wp->ends[i] = b;
	}
	return CQ_OK;
}

/*
 * The longest vocabulary piece of the word at character start (byte sb):
 * its end character, or 0 if none.  At start > 0 the piece is "##" +
 * bytes, written over the two bytes before sb (already segmented).
 */
static size_t
longest_piece(const cq_wordpiece *wp, size_t start, uint32_t sb, size_t n,
			  const char **key, size_t *keylen)
{
	size_t		prefix = start > 0 ? 2 : 0;
	size_t		e = n;
	char	   *k = wp->utf8 + 2 + sb - prefix;

	if (prefix)
		memcpy(k, CQ_WORDPIECE_PREFIX, 2);
	while (e > start && prefix + wp->ends[e - 1] - sb > wp->longest)
		e--;
	for (; e > start; e--)
	{
		size_t		len = prefix + wp->ends[e - 1] - sb;

		if (cq_strmap_find(&wp->vocab, k, len) >= 0)
		{
			*key = k;
			*keylen = len;
			return e;
		}
	}
	return 0;
}

static cq_code
push_unk(const cq_wordpiece *wp, cq_tokens *out)
{
	const char *unk = wp->o.special[CQ_WORDPIECE_UNK];

	return cq_tokens_push(out, unk, strlen(unk), NULL) == CQ_OK ? CQ_OK : CQ_ENOMEM;
}

/* Step 4: the pieces of one word (or the unknown token) appended to out. */
static cq_code
wordpiece_word(cq_wordpiece *wp, const uint32_t *w, size_t n, cq_tokens *out)
{
	size_t		n0 = out->n,
				len0 = out->buf_len;
	size_t		start = 0;
	uint32_t	sb = 0;
	cq_code		rc;

	if (n == 0)
		return CQ_OK;
	if (n > (size_t) wp->o.max_input_chars_per_word)
		return push_unk(wp, out);
	if ((rc = word_utf8(wp, w, n)) != CQ_OK)
		return rc;
	while (start < n)
	{
		const char *key;
		size_t		keylen;
		size_t		e = longest_piece(wp, start, sb, n, &key, &keylen);

		cq_poll();
		if (e == 0)
		{
			/* a place no token matches: the whole word is unknown */
			out->n = n0;
			out->buf_len = len0;
			return push_unk(wp, out);
		}
		if (cq_tokens_push(out, key, keylen, NULL) != CQ_OK)
			return CQ_ENOMEM;
		start = e;
		sb = wp->ends[e - 1];
	}
	return CQ_OK;
}

/* Whether w[0..n) is spelled like a special token (transformers' never_split). */
static bool
is_special_word(const cq_wordpiece *wp, const uint32_t *w, size_t n)
{
	for (int k = 0; k < CQ_WORDPIECE_N_SPECIAL; k++)
		if (wp->o.special[k] != NULL && wp->special_cp[k].n == n && special_is_at(wp, k, w, 0, n))
			return true;
	return false;
}

/* Step 3 for one whitespace-separated word (in wp->part), then step 4. */
static cq_code
basic_word(cq_wordpiece *wp, size_t from, size_t n, cq_tokens *out)
{
	const uint32_t *w = wp->part.v + from;
	cq_code		rc;

	if (wp->o.variant == CQ_WORDPIECE_SLOW && is_special_word(wp, w, n))
		return wordpiece_word(wp, w, n, out);
	if (wp->o.lower_case && wp->o.variant == CQ_WORDPIECE_SLOW)
	{
		wp->word.n = 0;
		if ((rc = cq_wp_lower(w, n, &wp->word, &wp->u16a)) != CQ_OK)
			return rc;
		w = wp->word.v;
		n = wp->word.n;
	}
	if (wp->o.strip_accents)
	{
		if ((rc = cq_wp_strip_accents(w, n, &wp->tmp, &wp->u16a, &wp->u16b)) != CQ_OK)
			return rc;
		w = wp->tmp.v;
		n = wp->tmp.n;
	}
	/* every punctuation character alone, the runs between them as words */
	for (size_t i = 0; i < n;)
	{
		size_t		j = i + 1;

		if (!cq_wp_is_punct(w[i]))
			while (j < n && !cq_wp_is_punct(w[j]))
				j++;
		if ((rc = wordpiece_word(wp, w + i, j - i, out)) != CQ_OK)
			return rc;
		i = j;
	}
	return CQ_OK;
}

static void
swap_buf(cq_cpbuf *a, cq_cpbuf *b)
{
	cq_cpbuf	t = *a;

	*a = *b;
	*b = t;
}

/* Step 3 for a part between special tokens, src[0..n) of wp->text. */
static cq_code
basic_part(cq_wordpiece *wp, const uint32_t *src, size_t n, cq_tokens *out)
{
	cq_code		rc;

	if (wp->o.lower_case && wp->o.variant == CQ_WORDPIECE_FAST)
	{
		wp->tmp.n = 0;
		if ((rc = cq_wp_lower(src, n, &wp->tmp, &wp->u16a)) != CQ_OK)
			return rc;
		src = wp->tmp.v;
		n = wp->tmp.n;
	}
	rc = cq_wp_clean(src, n, wp->o.tokenize_chinese_chars, wp->o.variant, &wp->part);
	if (rc == CQ_OK && wp->o.variant == CQ_WORDPIECE_SLOW &&
		(rc = cq_wp_nfc(wp->part.v, wp->part.n, &wp->tmp, &wp->u16a, &wp->u16b)) == CQ_OK)
		swap_buf(&wp->part, &wp->tmp);
	for (size_t i = 0; rc == CQ_OK && i < wp->part.n;)
	{
		size_t		j = i;

		while (j < wp->part.n && !cq_py_isspace(wp->part.v[j]))
			j++;
		if (j > i)
			rc = basic_word(wp, i, j - i, out);
		i = j + 1;
	}
	return rc;
}

/* Steps 2-4 over wp->text: the parts between special tokens, and those. */
static cq_code
split_specials(cq_wordpiece *wp, cq_tokens *out)
{
	const uint32_t *t = wp->text.v;
	size_t		n = wp->text.n;
	size_t		from = 0;
	cq_code		rc = CQ_OK;

	for (size_t i = 0; rc == CQ_OK && i <= n; i++)
	{
		int			k = i < n ? special_at(wp, t, i, n, true) : -1;

		if ((i & 65535) == 65535)
			cq_poll();
		if (k < 0 && i < n)
			continue;
		if (i > from && (rc = basic_part(wp, t + from, i - from, out)) != CQ_OK)
			break;
		if (k < 0)
			break;
		if (cq_tokens_push(out, wp->o.special[k], strlen(wp->o.special[k]), NULL) != CQ_OK)
			return CQ_ENOMEM;
		i += wp->special_cp[k].n - 1;
		from = i + 1;
	}
	return rc;
}

cq_code
cq_wordpiece_tokenize(cq_wordpiece *wp, const char *text, size_t len, cq_tokens *out,
					  cq_error *err)
{
	cq_code		rc;

	cq_tokens_clear(out);
	rc = cq_wp_decode(text, len, wp->o.variant == CQ_WORDPIECE_SLOW && wp->o.lower_case
					  ? &wp->tmp : &wp->text);
	if (rc == CQ_OK && wp->o.variant == CQ_WORDPIECE_SLOW && wp->o.lower_case)
		rc = lower_but_specials(wp, wp->tmp.v, wp->tmp.n, &wp->text);
	if (rc == CQ_OK)
		rc = split_specials(wp, out);
	if (rc == CQ_ELIMIT)
		return cq_fail(err, rc, "text of %zu bytes is longer than 1 GB", len);
	if (rc == CQ_ENOMEM)
		return cq_fail(err, rc, "out of memory segmenting %zu bytes", len);
	if (rc != CQ_OK)
		return cq_fail(err, rc, "ICU failed to normalise the text");
	return CQ_OK;
}

cq_code
cq_wordpiece_apply(cq_wordpiece *wp, const char *text, size_t len, char **out,
				   size_t *out_len, cq_error *err)
{
	cq_tokens	t;
	cq_code		rc;

	*out = NULL;
	cq_tokens_init(&t);
	rc = cq_wordpiece_tokenize(wp, text, len, &t, err);
	if (rc == CQ_OK && !(*out = cq_tokens_join(&t, out_len)))
		rc = cq_fail(err, CQ_ENOMEM, "out of memory");
	cq_tokens_free(&t);
	return rc;
}
