/*
 * The glue's reporter of core errors; the mapping is tabled in errors.h.
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "utils/lsyscache.h"

#include "pg/base/errors.h"

int
corpq_core_sqlstate(cq_code code)
{
	switch (code)
	{
		case CQ_EINVAL:
		case CQ_ENOTFOUND:
		case CQ_EMISMATCH:
			return ERRCODE_INVALID_PARAMETER_VALUE;
		case CQ_ERANGE:
			return ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;
		case CQ_EFORMAT:
			return ERRCODE_INVALID_BINARY_REPRESENTATION;
		case CQ_ECORRUPT:
			return ERRCODE_DATA_CORRUPTED;
		case CQ_ENOMEM:
			return ERRCODE_OUT_OF_MEMORY;
		case CQ_ELIMIT:
			return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
		case CQ_EIO:
			return ERRCODE_IO_ERROR;
		case CQ_STOPPED:
			return ERRCODE_QUERY_CANCELED;
		case CQ_OK:
		case CQ_EINTERNAL:
			break;
	}
	return ERRCODE_INTERNAL_ERROR;
}

static void report(const cq_error *err, int sqlstate, const char *hint, const char *fmt,
				   va_list ap) pg_attribute_printf(4, 0) pg_attribute_noreturn();

/* The ERROR of corpq_core_error and corpq_core_error_code. */
static void
report(const cq_error *err, int sqlstate, const char *hint, const char *fmt, va_list ap)
{
	StringInfoData what;
	const char *msg = err->msg;
	size_t		len = strnlen(msg, sizeof(err->msg));

	Assert(err->code != CQ_OK);
	initStringInfo(&what);
	for (;;)
	{
		va_list		copy;
		int			needed;

		va_copy(copy, ap);
		needed = appendStringInfoVA(&what, fmt, copy);
		va_end(copy);
		if (needed == 0)
			break;
		enlargeStringInfo(&what, needed);
	}
	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg("%s", what.data),
			 len > 0 ? errdetail("%.*s%s", (int) len, msg,
								 msg[len - 1] == '.' ? "" : ".") : 0,
			 hint ? errhint("%s", hint) : 0));
	pg_unreachable();
}

void
corpq_core_error(const cq_error *err, const char *hint, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	report(err, corpq_core_sqlstate(err->code), hint, fmt, ap);
	va_end(ap);
}

void
corpq_core_error_code(const cq_error *err, int sqlstate, const char *hint, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	report(err, sqlstate, hint, fmt, ap);
	va_end(ap);
}

void
corpq_require_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument %s of %s.%s() must not be null", what,
						get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid)),
						get_func_name(fcinfo->flinfo->fn_oid))));
}

void
corpq_core_fail(cq_code code, const char *what, const char *detail)
{
	cq_error	err;

	cq_fail(&err, code == CQ_OK ? CQ_EINTERNAL : code, "%s", detail ? detail : "");
	corpq_core_error(&err, NULL, "%s", what);
}
