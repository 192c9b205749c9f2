#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>

cq_code
cq_fail(cq_error *err, cq_code code, const char *fmt,...)
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

const char *
cq_code_name(cq_code code)
{
	switch (code)
	{
		case CQ_OK:
			return "ok";
		case CQ_STOPPED:
			return "stopped";
		case CQ_EINVAL:
			return "invalid argument";
		case CQ_ENOTFOUND:
			return "not found";
		case CQ_EMISMATCH:
			return "mismatched inputs";
		case CQ_ERANGE:
			return "out of range";
		case CQ_EFORMAT:
			return "invalid format";
		case CQ_ECORRUPT:
			return "corrupted data";
		case CQ_ENOMEM:
			return "out of memory";
		case CQ_ELIMIT:
			return "limit exceeded";
		case CQ_EIO:
			return "input/output error";
		case CQ_EINTERNAL:
			return "internal error";
	}
	return "unknown error";
}
