/*
 * Learning BPE merges like subword-nmt's learn_bpe.py (codes version 0.2).
 *
 * Input is a word -> count map (cq_count_words).  Each word becomes its
 * characters with "</w>" glued to the last; each step merges the most
 * frequent adjacent pair, ties broken by the greatest (left, right) in
 * code-point order, i.e. Python's max(stats, key=lambda x: (stats[x], x)).
 * Learning stops when the best pair's count is below min_frequency.
 *
 * Pair counts are kept exactly and updated incrementally: each pair lists the
 * words that contain it, so a merge only rewrites those words, and a max-heap
 * keyed by (count, pair) yields the next merge.  learn_bpe.py prunes rare
 * pairs as a speed heuristic, which can in rare cases pick a different pair;
 * corpq always takes the exact maximum.
 *
 * The step-wise API lets a host check for interrupts between merges.
 */
#ifndef CQ_BPE_LEARN_H
#define CQ_BPE_LEARN_H

#include <stdbool.h>

#include "text/bpe.h"

typedef struct cq_bpe_learner cq_bpe_learner;

/*
 * *out = a learner over the words of counts (vals = counts).  It fails only
 * with CQ_ENOMEM or CQ_ELIMIT (more than 2^31 distinct symbols), and so does
 * cq_bpe_learner_step.
 */
cq_code		cq_bpe_learner_new(const cq_strmap *counts, int64_t min_frequency,
							   cq_bpe_learner **out, cq_error *err);
void		cq_bpe_learner_free(cq_bpe_learner *l);

/* Learn one merge: *learned is false when no pair reaches min_frequency. */
cq_code		cq_bpe_learner_step(cq_bpe_learner *l, bool *learned, cq_error *err);

int32_t		cq_bpe_learner_n_merges(const cq_bpe_learner *l);

/* Count of the pair merged by the last step (0 before the first). */
int64_t		cq_bpe_learner_last_count(const cq_bpe_learner *l);

/* The merges learned so far as a version 0.2 model (*out uninitialised). */
cq_code		cq_bpe_learner_model(const cq_bpe_learner *l, cq_bpe *out,
								 cq_error *err);

/*
 * Convenience: up to max_merges steps.  keep_going (may be NULL) is called
 * before each step; returning false stops with CQ_STOPPED (no model).
 */
cq_code		cq_bpe_learn(const cq_strmap *counts, int32_t max_merges,
						 int64_t min_frequency,
						 bool (*keep_going) (void *arg), void *arg,
						 cq_bpe *out, cq_error *err);

#endif
