/*
 * corpq.train(): training a catalog model as a background job (kind
 * "train", restartable).  The pieces:
 *   train_options.c   options: validation, defaults scaled to the budget,
 *                     the resolved JSON stored with the job
 *   train_corpus.c    (src, tgt[, label]) queries read through SPI cursors
 *                     and encoded with the model's vocabularies
 *   train_sampler.c   which corpus each micro-batch comes from (strategies,
 *                     train_sampler.h)
 *   train_validate.c  dev loss per corpus label, dropout off
 *   train_store.c     the training log and crash-safe checkpoints
 *   train_scorer*.c   the corpus scorer of multiuat and multidds
 *                     (train_scorer.h)
 *   train_schedule.c  the time-budget schedule (train_schedule.h)
 *   train_job.c       submission and the job's loop
 *   temperature_weights.c  corpq.temperature_weights(), corpus shares
 */
#ifndef CORPQ_TRAIN_H
#define CORPQ_TRAIN_H

#include "postgres.h"

#include "utils/jsonb.h"

#include "nn/train/train_state.h"
#include "pg/jobs/jobs.h"
#include "pg/text/text.h"

typedef struct TrainOptions
{
	int64		steps;			/* updates; 0 = no step budget */
	double		epochs;			/* 0 = no epoch budget */
	double		max_seconds;	/* 0 = no time budget */
	int			max_tokens;
	int			update_freq;
	double		lr;				/* < 0: derived by the job (train_schedule.h) */
	double		warmup_init_lr;
	int			warmup;			/* -1: derived by the job (train_schedule.h) */
	double		dropout;		/* < 0: the model's own */
	double		attention_dropout;
	double		activation_dropout;
	double		label_smoothing;
	double		margin;			/* encoder models: the additive margin */
	double		scale;			/* encoder models: the softmax scale */
	double		weight_decay;
	double		clip_norm;		/* 0 = off */
	int64		seed;
	int			checkpoint_every;	/* -1: derived by the job */
	int			keep_checkpoints;
	int			validate_every; /* -1: derived by the job */
	int			threads;		/* the job's (pg/jobs/jobs.h) */
	char	   *strategy;		/* a name of train_sampler.c's table */
	int			strategy_index; /* its row there */
	double		tau;			/* temperature strategy */
	int			sampler_every;	/* dynamic strategies: updates between hooks */
	/* multiuat / multidds (train_options.c, train_scorer.h) */
	char	   *measure;		/* multiuat's uncertainty measure */
	int			passes;			/* K Monte Carlo dropout passes */
	double		prior_tau;		/* the scorer starts at temperature_weights(tau) */
	double		scorer_lr;		/* Adam on psi */
	int			scorer_steps;	/* Adam steps per update */
	int			dev_tokens;		/* dev batch per corpus per update */
	bool		baseline;		/* moving-average reward baseline */
} TrainOptions;

/* Validate options (ERROR naming the key and the valid range) with defaults. */
void		train_options_parse(Jsonb *options, TrainOptions *o);
/* max_tokens, when the options left it unset, for an encoder model or not */
void		train_options_resolve_model(TrainOptions *o, bool encoder);
/* Every option, resolved, as a JSON object (parses back to the same). */
char	   *train_options_json(const TrainOptions *o);

/*
 * In a job, outside a transaction: train model (model_id, checked again as
 * the job's owner) on the corpus query (and dev query, or NULL) with
 * options o, the job's log rows and checkpoints written under the job's id,
 * the job's progress reported; a job that has a checkpoint of this model
 * resumes from it (and, its budget spent, makes no update).  Returns the
 * training's result object (corpq.train()'s job result), allocated in cxt;
 * *updates (when not NULL) gets the updates this call made.  The one
 * training loop of corpq.train()'s job and of corpq.curate()'s encoder.
 */
char	   *train_build(CorpqJob *job, const char *model, int64 model_id, const char *corpus,
						const char *dev, const TrainOptions *o, MemoryContext cxt,
						int64 *updates);

/* Pairs read from a corpus query, encoded, with their corpus labels. */
typedef struct TrainCorpus
{
	int64		rows;			/* rows the query returned */
	int64		null_rows;		/* rows with a NULL side, left out */
	int64		too_long;		/* pairs beyond max_positions, left out */
	long		n_pairs;		/* pairs kept */
	int32	   *ids;			/* all ids: src then tgt of each pair */
	int64	   *off;			/* [n_pairs] each pair's first id */
	int		   *src_len;		/* [n_pairs] */
	int		   *tgt_len;		/* [n_pairs] */
	int		   *label;			/* [n_pairs] index into labels */
	int			n_labels;
	char	  **labels;			/* in order of first appearance */
	int64		tgt_tokens;		/* sum of tgt_len */
} TrainCorpus;

/* The label of rows without a third column (or with a NULL label). */
#define TRAIN_DEFAULT_LABEL "default"

/*
 * At submission: ERROR unless query is one SELECT of 2 or 3 text columns;
 * returns how many (3: it has labels).
 */
int			train_check_query(const char *query, const char *what);

/*
 * Run query (SPI connected, in a transaction) and encode each pair; pairs
 * with a side of max_positions tokens or more are counted, not kept.  All
 * arrays live in cxt.
 */
void		train_read_corpus(CorpqJob *job, const char *query, const char *what,
							  CorpqVocab *src, CorpqVocab *tgt, int max_positions,
							  TrainCorpus *c, MemoryContext cxt);

/* Index of label name in c, or -1. */
int			train_corpus_label(const TrainCorpus *c, const char *name);

/* The pair as the core reads it; key = its index (keys dropout masks). */
void		train_corpus_pair(const TrainCorpus *c, long i, cq_pair *p);

/* Dev figures: -log p per target token (</s> included), per label and all. */
typedef struct TrainDevFigures
{
	int			n_labels;
	double	   *nll;			/* [n_labels] summed nats */
	long	   *tokens;			/* [n_labels] scored positions */
	double		all_nll;
	long		all_tokens;
	/* an encoder's: summed similarity of each label's pairs, and of its negatives */
	bool		encoder;
	double	   *pos;			/* [n_labels] sum of x_i . y_i */
	double	   *neg;			/* [n_labels] sum of the mean x_i . y_j, j != i */
	double		all_pos;
	double		all_neg;
} TrainDevFigures;

/* Score every dev pair with dropout off (batches of about max_tokens). */
void		train_validate(CorpqJob *job, const cq_model *m, const TrainCorpus *dev,
						   int max_tokens, TrainDevFigures *f);
double		train_dev_loss(const TrainDevFigures *f, int label);	/* -1 = all */


/* ---- train_store.c: the log and checkpoints (SPI connected, in a transaction) ---- */

/* Where the data stands and what a resumed run must carry over. */
typedef struct TrainCursor
{
	int			n_streams;		/* 1 (one stream over the union) or per corpus */
	int64	   *epoch;			/* [n_streams] */
	int64	   *next;			/* [n_streams] next batch of that epoch */
	int			n_corpora;
	double	   *prob;			/* [n_corpora] the sampler's probabilities */
	int64	   *draws;			/* [n_corpora] micro-batches drawn (per-corpus strategies) */
	int64	   *pairs;			/* [n_corpora] pairs trained on */
	int64		pairs_done;
	int64		tokens_done;	/* target tokens trained on */
	double		seconds;		/* training seconds, all attempts */
	double		best_dev;		/* NaN: no validation yet */
	int32		best_version;	/* 0: none */
	int32		first_version;	/* the version training started from */
	char	   *sampler_state;	/* a dynamic strategy's own state (JSON), NULL none */
	char	   *schedule;		/* the run's schedule (JSON, train_schedule.h), NULL none */
} TrainCursor;

typedef struct TrainLogRow
{
	int64		step;
	double		epoch;
	double		loss;
	double		nll;
	double		lr;
	int64		tokens;
	double		tokens_per_s;
	double		grad_norm;
	const char *dev_json;		/* NULL unless validated at this step */
	double		dev_loss;
	bool		encoder;		/* dev_loss is a miss rate: no dev_ppl */
	const char *schedule_json;	/* the run's schedule on its first update, else NULL */
} TrainLogRow;

void		train_log_write(int64 job, const TrainLogRow *r);

/*
 * One checkpoint: the model version (source 'checkpoint', metrics), the
 * state row, pruning beyond keep (their rows, and this job's checkpoint
 * versions no row refers to unless best).  Returns the version written.
 */
int32		train_checkpoint_write(int64 job, int64 model_id, const cq_train_state *st,
								   bytea *image, TrainCursor *cur, const char *metrics,
								   double dev_loss, bool best, int keep);

/*
 * The job's latest checkpoint: the state (in CurrentMemoryContext) and the
 * cursor filled in (arrays sized by the caller); log rows after it deleted.
 * false when the job has none.  Only rows the job wrote on model model_id
 * count (owner, a checkpoint version it wrote at that step; others are
 * ignored with a WARNING); ERROR unless every cursor value is in range.  The
 * caller checks the architecture and the cursor against its corpus.
 */
bool		train_checkpoint_resume(int64 job, int64 model_id, cq_train_state **st,
									TrainCursor *cur);

/* ERROR unless prob[0..n) is a probability distribution (a resumed sampler's). */
void		train_check_prob(int64 job, const double *prob, int n);

/* Versions of this job's checkpoints still present, as a JSON array. */
char	   *train_checkpoint_versions(int64 job);

#endif
