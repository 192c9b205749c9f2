/*
 * A failed nn core call as an ERROR (model_catalog.h): the status's category
 * (nn/status.h) through the one reporter of core errors (base/errors.h),
 * the core's message as the DETAIL.
 */
#include "postgres.h"

#include "nn/status.h"
#include "pg/base/errors.h"
#include "pg/model/model_catalog.h"

void
corpq_nn_error_report(int code, const char *what, const char *message)
{
	cq_error	err;

	cq_code		category = cq_nn_category((cq_nn_status) code);

	/* a failure without a status is a broken invariant */
	cq_fail(&err, category == CQ_OK ? CQ_EINTERNAL : category, "%s", message ? message : "");
	corpq_core_error(&err, NULL, "%s", what);
}
