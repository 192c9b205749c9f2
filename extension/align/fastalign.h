/*
 * fast_align: IBM Model 2 reparameterised with a diagonal prior (Dyer,
 * Chahuneau, Smith 2013).  For target word f_j (j = 1..m) of a pair with
 * source words e_1..e_n:
 *   p(a_j = 0)          = p0                              (NULL word)
 *   p(a_j = i), i >= 1  = (1 - p0) exp(lambda h(i,j,m,n)) / Z_j   (diagonal.h)
 *   p(f_j | e)          = sum_i p(a_j = i) t(f_j | e_i)
 * Without favor_diagonal the prior is uniform 1/(n + 1) (Model 1); without
 * use_null position 0 is dropped and (1 - p0) becomes 1.
 *
 * EM as in the authors' fast_align: the first pass sees every t equal
 * (1e-9), later passes the normalised counts; the M-step is either maximum
 * likelihood t = c / sum c, or variational Bayes with a symmetric Dirichlet
 * prior alpha: t = exp(psi(c + alpha) - psi(sum_f (c + alpha))).  From the
 * second pass on, with optimize_tension, lambda takes 8 gradient steps
 * lambda += 20 (E_post[h] - E_prior[h]) / N (clamped to [0.1, 14]) on the
 * expected complete log-likelihood, where per target token E_prior[h] is the
 * prior's expectation weighted by that token's non-NULL posterior mass (the
 * exact gradient).  tension_rule CQ_FA_TENSION_FAST_ALIGN reproduces the
 * authors' code instead: E_post[h] taken at the 0-based target position,
 * E_prior[h] weighted by 1 per token and normalised by a Z summed with m and
 * n swapped; it exists to compare with their binary.
 * fast_align's "-I 5" makes 4 EM passes then a Viterbi-only pass: options
 * .iterations counts the same way, so cq_fa_train() runs iterations - 1
 * passes.  Viterbi: argmax_i p(a_j = i) t(f_j | e_i), NULL first and earlier
 * positions winning ties; NULL means unaligned.  (Two occurrences of one word
 * equidistant from the diagonal tie in exact arithmetic; rounding decides.)
 * Pairs with an empty side are skipped by training and left unaligned.
 */
#ifndef CQ_ALIGN_FASTALIGN_H
#define CQ_ALIGN_FASTALIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "align/bitext.h"
#include "align/progress.h"
#include "align/ttable.h"

/*
 * Largest accepted lambda: beyond it exp(lambda h) can underflow at every
 * position of a row (the optimiser itself clamps to 14, as fast_align does).
 */
#define CQ_FA_MAX_TENSION 50.0

/* t of a pair absent from the table, and of every pair before the first M-step */
#define CQ_FA_UNSEEN_PROB 1e-9

typedef struct cq_fa_params
{
	double		tension;		/* lambda */
	double		p0;				/* prior of the NULL word */
	bool		favor_diagonal;
	bool		use_null;
} cq_fa_params;

typedef enum cq_fa_tension_rule
{
	CQ_FA_TENSION_EXACT,		/* gradient of the expected log-likelihood */
	CQ_FA_TENSION_FAST_ALIGN,	/* the authors' update, to rounding */
} cq_fa_tension_rule;

typedef struct cq_fa_options
{
	cq_fa_params init;			/* tension 4.0, p0 0.08, diagonal, NULL */
	int			iterations;		/* 5, fast_align's count (see above) */
	bool		optimize_tension;	/* true */
	bool		variational_bayes;	/* false */
	double		alpha;			/* 0.01 */
	bool		reverse;		/* condition on the target side instead */
	size_t		max_index_bytes;	/* 1 GiB budget for the link index */
	cq_fa_tension_rule tension_rule;	/* CQ_FA_TENSION_EXACT */
} cq_fa_options;

void		cq_fa_options_default(cq_fa_options *o);

/* A trained (or loaded) direction: parameters and t(f|e), NULL row n_e. */
typedef struct cq_fa_model
{
	cq_fa_params par;
	cq_ttable	tt;
	bool		probs_ready;	/* false: every t is CQ_FA_UNSEEN_PROB */
} cq_fa_model;

/*
 * Aligns one pair (e: n conditioning words, f: m generated words) with the
 * model: a[j] = aligned position in e or -1 (a may be NULL), and *loglik =
 * sum_j ln p(f_j | e), token_ll[j] (may be NULL, else m entries) its
 * terms.  Ids outside the table get CQ_FA_UNSEEN_PROB.
 */
cq_code		cq_fa_model_align(const cq_fa_model *md, const int32_t *e, int n,
							  const int32_t *f, int m, int32_t *a,
							  double *loglik, double *token_ll, cq_error *err);

void		cq_fa_model_free(cq_fa_model *md);

/*
 * The alignment prior of target position j1 (1-based) of m given n source
 * words: w[i1 - 1] = p(a = i1) for i1 = 1..n; returns p(a = 0) (0 without
 * use_null).
 */
double		cq_fa_prior(const cq_fa_params *par, int j1, int m, int n, double *w);

typedef struct cq_fa_stats
{
	int			passes;			/* EM passes completed */
	double		loglik;			/* sum over tokens of ln p(f_j|e), last pass */
	double		posterior_p0;	/* mean NULL posterior, last pass */
	double		emp_feat;		/* mean E_post[h], last pass */
	double		n_tokens;		/* generated-side tokens of aligned pairs */
	int64_t		skipped_pairs;	/* pairs with an empty side, not trained on */
	size_t		bytes;			/* table + link index + work arrays */
} cq_fa_stats;

typedef struct cq_fa_trainer cq_fa_trainer;

/* The bitext is borrowed until cq_fa_trainer_free. */
cq_code		cq_fa_trainer_create(const cq_bitext *b, const cq_fa_options *o,
								 cq_fa_trainer **out, cq_error *err);

/* One EM pass; CQ_STOPPED leaves the model as it was. */
cq_code		cq_fa_iterate(cq_fa_trainer *tr, const cq_align_progress *progress,
						  cq_error *err);

/* Passes until options.iterations - 1 are done. */
cq_code		cq_fa_train(cq_fa_trainer *tr, const cq_align_progress *progress,
						cq_error *err);

const cq_fa_model *cq_fa_trainer_model(const cq_fa_trainer *tr);
void		cq_fa_trainer_stats(const cq_fa_trainer *tr, cq_fa_stats *out);

/* True when the trainer conditions on the target side. */
bool		cq_fa_trainer_reverse(const cq_fa_trainer *tr);

/* The trainer's direction of its bitext (e conditions, f is generated). */
const cq_bitext_view *cq_fa_trainer_view(const cq_fa_trainer *tr);

/*
 * Viterbi alignment of training pair k: a[j] over its generated side (the
 * target side, or the source side of a reverse trainer).  Uses the trainer's
 * scratch space: not for concurrent calls on one trainer.
 */
void		cq_fa_viterbi(const cq_fa_trainer *tr, int64_t k, int32_t *a);

/* Moves the model out (counts dropped); the trainer can then only be freed. */
void		cq_fa_trainer_take_model(cq_fa_trainer *tr, cq_fa_model *out);

void		cq_fa_trainer_free(cq_fa_trainer *tr);

#endif
