/*
 * Token interning: equal tokens (equal code point strings) of several
 * sequences get equal 32-bit ids, so n-grams of words can be compared as
 * n-grams of integers (ngram.h).  Tokens are sorted by a 64-bit hash and
 * compared by content within a hash, so a collision costs time, not
 * correctness.
 */
#ifndef CQ_METRICS_INTERN_H
#define CQ_METRICS_INTERN_H

#include <stdbool.h>

#include "common/cptext.h"
#include "metrics/tokenize.h"

typedef struct cq_intern_work
{
	cq_cpbuf	seq,			/* per token: its sequence */
				tok,			/* per token: its index in the sequence */
				keys,			/* (hash, token) pairs, 128-bit */
				reps;			/* distinct tokens within one hash */
} cq_intern_work;

void		cq_intern_work_free(cq_intern_work *w);

/* ids[s] = the id of each token spans[s].v[i] of texts[s], s = 0..nseq-1. */
bool		cq_intern_tokens(const cq_cpbuf *texts, const cq_spans *spans, int nseq,
							 cq_cpbuf *ids, cq_intern_work *w);

#endif
