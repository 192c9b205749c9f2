/*
 * UncSamp's bilingual dictionary (thesis ch. 6): from symmetrised link
 * counts over a corpus, p(y|x) = count(x, y) / sum_y' count(x, y') and the
 * word entropy H(y|x) = -sum_y p(y|x) ln p(y|x) (Eq. 6.4, nats, no
 * smoothing); the monolingual uncertainty of a sentence is the mean of
 * H(y|x_t) over its tokens (Eq. 6.3), a word without links scoring 1e-6.
 */
#ifndef CQ_ALIGN_LEXDICT_H
#define CQ_ALIGN_LEXDICT_H

#include <stdint.h>

#include "align/progress.h"
#include "align/symmetrize.h"

#define CQ_LEXDICT_MISSING_ENTROPY 1e-6

typedef struct cq_lexdict
{
	int32_t		n_src;
	int32_t		n_tgt;
	int64_t		nnz;
	int64_t    *row_off;		/* [n_src + 1] */
	int32_t    *col;			/* [nnz] target ids, increasing per row */
	int64_t    *count;			/* [nnz] count(x, y) */
	double	   *prob;			/* [nnz] p(y|x) */
	int64_t    *row_links;		/* [n_src] sum_y count(x, y) */
	double	   *entropy;		/* [n_src] H(y|x); 0 when x has no link */
} cq_lexdict;

typedef struct cq_lexdict_builder cq_lexdict_builder;

cq_code		cq_lexdict_builder_create(int32_t n_src, int32_t n_tgt,
									  cq_lexdict_builder **out, cq_error *err);

/* Counts the links of one pair (positions into src/tgt, ids from them). */
cq_code		cq_lexdict_builder_add(cq_lexdict_builder *b,
								   const int32_t *src, int n_src,
								   const int32_t *tgt, int n_tgt,
								   const cq_link *links, int n_links,
								   cq_error *err);

cq_code		cq_lexdict_builder_finish(cq_lexdict_builder *b, cq_lexdict *out,
									  cq_error *err);

void		cq_lexdict_builder_free(cq_lexdict_builder *b);

/* Mean of H(y|x) over the n ids (Eq. 6.3); 0 for an empty sentence. */
double		cq_lexdict_uncertainty(const cq_lexdict *d, const int32_t *ids, int n);

void		cq_lexdict_free(cq_lexdict *d);

#endif
