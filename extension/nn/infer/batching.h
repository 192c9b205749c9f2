/*
 * Token-budget batching of sentence pairs, as fairseq's: a pair costs
 * len = max(src_len, tgt_len) + 1 (the appended </s>); a batch of k pairs
 * whose longest costs len_max has k * len_max <= max_tokens.  Pairs are
 * sorted by len (ties broken by a seeded random key, then by index) and cut
 * greedily into batches; the batches are fixed for the run and their order is
 * shuffled per epoch from (seed, epoch).  A pair with src_len + 1 or
 * tgt_len + 1 above max_positions, or len above max_tokens, is skipped and
 * counted.  Any (epoch, batch) can be asked for directly, so a job resumes by
 * remembering two numbers.
 */
#ifndef CQ_NN_BATCHING_H
#define CQ_NN_BATCHING_H

#include <stdint.h>

#include "common/error.h"

typedef struct cq_batcher
{
	long		n_pairs;		/* pairs given */
	long		n_kept;			/* pairs in some batch */
	long		n_skipped;		/* n_pairs - n_kept */
	long		n_batches;		/* batches per epoch */
	int			max_tokens;
	uint64_t	seed;
	long	   *order;			/* [n_kept] pair indices, batch after batch */
	long	   *starts;			/* [n_batches + 1] each batch's first in order */
	long	   *perm;			/* [n_batches] the cached epoch's batch order */
	int64_t		perm_epoch;		/* which epoch perm holds, -1 none */
} cq_batcher;

cq_code cq_batcher_new(const int *src_len, const int *tgt_len, long n,
							int max_tokens, int max_positions, uint64_t seed,
							cq_batcher **out, cq_error *err);
void		cq_batcher_free(cq_batcher *b);

/*
 * Batch `index` (0 .. n_batches - 1) of epoch `epoch` (>= 0): *pairs points
 * at its *n pair indices (valid until the batcher is freed).
 */
cq_code cq_batcher_batch(cq_batcher *b, int64_t epoch, long index,
							  const long **pairs, int *n, cq_error *err);

#endif
