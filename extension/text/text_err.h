/*
 * Error reporting for the text core: a return code plus a message the glue
 * can pass to ereport, and the 1-based line of the input when one applies.
 */
#ifndef CQ_TEXT_ERR_H
#define CQ_TEXT_ERR_H

#include "common/error.h"

#include <stdarg.h>

typedef enum cq_text_code
{
	CQ_TEXT_OK = 0,
	CQ_TEXT_ENOMEM = -1,		/* an allocation failed */
	CQ_TEXT_EINVAL = -2,		/* malformed input (see line) */
	CQ_TEXT_ERANGE = -3			/* an id or size out of range */
} cq_text_code;

typedef struct cq_text_err
{
	cq_text_code code;
	int			line;			/* input line of the problem, 0 if none */
	char		msg[256];
} cq_text_err;

/* The category of common/error.h a code belongs to. */
cq_code		cq_text_category(cq_text_code code);

/* Fill *err (may be NULL) and return code. */
cq_text_code cq_text_fail(cq_text_err *err, cq_text_code code, int line,
						  const char *fmt,...)
			__attribute__((format(printf, 4, 5)));

#endif
