/*
 * The "train" job kind (train_job.c).
 */
#ifndef CORPQ_TRAIN_JOB_H
#define CORPQ_TRAIN_JOB_H

#include "pg/jobs/jobs.h"

/* _PG_init's call for train/: register the "train" job kind. */
void		corpq_train_init(void);

#endif
