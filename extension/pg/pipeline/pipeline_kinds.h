/*
 * The pipeline job kinds: their entry functions (rejuvenate.c, self_train.c),
 * registered by the subsystem's init (pipeline_submit.c).
 */
#ifndef CORPQ_PIPELINE_KINDS_H
#define CORPQ_PIPELINE_KINDS_H

#include "pg/jobs/jobs.h"

void		rejuvenate_job(CorpqJob *job);
void		self_train_job(CorpqJob *job);

/* _PG_init's call for pipeline/: register the pipeline job kinds. */
void		corpq_pipeline_init(void);

#endif
