/*
 * The entry point of the "train" job kind (job_kinds.c).
 */
#ifndef CORPQ_TRAIN_JOB_H
#define CORPQ_TRAIN_JOB_H

#include "pg/jobs/jobs.h"

void		train_job(CorpqJob *job);

#endif
