/*
 * The corpus scorer shared by the multiuat and multidds strategies
 * (MultiUAT, Wu et al., Algorithm 1): one logit psi_n per corpus,
 * p = softmax(psi), first fitted to a prior, then at every sampler update
 * scorer_steps Adam steps on the REINFORCE loss -sum_n R(n) log p_n.
 * Also the strategies' shared batches (train_scorer_batches.c) and hooks
 * (train_scorer_hooks.c): checks, save/load of psi and Adam,
 * the sampling-history rows and the result entry.
 */
#ifndef CORPQ_TRAIN_SCORER_H
#define CORPQ_TRAIN_SCORER_H

#include "postgres.h"

#include "pg/train/train_sampler.h"

typedef struct TrainScorer
{
	int			n;
	double	   *psi;			/* [n] logits */
	double	   *m;				/* [n] Adam first moment */
	double	   *v;				/* [n] Adam second moment */
	int64		t;				/* Adam steps taken (bias correction) */
	double		lr;
	int			steps;
	bool		baseline;
	double		base;			/* moving average of mean rewards */
	bool		have_base;
	/* the strategy's options, kept for its update */
	TrainOptions o;
	/* the history rows of the latest update, written by the log hook */
	bool		pending;
	int64		pend_step;
	double	   *reward;			/* [n] NaN: none (the prior row) */
	double	   *dev_loss;		/* [n] */
	int64		tokens_seen;
	/* update overhead */
	double		seconds;
	int			updates;
	int		  **dev_index;		/* [n][] dev pairs of each corpus (lazily built) */
	int		   *dev_count;
	int		  **train_index;	/* [n][] training pairs of each corpus (multidds) */
	int		   *train_count;
} TrainScorer;

/* A scorer fitted to the temperature prior of o->prior_tau over s->size. */
TrainScorer *train_scorer_new(TrainSampler *s, const TrainOptions *o);

/* prob[] := softmax(psi): after psi changed (a loaded checkpoint). */
void		train_scorer_publish(TrainSampler *s);

/* Adam steps on -sum R log p; prob[] := softmax(psi); records the history row. */
void		train_scorer_reinforce(TrainSampler *s, int64 step, const double *reward,
								   const double *dev_loss, int64 tokens_seen, double seconds);

/*
 * Dev pairs of corpus i for update `step`: about dev_tokens padded tokens
 * (pairs x longest), consecutive from a start drawn from (seed, step, i).
 */
int			train_scorer_dev_batch(TrainSampler *s, const TrainSamplerView *view, int i,
								   cq_pair **pairs);

/* The same from the training pairs of corpus i (multidds). */
int			train_scorer_train_batch(TrainSampler *s, const TrainSamplerView *view, int i,
									 cq_pair **pairs);

void		train_scorer_check(TrainSampler *s, const TrainSamplerView *view);
char	   *train_scorer_save(TrainSampler *s);
void		train_scorer_load(TrainSampler *s, const char *json);
void		train_scorer_log(TrainSampler *s, int64 job);
char	   *train_scorer_result(TrainSampler *s, double training_seconds);

#endif
