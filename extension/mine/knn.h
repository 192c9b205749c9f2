/*
 * Exact k nearest neighbours of two sets of unit vectors in both directions
 * (mine/mine.h says what the lists are and why their bits do not depend on
 * blocks or threads).  Plain C: no PostgreSQL header.
 */
#ifndef CQ_MINE_KNN_H
#define CQ_MINE_KNN_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "mine/options.h"

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

/*
 * Both lists, x2y (each source's nearest targets) and y2x (each target's
 * nearest sources), by one sweep of blocks of cosines: block_cols targets
 * at a time (packed once), block_rows sources against them (nn/ops/rowgemm.h,
 * on the thread pool), then the rows' lists and the columns' lists updated
 * on the pool (parts own disjoint lists).  cq_poll() between blocks, and
 * every few hundred rows while the means are summed (a list of k = 1000
 * takes microseconds).  The lists are allocated with cq_alloc
 * (cq_mine_knn_free).
 */
cq_code		cq_mine_knn(const float *x, int n, const float *y, int m, int d,
						const cq_mine_options *o, cq_knn *x2y, cq_knn *y2x,
						cq_error *err);
void		cq_mine_knn_free(cq_knn *l);

/*
 * cq_mine_knn in steps, for a caller that holds the vectors in blocks (a
 * host that streams them from a file): init makes the empty lists of n
 * sources and m targets; add sweeps the cosines of sources i0 .. i0 + rows
 * (x: those rows only) with targets j0 .. j0 + cols (y: those rows only)
 * into them, in blocks of o's sizes, cq_poll() between blocks; finish
 * computes the means once every source met every target exactly once.  Any
 * partition into add calls gives the lists cq_mine_knn gives, bit for bit:
 * a cosine's bits do not depend on its block, and a list is the top k under
 * a strict total order, whatever order its candidates arrive in.  So the
 * k-NN of a source over all target blocks is the merge of its per-block
 * top k, and its mean r() the mean of that merged list.  On an error the
 * lists are left as they are (cq_mine_knn_free them).
 */
cq_code		cq_mine_knn_init(int n, int m, int k, cq_knn *x2y, cq_knn *y2x,
							 cq_error *err);
cq_code		cq_mine_knn_add(const float *x, int i0, int rows, const float *y,
							int j0, int cols, int d, const cq_mine_options *o,
							cq_knn *x2y, cq_knn *y2x, cq_error *err);
void		cq_mine_knn_finish(cq_knn *x2y, cq_knn *y2x);

/* Bytes of the two lists and their means for n x m vectors and k. */
size_t		cq_mine_knn_lists_bytes(int n, int m, int k);

/*
 * Bytes one cq_mine_knn_add of rows x cols vectors of dimension d allocates
 * (the block of cosines and the packed target block, as o sizes them).
 */
size_t		cq_mine_knn_block_bytes(int rows, int cols, int d, const cq_mine_options *o);

/*
 * The mean of the k largest of values[0 .. n) (all of them when n < k),
 * summed in double from the largest down; values is sorted in place,
 * descending (a list already in that order, as the k-NN lists are, is
 * summed without sorting: the same bits).  NaN for n == 0.  The lists' means are this function's.
 */
double		cq_mine_knn_mean(double *values, int n, int k);

#endif
