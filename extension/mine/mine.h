/*
 * Margin-based mining of sentence pairs from two sets of vectors (Artetxe &
 * Schwenk 2019, "Margin-based Parallel Corpus Mining with Multilingual
 * Sentence Embeddings": the ratio margin, as LASER's public mine_bitexts.py
 * computes it).  Plain C: no PostgreSQL header.
 *
 * Given source vectors X [n, d] and target vectors Y [m, d], both L2-normalised
 * (cq_mine_normalize), so that cos(x, y) is their dot product:
 *
 *   NN_k(x)   the k targets with the largest cos(x, .), NN_k(y) the k sources
 *             with the largest cos(., y); when a set has fewer than k vectors
 *             a list holds the whole set (k_x = min(k, m), k_y = min(k, n))
 *   r(x)      = sum_{z in NN_k(x)} cos(x, z) / k_x     (the k-NN mean)
 *   margin(x, y) = cos(x, y) / ((r(x) + r(y)) / 2)
 *             = cos(x, y) / (sum cos(x, z) / 2k + sum cos(y, z) / 2k)
 *
 * Candidates: a source's candidates are its k nearest targets (by cosine);
 * its best is the candidate with the largest margin ("forward" retrieval).
 * With mutual, a pair is kept only when the source is also the best of the
 * target's k nearest sources by margin ("intersect" retrieval).  A pair whose
 * denominator r(x) + r(y) is not positive has no margin (the ratio of a
 * negative neighbourhood is not a score: its sign would reverse the ranking)
 * and is never chosen.
 *
 * Determinism.  Every cosine is one chain of fused multiply-adds over the
 * dimensions in a fixed order (nn/ops/rowgemm.h), whatever block or thread
 * computes it, so it has the same bits for any block sizes and any number of
 * threads.  The lists are the top k under a strict total order -- a larger
 * cosine first, of equal cosines the smaller index first -- so their content
 * does not depend on the order the candidates arrive in.  Means are summed
 * in double, largest first; margins are computed in double from those.  Of
 * equal margins the smaller index wins.  Hence the result is a pure function
 * of the inputs, k and mutual (indices are positions in X and Y, so a caller
 * that wants ties broken by its own ids sorts the sets by id first).
 *
 * Work space, bytes, besides the caller's vectors (cq_mine_work_bytes):
 *   8 (n k_x + m k_y)          the two lists (a float and an int32 each)
 *   8 (n + m)                  the k-NN means
 *   4 m                        the targets' best sources (mutual)
 *   4 br bc + 4 bc' d          the block of cosines and the packed target
 *                              block (br = min(block_rows, n), bc =
 *                              min(block_cols, m), bc' = bc rounded up to
 *                              CQ_ROWGEMM_NB)
 * and the caller's result array of n pairs.
 */
#ifndef CQ_MINE_H
#define CQ_MINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "mine/knn.h"
#include "mine/select.h"

/*
 * Scale each of the n rows of v [n, d] to unit length in place (the norm
 * summed in double, in order).  CQ_EINVAL when a row has a component that is
 * not finite or is all zeros; *bad (if not NULL) gets its index (the message
 * speaks of "it": the caller names the row).
 */
cq_code		cq_mine_normalize(float *v, size_t n, int d, size_t *bad, cq_error *err);

/* The work space cq_mine allocates (see above); SIZE_MAX when it overflows. */
size_t		cq_mine_work_bytes(int n, int m, int d, const cq_mine_options *o);

/* cq_mine_knn then cq_mine_select, the lists freed. */
cq_code		cq_mine(const float *x, int n, const float *y, int m, int d,
					const cq_mine_options *o, cq_mine_pair *out, int *n_out,
					cq_error *err);

#endif
