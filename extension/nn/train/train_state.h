/*
 * Training a transformer in place: the state (model, gradients, AdamW
 * moments, update count, dropout seed, data cursor), the update step, and a
 * versioned, checksummed checkpoint image (models/FORMAT.md, "Training
 * checkpoints").
 *
 * A job drives it as
 *   cq_train_config_default(&tc); tc.lr = ...;            hyper-parameters
 *   cq_train_state_new(model, &tc, &st, &err);            copies the model
 *   cq_batcher_new(src_lens, tgt_lens, n, ...)            (batching.h)
 *   loop: take tc.update_freq batches from the batcher (cq_batcher_batch),
 *         fetch their ids, cq_train_step(st, batches, n, &stats, &err);
 *         st->epoch / st->batch_in_epoch = where the next batch comes from;
 *         every so often cq_train_checkpoint_write() into a bytea;
 *   resume: cq_train_checkpoint_load(), then continue from st->epoch,
 *         st->batch_in_epoch: the next step is the same as without the stop.
 *   st->model is the trained model (cq_modelfile_write it to publish).
 * Everything is allocated with cq_alloc (mem.h), nothing is global.
 */
#ifndef CQ_NN_TRAIN_STATE_H
#define CQ_NN_TRAIN_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/train/adamw.h"
#include "nn/infer/forward.h"
#include "nn/model/model.h"
#include "common/error.h"

/*
 * A step whose loss or gradient is NaN or infinite (weights left unchanged)
 * fails with CQ_ERANGE, the only code of that category training returns.
 */
#define CQ_TRAIN_ENONFINITE CQ_ERANGE

#define CQ_TRAIN_CKPT_MAGIC "CORPQTR\0"
#define CQ_TRAIN_CKPT_VERSION 1
#define CQ_TRAIN_CKPT_HEADER 128

typedef struct cq_train_config
{
	double		lr;				/* peak learning rate: 5e-4 */
	double		warmup_init_lr; /* 1e-7 */
	int			warmup_updates; /* 4000 */
	cq_adamw	adam;			/* betas 0.9 / 0.98, eps 1e-9, weight decay 1e-4 */
	double		clip_norm;		/* global gradient norm bound, 0 = off: 0 */
	float		label_smoothing;	/* 0.1 */
	int			update_freq;	/* micro-batches per update (for the job): 1 */
	int			max_tokens;		/* batch budget (for the job): 2048 */
	uint64_t	seed;			/* dropout masks and batch order: 1 */
	bool		dropout;		/* dropout on while training: true */
	/* encoder models (dual_pass.h): the additive margin and the scale */
	float		margin;			/* 0.3 (LaBSE) */
	float		scale;			/* 20 */
} cq_train_config;

void		cq_train_config_default(cq_train_config *tc);
cq_code cq_train_config_validate(const cq_train_config *tc, cq_error *err);

typedef struct cq_train_state
{
	cq_train_config tc;
	cq_model   *model;			/* the weights being trained (owned) */
	cq_model   *grad;			/* gradients, same layout (owned) */
	float	   *exp_avg;		/* [model->n_floats] AdamW first moment */
	float	   *exp_avg_sq;		/* [model->n_floats] second moment */
	int64_t		step;			/* updates done */
	int64_t		epoch;			/* data cursor kept for the job: epoch, */
	int64_t		batch_in_epoch; /* and the next batch in it */
	void	   *ws;				/* pass workspace, grown as needed */
	size_t		ws_bytes;
} cq_train_state;

/* A new state training a copy of init (moments zero, step 0). */
cq_code cq_train_state_new(const cq_model *init, const cq_train_config *tc,
								cq_train_state **out, cq_error *err);
void		cq_train_state_free(cq_train_state *st);

/* One micro-batch: pairs with their dropout keys (cq_pair.key). */
typedef struct cq_train_batch
{
	const cq_pair *pairs;
	int			n_pairs;
} cq_train_batch;

typedef struct cq_train_stats
{
	double		loss;			/* label-smoothed loss per target token, nats */
	double		nll;			/* -log p(gold) per target token, nats */
	long		tokens;			/* scored target positions (</s> included) */
	int			pairs;
	double		grad_norm;		/* global L2 norm before clipping */
	double		lr;				/* learning rate of this update */
	int64_t		step;			/* updates done after it */
} cq_train_stats;

/*
 * Gradients of one update without applying it: st->grad = d(sum of the
 * label-smoothed loss over all target positions of all micro-batches)/dθ
 * divided by their token count (fairseq's sample_size normalisation), so
 * accumulation over micro-batches equals one batch of them all.  Dropout
 * masks are keyed by (tc.seed, st->step, micro-batch index, pair key).
 * An encoder model's loss is the dual encoder's (dual_pass.h: each
 * micro-batch's pairs are each other's negatives), divided by the pairs of
 * the update; its stats' loss and nll are per pair, tokens the positions
 * encoded.  CQ_TRAIN_ENONFINITE when the loss or the gradient norm is not
 * finite.
 */
cq_code cq_train_gradients(cq_train_state *st, const cq_train_batch *batches,
								int n_batches, cq_train_stats *stats, cq_error *err);

/*
 * One update over n_batches micro-batches (gradient accumulation): the
 * gradients above, clipped to tc.clip_norm (coefficient clip / (norm + 1e-6)
 * when below 1, as torch and fairseq), AdamW at the schedule's learning rate
 * for the updates done so far (schedule.h), step + 1.  On any error the
 * weights, moments and step are left as they were.
 */
cq_code cq_train_step(cq_train_state *st, const cq_train_batch *batches,
						   int n_batches, cq_train_stats *stats, cq_error *err);

/*
 * Scales g[0..n) by clip / (norm + 1e-6) when that is below 1 (clip > 0);
 * returns the L2 norm before clipping.
 */
double		cq_clip_grad_norm(float *g, size_t n, double clip);

/* The learning rate of the next update. */
double		cq_train_next_lr(const cq_train_state *st);

/* The checkpoint image: size, write into buf[0..size), load a new state. */
size_t		cq_train_checkpoint_size(const cq_train_state *st);
cq_code cq_train_checkpoint_write(const cq_train_state *st, void *buf, size_t size,
									   cq_error *err);
cq_code cq_train_checkpoint_load(const void *buf, size_t len, cq_train_state **out,
									  cq_error *err);

#endif
