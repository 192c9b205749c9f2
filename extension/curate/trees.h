/*
 * Gradient-boosted shallow trees for the pair-quality classifier
 * (classifier.h's kind CQ_CLASSIFIER_TREES): second-order boosting of the
 * logistic loss (XGBoost's split gain and leaf values) on quantile bins.
 *
 *   bins     per feature, from the training rows' values sorted ascending
 *            (v[0..m)): the distinct values among v[floor(q m / B)],
 *            q = 1 .. B - 1, are the edges; a value's bin is the number of
 *            edges <= it
 *   start    base = ln(mean(y) / (1 - mean(y))) for every row
 *   round    g = p - y, h = p (1 - p) with p = 1 / (1 + exp(-margin));
 *            one tree grown depth-first from the root: at a node of rows R
 *            (in row order) with G, H their sums in row order, for each
 *            feature j and bin k (ascending) with GL, HL the sums of the
 *            rows in bins <= k (a histogram summed in row order, then
 *            cumulated in bin order), GR = G - GL, HR = H - HL:
 *              gain = GL^2 / (HL + lambda) + GR^2 / (HR + lambda)
 *                     - G^2 / (H + lambda)
 *            and the split is the first (j, k) of largest gain > 0 with
 *            HL and HR above min_hessian; it sends x_j < edge_k left
 *            (rows kept in order); a node at the full depth, or without
 *            such a split, is a leaf of value -learning_rate G / (H + lambda)
 *            added to its rows' margins (a node that does not split passes
 *            all rows to its left child, so the stored trees are full)
 *   logit    base + the sum of the trees' leaves; Platt on the held-out
 *            rows as for the regression
 *
 * Every sum has a fixed order, so a fit is a pure function of its inputs;
 * test/ref/test_curate.py grows the same trees in numpy.
 */
#ifndef CQ_CURATE_TREES_H
#define CQ_CURATE_TREES_H

#include "curate/classifier.h"

/* Grow c's trees from the rows rows[0..m) of x (d = c->d columns); c has
 * its feature set, kind and sizes set by the caller. */
cq_code		cq_trees_fit(cq_classifier *c, const double *x, const size_t *rows, const double *y,
						 size_t m, const cq_train_options *o, cq_error *err);

/* base + the leaves x reaches. */
double		cq_trees_logit(const cq_classifier *c, const double *x);

/* The tree arrays for c->n_trees trees of c->depth (cq_alloc, one block
 * owned through c->thr). */
cq_code		cq_trees_alloc(cq_classifier *c, cq_error *err);

#endif
