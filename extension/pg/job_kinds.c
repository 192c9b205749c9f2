/*
 * The registry of job kinds: each kind's entry function lives with its feature.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "pg/antap/antap.h"
#include "pg/jobs/jobs.h"
#include "pg/lexicon/lexicon_catalog.h"
#include "pg/model/translate.h"
#include "pg/pipeline/pipeline_kinds.h"
#include "pg/train/train_job.h"

static const CorpqJobKind kinds[] = {
	{"antap_train", antap_train_job, true},
	{"lexicon_train", lexicon_train_job, true},
	{"rejuvenate", rejuvenate_job, true},
	{"self_train", self_train_job, true},
	{"train", train_job, true},
	{"translate", translate_job, true},
	{NULL, NULL, false}
};

const CorpqJobKind *
corpq_job_kind(const char *kind)
{
	for (const CorpqJobKind *k = kinds; k->kind; k++)
		if (strcmp(k->kind, kind) == 0)
			return k;
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
