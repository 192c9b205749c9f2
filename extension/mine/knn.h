/*
 * Exact k nearest neighbours of two sets of unit vectors in both directions
 * (mine/mine.h says what the lists are and why their bits do not depend on
 * blocks or threads).  Plain C: no PostgreSQL header.
 */
#ifndef CQ_MINE_KNN_H
#define CQ_MINE_KNN_H

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

#endif
