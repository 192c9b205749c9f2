/*
 * From the k-NN lists to pairs (mine/mine.h): the ratio margin and the best
 * candidate of each source (and, with mutual, of each target).  Plain C: no
 * PostgreSQL header.
 */
#ifndef CQ_MINE_SELECT_H
#define CQ_MINE_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "mine/knn.h"

/* One mined pair: indices into X and Y. */
typedef struct cq_mine_pair
{
	int32_t		src;
	int32_t		tgt;
	float		cosine;
	double		margin;
} cq_mine_pair;

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
 * x2y->rows pairs); *n_out gets their number.  cq_poll() every 1024 rows
 * (a row of k = 1000 entries takes microseconds).  bwd is the only
 * allocation (cq_alloc), so a host may leave by longjmp at a poll.
 */
cq_code		cq_mine_select(const cq_knn *x2y, const cq_knn *y2x, bool mutual,
						   double min_margin, cq_mine_pair *out, int *n_out,
						   cq_error *err);

#endif
