#include "text/text_err.h"

#include <stdio.h>

cq_text_code
cq_text_fail(cq_text_err *err, cq_text_code code, int line, const char *fmt,...)
{
	va_list		ap;

	if (err)
	{
		err->code = code;
		err->line = line;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

cq_code
cq_text_category(cq_text_code code)
{
	switch (code)
	{
		case CQ_TEXT_OK:
			return CQ_OK;
		case CQ_TEXT_ENOMEM:
			return CQ_ENOMEM;
		case CQ_TEXT_EINVAL:
			return CQ_EINVAL;
		case CQ_TEXT_ERANGE:
			return CQ_ERANGE;
	}
	return CQ_EINTERNAL;
}
