/*
 * Core errors (common/error.h) as PostgreSQL ERRORs: the one place that maps
 * a cq_code to a SQLSTATE and puts the core's message in the DETAIL.
 *
 *   cq_code        SQLSTATE
 *   CQ_EINVAL      22023 invalid_parameter_value
 *   CQ_ENOTFOUND   22023 invalid_parameter_value
 *   CQ_EMISMATCH   22023 invalid_parameter_value
 *   CQ_ERANGE      22003 numeric_value_out_of_range
 *   CQ_EFORMAT     22P03 invalid_binary_representation
 *   CQ_ECORRUPT    XX001 data_corrupted
 *   CQ_ENOMEM      53200 out_of_memory
 *   CQ_ELIMIT      54000 program_limit_exceeded
 *   CQ_EIO         58030 io_error
 *   CQ_STOPPED     57014 query_canceled
 *   CQ_EINTERNAL   XX000 internal_error (and anything else)
 *
 * The main message is the caller's: what was being done ("could not combine
 * CAVs"), in PostgreSQL style.  The core's message follows as the DETAIL,
 * with a period added (core messages are lower-case clauses without one;
 * they are not capitalised, since many start with an identifier such as
 * l_max).  When the same bytes mean different things to different callers
 * (a CAV from a client is malformed input, one read back from a table is
 * corrupted), the caller changes err->code to the category that holds
 * before reporting.  A caller that needs a SQLSTATE no category gives (text
 * in a known format that does not parse: 22P02) names it with
 * corpq_core_error_code.  No other glue code formats a core error.
 */
#ifndef CORPQ_BASE_ERRORS_H
#define CORPQ_BASE_ERRORS_H

#include "postgres.h"

#include "fmgr.h"

#include "common/error.h"

/*
 * ERROR (null_value_not_allowed) "argument <what> of corpq.f() must not be
 * null" when argument argno is NULL: for the functions that are not STRICT
 * because a NULL there is a mistake the caller should hear about rather than
 * a NULL result.  The function's name comes from fcinfo.
 */
void		corpq_require_arg(FunctionCallInfo fcinfo, int argno, const char *what);

/* The SQLSTATE of a core error category (ERRCODE_INTERNAL_ERROR for CQ_OK). */
int			corpq_core_sqlstate(cq_code code);

/*
 * ERROR for a failed core call: SQLSTATE from err->code, errmsg from fmt,
 * errdetail the core's message, errhint hint (NULL: none).
 */
void		corpq_core_error(const cq_error *err, const char *hint, const char *fmt,...)
			pg_attribute_printf(3, 4) pg_attribute_noreturn();

/*
 * The same with a SQLSTATE chosen by the caller instead of the table's: for
 * the few sites where the failure means something more precise to the user
 * than its category (say why at the call).
 */
void		corpq_core_error_code(const cq_error *err, int sqlstate, const char *hint,
								  const char *fmt,...)
			pg_attribute_printf(4, 5) pg_attribute_noreturn();

/*
 * The same from a returned code and its message, for a core call that
 * reports with a bare code and no cq_error (the text containers: strmap,
 * pairmap, tokens, whose failures are CQ_ENOMEM and CQ_ELIMIT); a call that
 * filled a cq_error goes to corpq_core_error.  what: the main message; a
 * failure reported with CQ_OK is a broken invariant, CQ_EINTERNAL.
 */
void		corpq_core_fail(cq_code code, const char *what, const char *detail)
			pg_attribute_noreturn();

#endif
