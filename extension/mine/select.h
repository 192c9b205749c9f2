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

/*
 * The targets' best sources by margin among their y2x lists, into
 * bwd[0 .. y2x->rows) (-1 where none has a margin): what mutual compares
 * with.  cq_poll() every 1024 rows.
 */
void		cq_mine_best_sources(const cq_knn *x2y, const cq_knn *y2x, int32_t *bwd);

/*
 * A source's candidates for a re-ranking (a classifier judging each one):
 * the kc best entries of row's x2y list by margin (a larger margin first,
 * of equal margins the smaller index: the order cq_mine_select chooses in),
 * then of those the ones a pair may be (margin >= min_margin and, with bwd
 * not NULL, the target's best source is row), in that order, into
 * out[0 .. kc); returns their number.  So with kc = 1 the one candidate is
 * cq_mine_select's pair of row (bwd from cq_mine_best_sources for mutual),
 * or none when it has none.  No allocation; kc >= 1.
 */
int			cq_mine_candidates(const cq_knn *x2y, const cq_knn *y2x, const int32_t *bwd,
							   int row, double min_margin, int kc, cq_mine_pair *out);

#endif
