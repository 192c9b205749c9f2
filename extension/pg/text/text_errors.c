/*
 * The text subsystem's preconditions and errors: the UTF-8 database check
 * and the ERROR for a failed text core call (text.h), through the
 * one reporter of core errors (base/errors.h).
 */
#include "postgres.h"

#include "mb/pg_wchar.h"

#include "pg/base/errors.h"
#include "pg/text/text.h"

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
