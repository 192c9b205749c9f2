/*
 * Clipped n-gram matches between a hypothesis and references, sequences of
 * 32-bit items (code points for chrF, token ids for BLEU and chrF++ words).
 *
 * Each sequence's positions are sorted once by the window of up to max_order
 * items starting there; then, for every order n, positions sharing an n-gram
 * are contiguous (the n-gram is a prefix of the window), and one merge pass
 * over the sorted lists counts min(count in hyp, max count in any reference)
 * per n-gram -- exactly, without hashing.  When the window's items fit in
 * 128 bits (chrF's 6-grams of code points, BLEU's 4-grams of token ids) a
 * window is sorted as one integer.
 */
#ifndef CQ_METRICS_NGRAM_H
#define CQ_METRICS_NGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cptext.h"

#define CQ_NGRAM_MAX_ORDER	16
#define CQ_NGRAM_MAX_REFS	64

typedef struct cq_ngram_work
{
	cq_cpbuf	pos,			/* sorted positions, hyp then each reference */
				tmp,
				keys;			/* packed windows (ngram.c) */
	bool		force_generic;	/* tests: never pack windows */
} cq_ngram_work;

void		cq_ngram_work_free(cq_ngram_work *w);

/*
 * matches[n-1], n = 1..max_order: sum over the n-grams g of hyp of
 * min(count of g in hyp, max over the references of the count of g there).
 */
bool		cq_ngram_matches(const uint32_t *hyp, size_t hyp_n,
							 const uint32_t *const *refs, const size_t *ref_n, int nrefs,
							 int max_order, int64_t *matches, cq_ngram_work *w);

#endif
