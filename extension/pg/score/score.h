/*
 * Scoring sentence pairs with a catalog model from SQL (pg/score): the
 * per-row functions (score_scalar.c), the batched scorer of score()
 * (score_batch.c), the forward passes and uncertainty they share
 * (score_forward.c), dual conditional cross-entropy (dual_xent.h) and the
 * "score" job (score_job.c).
 *
 * Every scorer runs its model through a model session (pg/model/
 * model_session.h), one per query (in fn_extra, or in the context of a
 * set-returning call): the query keeps the version it started with, and the
 * session's work space and output arrays are reused across calls.
 */
#ifndef CORPQ_SCORE_SCORE_H
#define CORPQ_SCORE_SCORE_H

#include "postgres.h"

#include "fmgr.h"

#include "nn/infer/forward.h"
#include "nn/infer/uncertainty.h"
#include "pg/base/options.h"
#include "pg/model/model_session.h"
#include "pg/score/score_counts.h"

/*
 * One forward over pairs (dropout NULL = off); the outputs are s->out, per
 * target position pair after pair, valid until the next call.  With
 * corpq.threads above 1 the pairs are shared out to the core's pool in parts
 * (cq_forward_parallel): the same bits as on one thread.
 */
void		corpq_score_forward(CorpqModelSession *s, const cq_pair *pairs, int n,
								 const cq_dropout *dropout);

/*
 * How many of the m pairs order[0..m) go in the next forward: at most max_n,
 * within the core's positions per batch and corpq.max_batch_mb, counting the
 * forward's work space, the output arrays and extra_per_target bytes per
 * target position (uncertainty's pass buffers).  A pair's result does not
 * depend on its batch, so cutting a batch short changes no score; one pair
 * that does not fit alone is an error.  Every batched scorer cuts here.
 */
int			corpq_score_batch_cut(const CorpqModelSession *s, const cq_pair *const *order, int m,
								   int max_n, Size extra_per_target);

/* The measure named name; ERROR listing the valid names. */
cq_uncertainty corpq_measure_from_name(const char *name);

/*
 * Monte Carlo dropout passes of one uncertainty: each is a full forward pass
 * (and the pass buffers grow with it), so a call is capped.  MultiUAT uses 30;
 * the training strategies take the same bound.
 */
#define CORPQ_MAX_PASSES 1000

/* ERROR unless 1 <= passes <= CORPQ_MAX_PASSES. */
void		corpq_check_passes(int32 passes);

/*
 * Uncertainty of each pair over K Monte Carlo dropout passes (one batched
 * forward per pass, masks keyed by seed, pass and pair), into out[n].
 */
void		corpq_score_uncertainty(CorpqModelSession *s, const cq_pair *pairs, int n,
									 cq_uncertainty measure, int passes, uint64 seed,
									 double *out);

/* ---- scoring rows in batches: score(), and a job's chunks ---- */

/* What a batch of pairs is scored for. */
typedef enum CorpqScoreWhat
{
	CORPQ_SCORE_SENT_PROB,
	CORPQ_SCORE_SENT_LOGPROB,
	CORPQ_SCORE_UNCERTAINTY
} CorpqScoreWhat;

/* The score named name (sent_prob, sent_logprob, uncertainty); ERROR listing them. */
CorpqScoreWhat corpq_score_what_from_name(const char *name);

typedef struct CorpqScoreArgs
{
	CorpqScoreWhat what;
	int			batch_size;		/* pairs per forward, at most */
	cq_uncertainty measure;		/* uncertainty only */
	int			passes;
	uint64		seed;
	CorpqTooLong on_too_long;
} CorpqScoreArgs;

/* One pair of a chunk: its text in, its score out. */
typedef struct CorpqScoreRow
{
	const char *src;			/* NULL: a NULL side, no score */
	int			src_len;
	const char *tgt;			/* NULL: a NULL side, no score */
	int			tgt_len;
	bool		null;			/* out: no score (a NULL side, or too long) */
	double		score;			/* out, when not null */
	int			tokens;			/* out, when not null: target positions scored */
} CorpqScoreRow;

/*
 * Score rows[0..n) with the scorer's current model (corpq_model_session_use): the
 * pairs are encoded, ordered by length and scored a->batch_size at a time
 * (cut to corpq.max_batch_mb); every row gets the bits the per-row function
 * gives it.  Adds to *counts.  Scratch memory is freed on return.
 */
void		corpq_score_rows(CorpqModelSession *s, const CorpqScoreArgs *a, CorpqScoreRow *rows,
							 int n, CorpqScoreCounts *counts);

/* ---- corpq.score_job()'s options (score_options.c) ---- */

/* The scores a job computes. */
typedef enum CorpqScoreKind
{
	SCORE_SENT_PROB,
	SCORE_SENT_LOGPROB,
	SCORE_UNCERTAINTY,
	SCORE_DUAL_XENT,
	SCORE_PAIR_QUALITY,			/* a classifier's, not the model's (pg/classifier) */
	N_SCORE_KINDS
} CorpqScoreKind;

/* corpq.score_job()'s options (score_job.c). */
typedef struct CorpqScoreJobOptions
{
	char	   *what;			/* score names, separated by commas */
	char	   *columns;		/* the target's columns for them; unset: see corpq_score_job_resolve() */
	char	   *measure;		/* uncertainty's */
	int			passes;
	int64		seed;
	char	   *backward;		/* dual_xent's backward model */
	char	   *classifier;		/* pair_quality's classifier */
	int			batch_size;
	int			chunk_rows;
	int			threads;		/* the job's (pg/jobs/jobs.h) */
	bool		skip_existing;
	int			on_too_long;	/* CorpqTooLong (model.h) */
	bool		foreign_target; /* a target of another role's is intended (row_job.h) */
	char	   *version_column; /* the target's column for the model's version, or NULL */
} CorpqScoreJobOptions;
extern const CorpqOptionTable corpq_score_job_options;

/* The scores of a job, resolved from the options. */
typedef struct CorpqScorePlan
{
	int			n;
	CorpqScoreKind	kinds[N_SCORE_KINDS];
	char	   *columns[N_SCORE_KINDS];
	bool		uses[N_SCORE_KINDS];
	bool		uses_model;		/* a score of the model argument (all but pair_quality) */
} CorpqScorePlan;

/*
 * The options' cross-key checks and defaults (an option of a score the job
 * does not compute is an error; uncertainty's as corpq.uncertainty()'s), and
 * the plan: the scores, their target columns.
 */
void		corpq_score_job_resolve(CorpqScoreJobOptions *o, CorpqScorePlan *p);

/* ---- the job kind (score_job.c) ---- */

/* _PG_init's call for score/: register the job kind "score" (a row job). */
void		corpq_score_init(void);

#endif
