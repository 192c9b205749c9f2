#include "metrics/cpbuf.h"

#include "common/mem.h"

void
cq_cpbuf_free(cq_cpbuf *b)
{
	cq_free(b->v);
	b->v = NULL;
	b->n = b->cap = 0;
}

bool
cq_cpbuf_reserve(cq_cpbuf *b, size_t n)
{
	size_t		cap;
	uint32_t   *v;

	if (n <= b->cap)
		return true;
	cap = b->cap ? b->cap : 64;
	while (cap < n)
		cap *= 2;
	v = b->v ? cq_realloc(b->v, cap * sizeof(uint32_t)) : cq_alloc(cap * sizeof(uint32_t));
	if (v == NULL)
		return false;
	b->v = v;
	b->cap = cap;
	return true;
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if it is not one. */
static int
utf8_seq(const unsigned char *s, size_t avail, uint32_t *cp)
{
	unsigned char c = s[0];
	int			len;
	uint32_t	v;

	if (c < 0x80)
	{
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF)
		len = 2, v = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3, v = c & 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4, v = c & 0x07;
	else
		return 0;
	if ((size_t) len > avail)
		return 0;
	for (int i = 1; i < len; i++)
	{
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3F);
	}
	/* overlong forms, surrogates and values beyond U+10FFFF are invalid */
	if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10FFFF)) ||
		(v >= 0xD800 && v <= 0xDFFF))
		return 0;
	*cp = v;
	return len;
}

bool
cq_cpbuf_from_utf8(cq_cpbuf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *) s;
	size_t		i = 0;

	b->n = 0;
	if (!cq_cpbuf_reserve(b, len + 1))
		return false;
	while (i < len)
	{
		uint32_t	cp;
		int			k;

		if (p[i] < 0x80)
		{
			cq_cpbuf_put(b, p[i++]);
			continue;
		}
		k = utf8_seq(p + i, len - i, &cp);
		if (k == 0)
		{
			cp = 0xFFFD;
			k = 1;
		}
		cq_cpbuf_put(b, cp);
		i += k;
	}
	return true;
}

char *
cq_utf8_from_cps(const uint32_t *v, size_t n, size_t *len_out)
{
	char	   *out = cq_alloc(4 * n + 1);
	size_t		o = 0;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
	{
		uint32_t	c = v[i];

		if (c < 0x80)
			out[o++] = (char) c;
		else if (c < 0x800)
		{
			out[o++] = (char) (0xC0 | (c >> 6));
			out[o++] = (char) (0x80 | (c & 0x3F));
		}
		else if (c < 0x10000)
		{
			out[o++] = (char) (0xE0 | (c >> 12));
			out[o++] = (char) (0x80 | ((c >> 6) & 0x3F));
			out[o++] = (char) (0x80 | (c & 0x3F));
		}
		else
		{
			out[o++] = (char) (0xF0 | (c >> 18));
			out[o++] = (char) (0x80 | ((c >> 12) & 0x3F));
			out[o++] = (char) (0x80 | ((c >> 6) & 0x3F));
			out[o++] = (char) (0x80 | (c & 0x3F));
		}
	}
	out[o] = '\0';
	if (len_out)
		*len_out = o;
	return out;
}
