#include "metrics/cpbuf.h"

#include "common/mem.h"
#include "common/utf8.h"

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
		size_t		k;

		if (p[i] < 0x80)
		{
			cq_cpbuf_put(b, p[i++]);
			continue;
		}
		k = cq_utf8_decode(p + i, len - i, &cp);
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
