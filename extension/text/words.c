#include "text/words.h"

#include <string.h>

#include "common/mem.h"
#include "common/error.h"
#include "common/utf8.h"

size_t
cq_utf8_char_len(const char *s, const char *end)
{
	uint32_t	cp;

	return cq_utf8_next((const uint8_t *) s, (size_t) (end - s), &cp);
}

int
cq_next_word(const char *text, size_t len, size_t *pos,
			 size_t *start, size_t *wlen)
{
	size_t		p = *pos;

	while (p < len && cq_is_space((unsigned char) text[p]))
		p++;
	if (p >= len)
	{
		*pos = p;
		return 0;
	}
	*start = p;
	while (p < len && !cq_is_space((unsigned char) text[p]))
		p++;
	*wlen = p - *start;
	*pos = p;
	return 1;
}

cq_code
cq_count_words(cq_strmap *counts, const char *text, size_t len)
{
	size_t		pos = 0,
				s,
				n;

	while (cq_next_word(text, len, &pos, &s, &n))
	{
		int64_t		e;
		cq_code		rc = cq_strmap_intern(counts, text + s, n, &e, NULL);

		if (rc != CQ_OK)
			return rc;
		counts->vals[e]++;
	}
	return CQ_OK;
}

void
cq_tokens_init(cq_tokens *t)
{
	memset(t, 0, sizeof(*t));
}

void
cq_tokens_free(cq_tokens *t)
{
	cq_free(t->buf);
	cq_free(t->off);
	cq_free(t->len);
	memset(t, 0, sizeof(*t));
}

void
cq_tokens_clear(cq_tokens *t)
{
	t->n = 0;
	t->buf_len = 0;
}

cq_code
cq_tokens_push(cq_tokens *t, const char *s, size_t n, const char *suffix)
{
	size_t		sl = suffix ? strlen(suffix) : 0;
	size_t		need = t->buf_len + n + sl + 1;

	if (need > t->buf_cap)
	{
		size_t		cap = t->buf_cap ? t->buf_cap : 128;

		while (cap < need)
			cap *= 2;
		char	   *b = cq_realloc(t->buf, cap);

		if (!b)
			return CQ_ENOMEM;
		t->buf = b;
		t->buf_cap = cap;
	}
	if (t->n == t->n_cap)
	{
		size_t		nc = t->n_cap ? t->n_cap * 2 : 16;
		size_t	   *o = cq_realloc(t->off, nc * sizeof(size_t));

		if (!o)
			return CQ_ENOMEM;
		t->off = o;
		uint32_t   *l = cq_realloc(t->len, nc * sizeof(uint32_t));

		if (!l)
			return CQ_ENOMEM;
		t->len = l;
		t->n_cap = nc;
	}
	memcpy(t->buf + t->buf_len, s, n);
	if (sl)
		memcpy(t->buf + t->buf_len + n, suffix, sl);
	t->buf[t->buf_len + n + sl] = '\0';
	t->off[t->n] = t->buf_len;
	t->len[t->n] = (uint32_t) (n + sl);
	t->n++;
	t->buf_len = need;
	return CQ_OK;
}

cq_code
cq_count_tokens(cq_strmap *counts, const cq_tokens *t)
{
	for (size_t i = 0; i < t->n; i++)
	{
		int64_t		e;
		cq_code		rc = cq_strmap_intern(counts, t->buf + t->off[i], t->len[i], &e, NULL);

		if (rc != CQ_OK)
			return rc;
		counts->vals[e]++;
	}
	return CQ_OK;
}

cq_code
cq_whitespace_tokenize(const char *text, size_t len, cq_tokens *out)
{
	size_t		pos = 0,
				s,
				n;

	cq_tokens_clear(out);
	while (cq_next_word(text, len, &pos, &s, &n))
		if (cq_tokens_push(out, text + s, n, NULL) != CQ_OK)
			return CQ_ENOMEM;
	return CQ_OK;
}

char *
cq_tokens_join(const cq_tokens *t, size_t *out_len)
{
	size_t		total = 0;

	for (size_t i = 0; i < t->n; i++)
		total += t->len[i] + 1;
	char	   *s = cq_alloc(total ? total : 1);

	if (!s)
		return NULL;
	size_t		p = 0;

	for (size_t i = 0; i < t->n; i++)
	{
		if (i)
			s[p++] = ' ';
		memcpy(s + p, t->buf + t->off[i], t->len[i]);
		p += t->len[i];
	}
	s[p] = '\0';
	if (out_len)
		*out_len = p;
	return s;
}
