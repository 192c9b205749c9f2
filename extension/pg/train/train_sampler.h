/*
 * Which corpus each micro-batch of a training job comes from.
 *
 * A strategy is a row of train_sampler.c's table.  A static one sets the
 * corpus probabilities once (init); a dynamic one (MultiUAT and the like)
 * also has an update hook that the job calls every sampler_every updates
 * with the model being trained and the dev pairs of each training corpus,
 * and that rewrites prob[].  Adding a strategy = a new file with its init
 * (and update) plus one table entry.
 *
 * Draws are a pure function of (seed, update, micro-batch): nothing but
 * prob[] (saved with every checkpoint) is needed to resume exactly.
 */
#ifndef CORPQ_TRAIN_SAMPLER_H
#define CORPQ_TRAIN_SAMPLER_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/jsonb.h"

#include "nn/model/model.h"
#include "pg/train/train.h"

typedef struct TrainSampler TrainSampler;

/* What a dynamic strategy's update hook may look at. */
typedef struct TrainSamplerView
{
	CorpqJob   *job;
	const cq_model *model;		/* the weights being trained (read only) */
	int64		step;			/* updates done */
	const TrainCorpus *dev;		/* dev pairs, NULL without a dev query */
	const int  *dev_label;		/* [n] dev label of training corpus i, -1 none */
	int			max_tokens;		/* for train_validate's batches */
	const TrainCorpus *corpus;	/* the training pairs */
	int64		tokens_done;	/* target tokens trained on so far */
} TrainSamplerView;

typedef struct TrainStrategy
{
	const char *name;
	/* true: each corpus has its own batcher and epochs; false: one stream */
	bool		per_corpus;
	/* set s->prob[] from s->size[] and the options */
	void		(*init) (TrainSampler *s, const TrainOptions *o);
	/* NULL for static strategies; else rewrite s->prob[] */
	void		(*update) (TrainSampler *s, const TrainSamplerView *view);
	/* optional, NULL for static strategies: */
	/* checks before the first update (dev labels, corpus count); ERROR to stop */
	void		(*check) (TrainSampler *s, const TrainSamplerView *view);
	/* the private state as JSON, saved with each checkpoint, and its restore */
	char	   *(*save) (TrainSampler *s);
	void		(*load) (TrainSampler *s, const char *json);
	/* in each update's log transaction (SPI connected): write history rows */
	void		(*log) (TrainSampler *s, int64 job);
	/* a JSON value for the job's result ("sampler") */
	char	   *(*result) (TrainSampler *s, double training_seconds);
} TrainStrategy;

struct TrainSampler
{
	const TrainStrategy *strategy;
	int			n;				/* corpora (labels of the training corpus) */
	const char *const *names;	/* [n] their labels */
	const long *size;			/* [n] kept pairs of each */
	double	   *prob;			/* [n] draw probabilities, sum 1 */
	int64	   *draws;			/* [n] micro-batches drawn so far */
	uint64		seed;
	void	   *priv;			/* a strategy's own state (palloc'd in the job) */
};

/* NULL for an unknown name. */
const TrainStrategy *train_strategy_find(const char *name);
/* The table, ended by a NULL name (the strategy option's names). */
extern const TrainStrategy train_strategies[];

/* A sampler over n corpora in CurrentMemoryContext, init applied. */
TrainSampler *train_sampler_new(const TrainStrategy *strategy, const TrainOptions *o,
								int n, const char *const *names, const long *size);

/* The corpus of micro-batch `micro` of update `step` (0-based updates done). */
int			train_sampler_pick(const TrainSampler *s, int64 step, int micro);

/* The static strategies (train_sampler_static.c). */
void		train_strategy_proportional_init(TrainSampler *s, const TrainOptions *o);
void		train_strategy_temperature_init(TrainSampler *s, const TrainOptions *o);
void		train_strategy_uniform_init(TrainSampler *s, const TrainOptions *o);

/* The dynamic strategies (train_sampler_multiuat.c, train_sampler_multidds.c). */
void		train_strategy_multiuat_init(TrainSampler *s, const TrainOptions *o);
void		train_strategy_multiuat_update(TrainSampler *s, const TrainSamplerView *view);
void		train_strategy_multidds_init(TrainSampler *s, const TrainOptions *o);
void		train_strategy_multidds_update(TrainSampler *s, const TrainSamplerView *view);

/*
 * Their options (rows of train_options.c's table): the checks that involve
 * the strategy, and the defaults (train_scorer.c).
 */
void		train_balance_resolve(TrainOptions *o);
bool		train_strategy_is_balance(const char *name);

#endif
