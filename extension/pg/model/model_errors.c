/*
 * A failed nn core call as an ERROR (model_catalog.h): the SQLSTATE from
 * the core's status, the core's message as the DETAIL.
 */
#include "postgres.h"

#include "nn/status.h"
#include "pg/model/model_catalog.h"

void
corpq_nn_error_report(int code, const char *what, const char *message)
{
	int			e;

	switch (code)
	{
		case CQ_NN_ENOMEM:
			e = ERRCODE_OUT_OF_MEMORY;
			break;
		case CQ_NN_EINVAL:
		case CQ_NN_ECONFIG:
			e = ERRCODE_INVALID_PARAMETER_VALUE;
			break;
		case CQ_NN_EFORMAT:
		case CQ_NN_EMAGIC:
		case CQ_NN_EVERSION:
		case CQ_NN_ETRUNCATED:
		case CQ_NN_ECHECKSUM:
		case CQ_NN_ETENSOR:
			e = ERRCODE_INVALID_BINARY_REPRESENTATION;
			break;
		case CQ_NN_ETOOLONG:
			/* a sentence beyond the model's positions: the message names the limit */
			e = ERRCODE_PROGRAM_LIMIT_EXCEEDED;
			break;
		case CQ_NN_ECANCELED:
			e = ERRCODE_QUERY_CANCELED;
			break;
		default:
			e = ERRCODE_INTERNAL_ERROR;
			break;
	}
	ereport(ERROR,
			(errcode(e),
			 errmsg("%s", what),
			 message && message[0] ? errdetail("%s.", message) : 0));
	pg_unreachable();
}
