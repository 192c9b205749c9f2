/*
 * Sentences longer than a model accepts: the on_too_long option of the
 * functions that run a model (pg/score, pg/embed), which a model session's
 * encoding obeys (model_session.h).  Apart from model_session.h so that
 * dual_xent.h, which the filters include, needs no core model header.
 */
#ifndef CORPQ_MODEL_TOO_LONG_H
#define CORPQ_MODEL_TOO_LONG_H

#include "postgres.h"

#include "fmgr.h"

/*
 * What a pair gets when a side is longer than the model accepts
 * (max_positions - 1 tokens).  Hours into a corpus, one overlong line must
 * not cost the statement, so NULL is the default; 'error' stops at the
 * first one, naming the limit.
 */
typedef enum CorpqTooLong
{
	CORPQ_TOO_LONG_NULL,		/* no score (NULL, no rows), counted */
	CORPQ_TOO_LONG_ERROR		/* ERROR program_limit_exceeded */
} CorpqTooLong;

/* The names on_too_long takes, NULL-terminated, in CorpqTooLong's order. */
extern const char *const corpq_too_long_names[];

/* The value of an on_too_long argument; ERROR listing the valid ones. */
CorpqTooLong corpq_too_long_from_name(const char *name);

/*
 * The on_too_long argument at position argno of a SQL call, or 'null' when
 * the call has fewer arguments: each scoring function has a signature
 * without it (0.1.0's, kept for the views and indexes that call it) on the
 * same C function, and a library newer than the catalog is called through
 * the older definitions until ALTER EXTENSION corpq UPDATE.  Arguments
 * beyond PG_NARGS() are not there to read.
 */
CorpqTooLong corpq_too_long_arg(FunctionCallInfo fcinfo, int argno);

#endif
