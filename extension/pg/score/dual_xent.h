/*
 * Dual conditional cross-entropy of sentence pairs, in batches (dual_xent.c):
 * the one computation behind corpq.dual_xent(), corpq.dual_xent_scores() and
 * the dual_xent filter (pg/filters), so that a pair's score is the same bits
 * whichever of them asks and however many pairs share its forward pass.
 *
 * The interface takes plain UTF-8 strings: the filters' cq_pair
 * (filters/filter_set.h) and the model's (nn/infer/forward.h) never meet in
 * one file.
 */
#ifndef CORPQ_SCORE_DUAL_XENT_H
#define CORPQ_SCORE_DUAL_XENT_H

#include "postgres.h"

#include "pg/model/model.h"
#include "pg/score/score_counts.h"

/* A forward and a backward scorer; resolved names stick for its lifetime. */
typedef struct CorpqDualXent CorpqDualXent;

/* One pair's UTF-8 sides. */
typedef struct CorpqTextPair
{
	const char *src;
	int			src_len;
	const char *tgt;
	int			tgt_len;
} CorpqTextPair;

/* A new pair of scorers, in a memory context under parent. */
CorpqDualXent *corpq_dual_xent_create(MemoryContext parent);

/* Free d and everything it loaded (the model cache keeps the models). */
void		corpq_dual_xent_free(CorpqDualXent *d);

/*
 * The scores of n pairs into out[n], with models forward (src -> tgt) and
 * backward (tgt -> src): names ("m", "m@3"), or with pinned "name@N" only.
 * Each direction encodes the pairs, orders them by length and runs them in
 * batches cut to corpq.max_batch_mb; scratch memory is freed on return.  A
 * pair with a side longer than either model accepts is an ERROR
 * (CORPQ_TOO_LONG_ERROR) or gets null[i] = true and no score; the others
 * null[i] = false.  counts (may be NULL) gets the pairs added up.
 */
void		corpq_dual_xent_score(CorpqDualXent *d, const char *forward, const char *backward,
								  bool pinned, CorpqTooLong on_too_long,
								  const CorpqTextPair *pairs, int n, double *out, bool *null,
								  CorpqScoreCounts *counts);

#endif
