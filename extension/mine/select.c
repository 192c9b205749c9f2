/*
 * From the k-NN lists to pairs (select.h): the ratio margin and the best
 * candidate of each source (and, with mutual, of each target).
 */
#include "mine/select.h"

#include <math.h>
#include <stdlib.h>

#include "common/interrupt.h"
#include "common/mem.h"

bool
cq_mine_ratio_margin(double cos, double mean_src, double mean_tgt, double *margin)
{
	double		sum = mean_src + mean_tgt;

	/* also false for NaN: a list of an empty set has no mean */
	if (!(sum > 0))
		return false;
	*margin = cos / (sum / 2);
	return true;
}

/*
 * The best entry of one list by margin: row's own mean and the other side's
 * means (is_src: the row is a source).  Of equal margins the smaller index.
 * -1 when no entry has a margin.
 */
static int32_t
best_entry(const cq_knn *l, int row, const cq_knn *other, bool is_src,
		   double *margin, float *cos)
{
	const float *sim = l->sim + (size_t) row * l->len;
	const int32_t *idx = l->idx + (size_t) row * l->len;
	int32_t		best = -1;

	for (int p = 0; p < l->len; p++)
	{
		double		own = l->mean[row],
					theirs = other->mean[idx[p]],
					mg;

		if (!cq_mine_ratio_margin(sim[p], is_src ? own : theirs, is_src ? theirs : own, &mg))
			continue;
		if (best < 0 || mg > *margin || (mg == *margin && idx[p] < best))
		{
			best = idx[p];
			*margin = mg;
			*cos = sim[p];
		}
	}
	return best;
}

void
cq_mine_best_sources(const cq_knn *x2y, const cq_knn *y2x, int32_t *bwd)
{
	for (int j = 0; j < y2x->rows; j++)
	{
		double		mg;
		float		c;

		if (j % 1024 == 0)
			cq_poll();
		bwd[j] = best_entry(y2x, j, x2y, false, &mg, &c);
	}
}

cq_code
cq_mine_select(const cq_knn *x2y, const cq_knn *y2x, bool mutual, double min_margin,
			   cq_mine_pair *out, int *n_out, cq_error *err)
{
	int32_t    *bwd = NULL;

	*n_out = 0;
	if (mutual && y2x->rows > 0)
	{
		bwd = cq_alloc(sizeof(int32_t) * (size_t) y2x->rows);
		if (bwd == NULL)
			return cq_fail(err, CQ_ENOMEM, "no memory for the best sources of %d targets", y2x->rows);
		cq_mine_best_sources(x2y, y2x, bwd);
	}
	for (int i = 0; i < x2y->rows; i++)
	{
		double		mg = 0;
		float		c = 0;
		int32_t		j;

		if (i % 1024 == 0)
			cq_poll();
		j = best_entry(x2y, i, y2x, true, &mg, &c);
		if (j < 0 || (mutual && bwd[j] != i) || !(mg >= min_margin))
			continue;
		out[*n_out] = (cq_mine_pair) {i, j, c, mg};
		(*n_out)++;
	}
	cq_free(bwd);
	return CQ_OK;
}

/* a before b in the candidates' order: a larger margin, then a smaller index */
static bool
candidate_before(const cq_mine_pair *a, const cq_mine_pair *b)
{
	return a->margin > b->margin || (a->margin == b->margin && a->tgt < b->tgt);
}

int
cq_mine_candidates(const cq_knn *x2y, const cq_knn *y2x, const int32_t *bwd,
				   int row, double min_margin, int kc, cq_mine_pair *out)
{
	const float *sim = x2y->sim + (size_t) row * x2y->len;
	const int32_t *idx = x2y->idx + (size_t) row * x2y->len;
	int			n = 0,
				kept = 0;

	/* the kc best by margin, by insertion into out (kc <= a list's length) */
	for (int p = 0; p < x2y->len; p++)
	{
		cq_mine_pair c = {row, idx[p], sim[p], 0};
		int			at;

		if (!cq_mine_ratio_margin(sim[p], x2y->mean[row], y2x->mean[idx[p]], &c.margin))
			continue;
		if (n == kc && !candidate_before(&c, &out[n - 1]))
			continue;
		at = n < kc ? n++ : kc - 1;
		while (at > 0 && candidate_before(&c, &out[at - 1]))
		{
			out[at] = out[at - 1];
			at--;
		}
		out[at] = c;
	}
	for (int p = 0; p < n; p++)
	{
		if (!(out[p].margin >= min_margin) || (bwd != NULL && bwd[out[p].tgt] != row))
			continue;
		out[kept++] = out[p];
	}
	return kept;
}
