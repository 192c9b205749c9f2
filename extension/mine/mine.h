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

/* k of the paper and of LASER. */
#define CQ_MINE_DEFAULT_K 4
#define CQ_MINE_MAX_K 1000
/* source rows x target rows of one product block */
#define CQ_MINE_DEFAULT_BLOCK_ROWS 256
#define CQ_MINE_DEFAULT_BLOCK_COLS 1024

typedef struct cq_mine_options
{
	int			k;				/* 1 .. CQ_MINE_MAX_K */
	bool		mutual;			/* keep only pairs that are each other's best */
	double		min_margin;		/* keep pairs with margin >= this (-INFINITY: all) */
	int			block_rows;		/* >= 1: no result depends on them */
	int			block_cols;
} cq_mine_options;

/* k 4, not mutual, no threshold, the default blocks. */
void		cq_mine_options_default(cq_mine_options *o);

/* CQ_EINVAL naming the first option out of range. */
cq_code		cq_mine_options_validate(const cq_mine_options *o, cq_error *err);

/*
 * The k nearest neighbours of each vector of one set in the other: rows
 * lists of len = min(k, size of the other set) entries, best first.
 */
typedef struct cq_knn
{
	int			rows;
	int			len;
	float	   *sim;			/* [rows, len] cosines, descending */
	int32_t    *idx;			/* [rows, len] indices in the other set */
	double	   *mean;			/* [rows] r(): the mean of the row's sims */
} cq_knn;

/* One mined pair: indices into X and Y. */
typedef struct cq_mine_pair
{
	int32_t		src;
	int32_t		tgt;
	float		cosine;
	double		margin;
} cq_mine_pair;

/*
 * Scale each of the n rows of v [n, d] to unit length in place (the norm
 * summed in double, in order).  CQ_EINVAL when a row has a component that is
 * not finite or is all zeros; *bad (if not NULL) gets its index (the message
 * speaks of "it": the caller names the row).
 */
cq_code		cq_mine_normalize(float *v, size_t n, int d, size_t *bad, cq_error *err);

/* The work space cq_mine allocates (see above); SIZE_MAX when it overflows. */
size_t		cq_mine_work_bytes(int n, int m, int d, const cq_mine_options *o);

/*
 * Both lists, x2y (each source's nearest targets) and y2x (each target's
 * nearest sources), by one sweep of blocks of cosines: block_cols targets
 * at a time (packed once), block_rows sources against them (nn/ops/rowgemm.h,
 * on the thread pool), then the rows' lists and the columns' lists updated
 * on the pool (parts own disjoint lists).  cq_poll() between blocks.  The
 * lists are allocated with cq_alloc (cq_mine_knn_free).
 */
cq_code		cq_mine_knn(const float *x, int n, const float *y, int m, int d,
						const cq_mine_options *o, cq_knn *x2y, cq_knn *y2x,
						cq_error *err);
void		cq_mine_knn_free(cq_knn *l);

/*
 * The mean of the k largest of values[0 .. n) (all of them when n < k),
 * summed in double from the largest down; values is sorted in place,
 * descending.  NaN for n == 0.  The lists' means are this function's.
 */
double		cq_mine_knn_mean(double *values, int n, int k);

/*
 * The ratio margin cos / ((mean_src + mean_tgt) / 2); false (no margin) when
 * mean_src + mean_tgt is not positive.
 */
bool		cq_mine_ratio_margin(double cos, double mean_src, double mean_tgt,
								 double *margin);

/*
 * The pairs: each source's best target by margin among its x2y list (with
 * mutual, only where that source is also the target's best among its y2x
 * list), margin >= min_margin; in source order into out[] (room for
 * x2y->rows pairs); *n_out gets their number.
 */
cq_code		cq_mine_select(const cq_knn *x2y, const cq_knn *y2x, bool mutual,
						   double min_margin, cq_mine_pair *out, int *n_out,
						   cq_error *err);

/* cq_mine_knn then cq_mine_select, the lists freed. */
cq_code		cq_mine(const float *x, int n, const float *y, int m, int d,
					const cq_mine_options *o, cq_mine_pair *out, int *n_out,
					cq_error *err);

#endif
