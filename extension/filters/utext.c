#include "filters/utext.h"

#include "common/mem.h"

#include <unicode/uchar.h>
#include <unicode/utf8.h>

cq_code
cq_utext_init(cq_utext *t, const char *s, size_t bytes, cq_error *err)
{
	int32_t		i = 0;
	size_t		n = 0;

	t->s = s;
	t->bytes = bytes;
	t->cp = NULL;
	t->n = 0;
	if (bytes > INT32_MAX)
		return cq_fail(err, CQ_ELIMIT, "text of %zu bytes is longer than 2 GB", bytes);
	/* never more code points than bytes; +1 so that empty text allocates */
	t->cp = cq_alloc((bytes + 1) * sizeof(int32_t));
	if (!t->cp)
		return cq_fail(err, CQ_ENOMEM, "out of memory decoding %zu bytes", bytes);
	while (i < (int32_t) bytes)
	{
		UChar32		c;

		U8_NEXT_OR_FFFD((const uint8_t *) s, i, (int32_t) bytes, c);
		t->cp[n++] = c;
	}
	t->n = n;
	return CQ_OK;
}

void
cq_utext_free(cq_utext *t)
{
	cq_free(t->cp);
	t->cp = NULL;
	t->n = 0;
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
