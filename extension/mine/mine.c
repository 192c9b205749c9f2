/*
 * Mining in one call (mine.h): the work space the options need, and
 * cq_mine = the k-NN lists in both directions, then the selection.
 */
#include "mine/mine.h"

#include <math.h>

#include "nn/ops/rowgemm.h"

size_t
cq_mine_work_bytes(int n, int m, int d, const cq_mine_options *o)
{
	double		kx = m < o->k ? m : o->k,
				ky = n < o->k ? n : o->k,
				br = o->block_rows < n ? o->block_rows : n,
				bc = o->block_cols < m ? o->block_cols : m,
				bytes;

	bytes = 8.0 * (n * kx + m * ky)	/* the lists */
		+ 8.0 * ((double) n + m)	/* the means */
		+ 4.0 * m					/* the targets' best sources (mutual) */
		+ 4.0 * br * bc				/* a block of cosines */
		+ 4.0 * (double) cq_rowgemm_packed_floats((int) bc, d);	/* the packed targets */
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
