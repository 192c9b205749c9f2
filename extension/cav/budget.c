#include "cav/budget.h"

#include "common/mem.h"

#include <stdarg.h>
#include <stdio.h>

cav_code
cav_budget_resize(cav_budget *b, void **p, size_t old_size, size_t new_size,
				  cav_error *err)
{
	size_t		after = b->bytes - old_size + new_size;
	void	   *q;

	if (b->limit && new_size > old_size && after > b->limit)
		return cav_fail(err, CAV_ECAP,
						"CAV state would need %zu bytes, above the limit of %zu",
						after, b->limit);
	q = cq_realloc(*p, new_size);
	if (q == NULL)
		return cav_fail(err, CAV_ENOMEM, "out of memory allocating %zu bytes",
						new_size);
	*p = q;
	b->bytes = after;
	if (after > b->peak)
		b->peak = after;
	return CAV_OK;
}

void
cav_budget_release(cav_budget *b, void *p, size_t size)
{
	if (p == NULL)
		return;
	cq_free(p);
	b->bytes -= size;
}

cav_code
cav_fail(cav_error *err, cav_code code, const char *fmt,...)
{
	va_list		ap;

	if (err)
	{
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}
