/*
 * Scoring sentence pairs with a catalog model from SQL (score_*.c).
 *
 * A CorpqScorer lives for one query (in fn_extra, or in the context of a
 * set-returning call): it remembers every model name it resolved, so the
 * query keeps the version it started with even if a new one is committed
 * meanwhile, holds the vocabularies of the current model, and reuses its
 * forward workspace and output arrays across calls.
 */
#ifndef CORPQ_MODEL_SCORE_H
#define CORPQ_MODEL_SCORE_H

#include "postgres.h"

#include "fmgr.h"
#include "nodes/pg_list.h"

#include "nn/infer/forward.h"
#include "nn/infer/uncertainty.h"
#include "pg/model/model_catalog.h"
#include "pg/model/too_long.h"
#include "pg/text/text_catalog.h"

typedef struct CorpqResolved
{
	char	   *spec;			/* as given: "name" or "name@N" */
	CorpqModelRef ref;
} CorpqResolved;

typedef struct CorpqScorer
{
	MemoryContext cxt;			/* owns everything below */
	List	   *resolved;		/* CorpqResolved *, every spec seen */
	CorpqResolved *cur;
	CorpqVocab *src_vocab;
	CorpqVocab *tgt_vocab;
	cq_model_config cfg;		/* of the current model */

	void	   *ws;				/* forward workspace */
	Size		ws_bytes;
	cq_forward_out out;			/* output arrays, out_rows / out_pairs long */
	long		out_rows;
	int			out_pairs;
} CorpqScorer;

/* The scorer in fn_extra (created on first use, in fn_mcxt). */
CorpqScorer *corpq_scorer_cached(FunctionCallInfo fcinfo);
CorpqScorer *corpq_scorer_create(MemoryContext parent);

/* Make spec the current model (resolving it once per scorer). */
void		corpq_scorer_use(CorpqScorer *s, const char *spec, bool pinned);

/*
 * Encode a pair with the current model's vocabularies into p (ids palloc'd
 * in CurrentMemoryContext).  A side longer than max_positions - 1 tokens is
 * an ERROR naming the limit (CORPQ_TOO_LONG_ERROR) or makes it return false
 * with nothing in p (CORPQ_TOO_LONG_NULL); true when p can be scored.
 * p->key is a hash of the ids, so a pair's dropout masks depend on its
 * content only, never on its batch.
 */
bool		corpq_scorer_encode(CorpqScorer *s, const char *src, int src_len,
								const char *tgt, int tgt_len, CorpqTooLong on_too_long,
								cq_pair *p);

/*
 * ERROR (program_limit_exceeded) naming the current model's limit when a
 * side ("source", "target") of n tokens exceeds max_positions - 1.
 */
void		corpq_scorer_check_length(CorpqScorer *s, const char *side, int n);

/*
 * h extended with n token ids: the content key of a sentence, so that what
 * is drawn for it (dropout masks, samples) depends on its tokens only.
 */
uint64		corpq_ids_key(uint64 h, const int32 *ids, int n);

/*
 * One forward over pairs (dropout NULL = off); the outputs are s->out, per
 * target position pair after pair, valid until the next call.  With
 * corpq.threads above 1 the pairs are shared out to the core's pool in parts
 * (cq_forward_parallel): the same bits as on one thread.
 */
void		corpq_scorer_forward(CorpqScorer *s, const cq_pair *pairs, int n,
								 const cq_dropout *dropout);

/*
 * How many of the m pairs order[0..m) go in the next forward: at most max_n,
 * within the core's positions per batch and corpq.max_batch_mb, counting the
 * forward's work space, the output arrays and extra_per_target bytes per
 * target position (uncertainty's pass buffers).  A pair's result does not
 * depend on its batch, so cutting a batch short changes no score; one pair
 * that does not fit alone is an error.  Every batched scorer cuts here.
 */
int			corpq_scorer_batch_cut(const CorpqScorer *s, const cq_pair *const *order, int m,
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
void		corpq_scorer_uncertainty(CorpqScorer *s, const cq_pair *pairs, int n,
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
 * Score rows[0..n) with the scorer's current model (corpq_scorer_use): the
 * pairs are encoded, ordered by length and scored a->batch_size at a time
 * (cut to corpq.max_batch_mb); every row gets the bits the per-row function
 * gives it.  Adds to *counts.  Scratch memory is freed on return.
 */
void		corpq_score_rows(CorpqScorer *s, const CorpqScoreArgs *a, CorpqScoreRow *rows,
							 int n, CorpqScoreCounts *counts);

/* ---- the job kind (score_job.c) ---- */

struct CorpqJob;
void		score_job(struct CorpqJob *job);

#endif
