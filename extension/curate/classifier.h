/*
 * The pair-quality classifier: boosted shallow trees (trees.h, the default:
 * measured ahead of the regression on every noise type, docs/curation.md)
 * or logistic regression on standardised features, either calibrated by
 * Platt scaling on a held-out split.  The regression:
 *
 *   z_j    = (x_j - mean_j) / scale_j        mean and population standard
 *                                           deviation over the training rows
 *                                           (scale 1 for a constant feature)
 *   logit  = bias + sum_j w_j z_j
 *   prob   = 1 / (1 + exp(-(platt_a * logit + platt_b)))
 *
 * Fitting minimises the mean cross-entropy plus (l2 / 2) |w|^2 (the bias is
 * not penalised) by Newton's method with a backtracking (Armijo) line
 * search: the objective is strictly convex, so its minimiser is unique and
 * Newton reaches it to rounding in a handful of iterations (each one pass
 * over the rows in index order, then a Cholesky solve of the (d + 1)^2
 * system).  Why Newton: the result is the optimum itself, not wherever a
 * step size and an iteration budget left gradient descent, so it does not
 * depend on a learning rate, and an independent implementation (the numpy
 * reference, test/ref/test_curate.py) reaches the same weights to 1e-9 --
 * a check a first-order method could not give.  d is at most CQ_F_COUNT,
 * so the solve is free.
 *
 * Platt scaling is the same fit with one feature (the logit, unscaled: the
 * regression's or the trees' sum), no
 * penalty, and Platt's targets (N+ + 1) / (N+ + 2) for positives and
 * 1 / (N- + 2) for negatives, on the held-out rows only, so the
 * probabilities are calibrated on pairs the weights never saw.
 *
 * Labels: 1 = a clean pair, 0 = noise.  The serialised form is
 * extension/curate/FORMAT.md.
 */
#ifndef CQ_CURATE_CLASSIFIER_H
#define CQ_CURATE_CLASSIFIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "curate/features.h"

typedef enum cq_classifier_kind
{
	CQ_CLASSIFIER_LOGISTIC = 1,
	CQ_CLASSIFIER_TREES = 2		/* boosted trees (trees.h) */
} cq_classifier_kind;

typedef struct cq_classifier
{
	cq_feature_set fs;			/* what the features are */
	int			d;				/* cq_feature_count(&fs) */
	double	   *mean;			/* d each, one allocation (cq_alloc) */
	double	   *scale;
	double	   *w;
	double		bias;
	double		platt_a;
	double		platt_b;
	int			iterations;		/* Newton iterations of the fit (not stored) */
	/* boosted trees (kind 2; trees.h): logit = base + the trees' leaves */
	cq_classifier_kind kind;
	int			n_trees;
	int			depth;			/* every tree is full: 2^depth - 1 nodes */
	int32_t    *feat;			/* node's feature index, -1: no split (all go left) */
	double	   *thr;			/* node's threshold: x < thr goes left */
	double	   *leaf;			/* 2^depth leaf values per tree */
	double		base;
} cq_classifier;

typedef struct cq_train_options
{
	double		l2;				/* penalty on the standardised weights */
	int			max_iter;		/* Newton iterations at most */
	double		tol;			/* stop when every |step| is below */
	cq_classifier_kind kind;
	/* boosted trees (trees.h) */
	int			rounds;			/* trees */
	int			depth;			/* 1..6 */
	double		learning_rate;
	double		lambda;			/* L2 on leaf values */
	int			bins;			/* quantile bins per feature, 2..256 */
	double		min_hessian;	/* a child's hessian sum must exceed it */
} cq_train_options;

/* kind trees; l2 1e-4, max_iter 100, tol 1e-10; trees: 200 rounds of
 * depth 3, learning rate 0.1, lambda 1, 64 bins, min_hessian 1
 * (docs/curation.md says why). */
void		cq_train_options_default(cq_train_options *o);

/*
 * holdout[i] = 1 for about frac of the rows, by group: rows with the same
 * group id (a noisy pair and the clean pair it was made from) fall on the
 * same side, so no held-out pair has its source in the training rows.
 * groups may be NULL (each row its own group).  Pure function of (seed,
 * group id, frac).
 */
void		cq_holdout_split(uint64_t seed, const int64_t *groups, size_t n, double frac,
							 unsigned char *holdout);

/*
 * Fit c from x (n rows of cq_feature_count(fs) values, row-major) and
 * y (1 clean, 0 noise): the weights on the rows with holdout[i] == 0, Platt
 * on the others.  Each side needs both labels.  CQ_EINVAL (a label not 0/1,
 * a value not finite, a side with one label, a bad option), CQ_ENOMEM.
 */
cq_code		cq_classifier_train(const cq_feature_set *fs, const double *x, const unsigned char *y,
								size_t n, const unsigned char *holdout,
								const cq_train_options *o, cq_classifier *c, cq_error *err);

/* The logit and the calibrated probability of one row of features. */
double		cq_classifier_logit(const cq_classifier *c, const double *x);
double		cq_classifier_prob(const cq_classifier *c, const double *x);

/* An empty classifier for fs: arrays of cq_feature_count(fs) zeros. */
cq_code		cq_classifier_alloc(const cq_feature_set *fs, cq_classifier *c, cq_error *err);
void		cq_classifier_free(cq_classifier *c);

/* The serialised form (FORMAT.md): its size, and the bytes into buf. */
size_t		cq_classifier_size(const cq_classifier *c);
cq_code		cq_classifier_write(const cq_classifier *c, unsigned char *buf, size_t cap,
								cq_error *err);

/* Read bytes written by cq_classifier_write; damaged input is CQ_EFORMAT
 * (not this format, or inconsistent) or CQ_ECORRUPT (a checksum that does
 * not match), never a crash.  On failure c is empty. */
cq_code		cq_classifier_read(const unsigned char *buf, size_t len, cq_classifier *c,
							   cq_error *err);

/* The Newton fit on its own (the reference checks call it): minimise
 * mean cross-entropy + (l2 / 2) |theta[1..p)|^2 over theta[0..p) where row
 * i of the design is row(ctx, i, out) (out[0] = 1, the intercept).
 * t: soft targets in [0, 1]. */
typedef void (*cq_design_row) (const void *ctx, size_t i, double *out);
cq_code		cq_logistic_newton(cq_design_row row, const void *ctx, size_t n, int p,
							   const double *t, double l2, int max_iter, double tol,
							   double *theta, int *iterations, cq_error *err);

#endif
