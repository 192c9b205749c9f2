/* The pipeline job kinds' entry functions (registered in job_kinds.c). */
#ifndef CORPQ_PIPELINE_KINDS_H
#define CORPQ_PIPELINE_KINDS_H

#include "pg/jobs/jobs.h"

void		rejuvenate_job(CorpqJob *job);
void		self_train_job(CorpqJob *job);

#endif
