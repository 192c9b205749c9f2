#include "align/status.h"

#include <stdarg.h>
#include <stdio.h>

int
cq_align_fail(cq_align_error *err, int code, const char *fmt,...)
{
	if (err)
	{
		va_list		ap;

		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

bool
cq_align_progress_stop(const cq_align_progress *p, int64_t done, int64_t total)
{
	if (p == NULL || p->fn == NULL)
		return false;
	if (done != total && (p->every <= 0 || done % p->every != 0))
		return false;
	return p->fn(p->arg, done, total);
}

cq_code
cq_align_category(int code)
{
	switch (code)
	{
		case CQ_ALIGN_OK:
			return CQ_OK;
		case CQ_ALIGN_STOPPED:
			return CQ_STOPPED;
		case CQ_ALIGN_EINVAL:
			return CQ_EINVAL;
		case CQ_ALIGN_ENOMEM:
			return CQ_ENOMEM;
		case CQ_ALIGN_ECORRUPT:
			return CQ_ECORRUPT;
	}
	return CQ_EINTERNAL;
}
