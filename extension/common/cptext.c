#include "common/cptext.h"

#include <unicode/uchar.h>

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
	b->n = 0;
	if (!cq_cpbuf_reserve(b, len + 1))
		return false;
	b->n = cq_utf8_to_cps((const uint8_t *) s, len, b->v);
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
		o += cq_utf8_put((uint8_t *) out + o, v[i]);
	out[o] = '\0';
	if (len_out)
		*len_out = o;
	return out;
}

bool
cq_py_isspace(int32_t c)
{
	if (c < 0x80)
		return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1C && c <= 0x1F);
	return u_isUWhiteSpace(c);
}

bool
cq_uni_isspace(int32_t c)
{
	if (c < 0x80)
		return c == ' ' || (c >= '\t' && c <= '\r');
	return u_isUWhiteSpace(c);
}
