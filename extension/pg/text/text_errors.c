/*
 * The text subsystem's preconditions and errors: the UTF-8 database check
 * and the ERROR for a failed text core call (text_catalog.h).
 */
#include "postgres.h"

#include "mb/pg_wchar.h"

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
	int			errcode_value;

	switch (code)
	{
		case CQ_TEXT_ENOMEM:
			errcode_value = ERRCODE_OUT_OF_MEMORY;
			break;
		case CQ_TEXT_ERANGE:
			errcode_value = ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;
			break;
		default:
			errcode_value = ERRCODE_INVALID_PARAMETER_VALUE;
			break;
	}
	ereport(ERROR,
			(errcode(errcode_value),
			 errmsg("%s", what),
			 detail && detail[0] ? errdetail("%s", detail) : 0));
	pg_unreachable();
}
