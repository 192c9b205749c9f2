/*
 * The training of the encoder curate() trains when the budget allows
 * (curate_job.h): corpq.train()'s own loop (train_build) with its defaults
 * and a time budget.  A file of its own: train.h brings the network's
 * cq_pair, which curate_job.c's filters header defines otherwise.
 */
#include "postgres.h"

#include "pg/curate/curate_job.h"
#include "pg/train/train.h"

char *
curate_encoder_train(CorpqJob *job, const char *name, int64 model_id, const char *pairs,
					 double seconds, MemoryContext cxt, int64 *updates)
{
	TrainOptions to;

	train_options_parse(NULL, &to);
	to.max_seconds = seconds;
	to.threads = job->threads;
	train_options_resolve_model(&to, true);
	return train_build(job, name, model_id, pairs, NULL, &to, cxt, updates);
}
