/*
 * Training ANTAP (paper 002, Sec. 4.1 and 4.3): the 8:1:1 split of the
 * target tokens, MSE loss, AdamW updates, early stopping on the validation
 * MSE, and the two states the paper reports:
 *
 *   State I   the best checkpoint before early stopping triggers: the
 *             weights of the epoch with the lowest validation MSE;
 *   State II  the last checkpoint, when early stopping triggers (patience
 *             epochs without a lower validation MSE), or after max_epochs.
 *
 * The paper: "State I: Optimal checkpoint before the early-stop is triggered
 * ... optimal performance on the test set.  State II: Last checkpoint when
 * the early-stop is triggered ... optimal performance on the training set."
 */
#ifndef CQ_ANTAP_TRAIN_H
#define CQ_ANTAP_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "antap/model.h"
#include "antap/pass.h"
#include "nn/train/adamw.h"

/* ---- split.c ---- */

typedef enum cq_antap_split_kind
{
	CQ_ANTAP_TRAIN = 0,
	CQ_ANTAP_VALID = 1,
	CQ_ANTAP_TEST = 2
} cq_antap_split_kind;

#define CQ_ANTAP_MIN_TOKENS 10

/* Tokens per split for n tokens: valid = test = round(n / 10), train the rest. */
void		cq_antap_split_sizes(int n, int *n_train, int *n_valid, int *n_test);

/*
 * split[i] for tokens 0 .. n-1 (in the caller's canonical order, e.g. byte
 * order of the strings): a Philox permutation of 0 .. n-1 keyed by seed;
 * its first n_train positions are train, the next n_valid valid, the rest test.
 */
void		cq_antap_split(int n, uint64_t seed, uint8_t *split);

/* ---- metrics.c ---- */

typedef struct cq_antap_metrics
{
	long		n;
	double		mse,
				mae,
				rmse,
				r2;				/* 1 - SSE / SST about the subset's own mean; NaN if SST = 0 */
} cq_antap_metrics;

/* Over the rows idx[0..n) of pred and y (idx NULL: rows 0 .. n-1). */
void		cq_antap_metrics_of(const float *pred, const float *y, const int32_t *idx, long n,
								cq_antap_metrics *out);

/* ---- train.c ---- */

/*
 * Mean squared error of n outputs (torch.nn.MSELoss, reduction "mean"), in
 * double; dout[i] = 2 (out[i] - y[i]) / n.
 */
double		cq_antap_mse(const float *out, const float *y, int n, float *dout);

typedef struct cq_antap_train_options
{
	double		lr;				/* 1e-3 */
	cq_adamw	adamw;			/* torch.optim.AdamW's defaults: 0.9, 0.999, 1e-8, 0.01 */
	int			batch_size;		/* 32 */
	int			max_epochs;		/* 500 */
	int			patience;		/* 20 */
	uint64_t	seed;			/* shuffling (the caller seeds the initialisation) */
} cq_antap_train_options;

void		cq_antap_train_options_default(cq_antap_train_options *o);

typedef struct cq_antap_trainer cq_antap_trainer;

/* A trainer updating m (kept by the caller), AdamW moments at zero. */
cq_code		cq_antap_trainer_new(cq_antap_model *m, const cq_antap_train_options *o,
								 cq_antap_trainer **out, cq_error *err);
void		cq_antap_trainer_free(cq_antap_trainer *t);

/*
 * One update on n <= batch_size tokens x[n, H, W], y[n]: gradient of the
 * batch MSE, AdamW step t + 1 with lr.  *loss: the batch MSE before the
 * update.  CQ_ERANGE (weights, moments and step unchanged) when an input,
 * a target, the loss or a gradient is not finite.
 */
cq_code		cq_antap_trainer_step(cq_antap_trainer *t, const float *x, const float *y, int n,
								  double *loss, cq_error *err);

/* The trainer's pass (batch_size tokens), for predictions in between. */
cq_antap_pass *cq_antap_trainer_pass(cq_antap_trainer *t);

/*
 * Predictions out[k] for the rows idx[k] (k < n) of x[*, H, W], in batches
 * through p; gather: a buffer of cq_antap_pass_max_batch(p) * H * W floats.
 */
void		cq_antap_predict_rows(const cq_antap_model *m, cq_antap_pass *p, const float *x,
								  const int32_t *idx, long n, float *gather, float *out);

/* The data of a fit: every token's input and target, and the two index sets. */
typedef struct cq_antap_data
{
	const float *x;				/* [tokens, H, W] */
	const float *y;				/* [tokens] */
	const int32_t *train;
	int			n_train;
	const int32_t *valid;
	int			n_valid;
} cq_antap_data;

/* What the hook sees: after each update, and at the end of each epoch. */
typedef struct cq_antap_progress
{
	int			epoch;			/* 1-based */
	int			batch;			/* updates done in this epoch */
	int			batches;		/* per epoch */
	int64_t		steps;			/* updates done in all */
	bool		end_of_epoch;	/* the fields below are set */
	double		train_mse;		/* mean of the epoch's batch losses */
	double		valid_mse;
	double		best_valid_mse;
	int			best_epoch;
} cq_antap_progress;

/* Return true to stop: cq_antap_fit then returns CQ_STOPPED. */
typedef bool (*cq_antap_hook) (void *arg, const cq_antap_progress *p);

typedef struct cq_antap_fit_result
{
	int			epochs;
	int			best_epoch;		/* State I's epoch */
	double		best_valid_mse;
	bool		early_stopped;	/* false: max_epochs ran out */
	int64_t		steps;
} cq_antap_fit_result;

/*
 * Train m (initialised by the caller) on d->train with early stopping on
 * d->valid; each epoch shuffles the training tokens (Philox, seed and epoch)
 * and updates once per batch.  On return m holds State II and best State I.
 * CQ_ERANGE when training diverges (a non-finite loss or gradient).
 */
cq_code		cq_antap_fit(cq_antap_model *m, cq_antap_model *best, const cq_antap_data *d,
						 const cq_antap_train_options *o, cq_antap_hook hook, void *arg,
						 cq_antap_fit_result *res, cq_error *err);

#endif
