/*
 * The pipeline job kinds: their entry functions (rejuvenate.c, self_train.c),
 * registered by the subsystem's init (pipeline_submit.c), and their options
 * (the tables in pipeline_options.c).
 */
#ifndef CORPQ_PIPELINE_KINDS_H
#define CORPQ_PIPELINE_KINDS_H

#include "postgres.h"

#include "pg/base/options.h"
#include "pg/jobs/jobs.h"
#include "pg/pipeline/pipeline_synthetic.h"

void		rejuvenate_job(CorpqJob *job);
void		self_train_job(CorpqJob *job);

/* ---- options (pipeline_options.c) ---- */

/* self_train()'s sampling option. */
typedef enum SelfTrainSampling
{
	SAMPLING_UNCSAMP, SAMPLING_RANDOM, SAMPLING_DWF
} SelfTrainSampling;

/* corpq.rejuvenate()'s options (rejuvenate.c). */
typedef struct CorpqRejuvenateOptions
{
	char	   *name;
	double		ratio;
	char	   *identifier;
	char	   *rejuvenator;
	bool		train_final;
	int			beam;
	int64		seed;
	int			score_rows;
	char	   *src_vocab;
	char	   *tgt_vocab;
	PipelineSynthetic synthetic;
	int			gate;			/* PipelineGate */
	int			threads;		/* the job's (pg/jobs/jobs.h) */
} CorpqRejuvenateOptions;
extern const CorpqOptionTable corpq_rejuvenate_options;

/* corpq.self_train()'s options (self_train.c). */
typedef struct CorpqSelfTrainOptions
{
	char	   *name;
	int64		k;
	int			sampling;
	double		r;
	double		beta;
	int64		seed;
	int			beam;
	PipelineSynthetic synthetic;
	int			gate;			/* PipelineGate */
	bool		tag_synthetic;
	char	   *tag;
	char	   *dev;
	char	   *src_vocab;
	char	   *tgt_vocab;
	int			threads;		/* the job's (pg/jobs/jobs.h) */
} CorpqSelfTrainOptions;
extern const CorpqOptionTable corpq_self_train_options;

/* _PG_init's call for pipeline/: register the pipeline job kinds. */
void		corpq_pipeline_init(void);

#endif
