/*
 * Mining in one call (mine.h): the work space the options need, and
 * cq_mine = the k-NN lists in both directions, then the selection.
 */
#include "mine/mine.h"

#include <stdint.h>

size_t
cq_mine_work_bytes(int n, int m, int d, const cq_mine_options *o)
{
	double		bytes = (double) cq_mine_knn_lists_bytes(n, m, o->k)	/* lists, means */
		+ 4.0 * m				/* the targets' best sources (mutual) */
		+ (double) cq_mine_knn_block_bytes(n, m, d, o);	/* cosines, packed targets */

	return bytes >= (double) SIZE_MAX ? SIZE_MAX : (size_t) bytes;
}

cq_code
cq_mine(const float *x, int n, const float *y, int m, int d,
		const cq_mine_options *o, cq_mine_pair *out, int *n_out, cq_error *err)
{
	cq_knn		x2y,
				y2x;
	cq_code		rc;

	*n_out = 0;
	rc = cq_mine_knn(x, n, y, m, d, o, &x2y, &y2x, err);
	if (rc != CQ_OK)
		return rc;
	rc = cq_mine_select(&x2y, &y2x, o->mutual, o->min_margin, out, n_out, err);
	cq_mine_knn_free(&x2y);
	cq_mine_knn_free(&y2x);
	return rc;
}
