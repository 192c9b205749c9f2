/*
 * The registry of job kinds.  Each subsystem registers the kinds it defines
 * from its init function at module start-up (every process that loads corpq
 * runs _PG_init, so the table is the same in backends, workers and the
 * recovery worker); the kinds' entry functions live with their features.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "pg/jobs/jobs.h"

/* More than corpq defines, so a new kind needs no change here. */
#define MAX_KINDS 32

static CorpqJobKind kinds[MAX_KINDS];
static int	n_kinds = 0;

void
corpq_job_register_kind(const char *kind, corpq_job_fn run, bool restartable)
{
	if (corpq_job_kind(kind) != NULL)
		elog(ERROR, "corpq job kind \"%s\" is registered twice", kind);
	if (n_kinds == MAX_KINDS)
		elog(ERROR, "too many corpq job kinds (at most %d)", MAX_KINDS);
	kinds[n_kinds].kind = kind;
	kinds[n_kinds].run = run;
	kinds[n_kinds].restartable = restartable;
	n_kinds++;
}

const CorpqJobKind *
corpq_job_kind(const char *kind)
{
	for (int i = 0; i < n_kinds; i++)
		if (strcmp(kinds[i].kind, kind) == 0)
			return &kinds[i];
	return NULL;
}

PG_FUNCTION_INFO_V1(corpq_job_kind_restartable);

/* corpq.job_kind_restartable(kind): used by recovery to requeue orphans. */
Datum
corpq_job_kind_restartable(PG_FUNCTION_ARGS)
{
	const CorpqJobKind *k = corpq_job_kind(text_to_cstring(PG_GETARG_TEXT_PP(0)));

	PG_RETURN_BOOL(k != NULL && k->restartable);
}
