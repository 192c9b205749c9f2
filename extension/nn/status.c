#include "nn/status.h"

#include <stdarg.h>
#include <stdio.h>

cq_nn_status
cq_nn_fail(cq_nn_error *err, cq_nn_status code, const char *fmt, ...)
{
	va_list		ap;

	if (err)
	{
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return code;
}
