/*
 * The text subsystem's preconditions and errors: the UTF-8 database check
 * and the ERROR for a failed text core call (text_catalog.h), through the
 * one reporter of core errors (base/errors.h).
 */
#include "postgres.h"

#include "mb/pg_wchar.h"

#include "pg/base/errors.h"
#include "pg/text/text_catalog.h"

void
corpq_require_utf8(void)
{
	int			enc = GetDatabaseEncoding();

	if (enc != PG_UTF8 && enc != PG_SQL_ASCII)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("corpq text functions need a UTF8 database"),
				 errdetail("The database encoding is %s.", GetDatabaseEncodingName())));
}

void
corpq_text_error(int code, const char *what, const char *detail)
{
	cq_error	err;

	cq_code		category = cq_text_category((cq_text_code) code);

	/* a failure without a code is a broken invariant */
	cq_fail(&err, category == CQ_OK ? CQ_EINTERNAL : category, "%s", detail ? detail : "");
	corpq_core_error(&err, NULL, "%s", what);
}
