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
