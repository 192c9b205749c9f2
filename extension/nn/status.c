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

cq_code
cq_nn_category(cq_nn_status status)
{
	switch (status)
	{
		case CQ_NN_OK:
			return CQ_OK;
		case CQ_NN_ENOMEM:
			return CQ_ENOMEM;
		case CQ_NN_EINVAL:
		case CQ_NN_ECONFIG:
			return CQ_EINVAL;
		case CQ_NN_EFORMAT:
		case CQ_NN_EMAGIC:
		case CQ_NN_EVERSION:
		case CQ_NN_ETRUNCATED:
		case CQ_NN_ECHECKSUM:
		case CQ_NN_ETENSOR:
			return CQ_EFORMAT;
		case CQ_NN_EIO:
			return CQ_EIO;
		case CQ_NN_ETOOLONG:
			return CQ_ELIMIT;
		case CQ_NN_ECANCELED:
			return CQ_STOPPED;
		case CQ_NN_EWORKSPACE:
			break;
	}
	return CQ_EINTERNAL;
}
