#include "filters/utext.h"

#include "common/mem.h"
#include "common/utf8.h"

cq_code
cq_utext_init(cq_utext *t, const char *s, size_t bytes, cq_error *err)
{
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
	/* int32_t and uint32_t may alias (C11 6.5p7); every value is <= U+10FFFF */
	t->n = cq_utf8_to_cps((const uint8_t *) s, bytes, (uint32_t *) t->cp);
	return CQ_OK;
}

void
cq_utext_free(cq_utext *t)
{
	cq_free(t->cp);
	t->cp = NULL;
	t->n = 0;
}
