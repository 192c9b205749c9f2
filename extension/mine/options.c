/* The options of mining (options.h): defaults and their check. */
#include "mine/options.h"

#include <math.h>

void
cq_mine_options_default(cq_mine_options *o)
{
	o->k = CQ_MINE_DEFAULT_K;
	o->mutual = false;
	o->min_margin = -INFINITY;
	o->block_rows = CQ_MINE_DEFAULT_BLOCK_ROWS;
	o->block_cols = CQ_MINE_DEFAULT_BLOCK_COLS;
}

cq_code
cq_mine_options_validate(const cq_mine_options *o, cq_error *err)
{
	if (o->k < 1 || o->k > CQ_MINE_MAX_K)
		return cq_fail(err, CQ_EINVAL, "k is %d, not from 1 to %d", o->k, CQ_MINE_MAX_K);
	if (o->block_rows < 1 || o->block_cols < 1)
		return cq_fail(err, CQ_EINVAL, "blocks of %d x %d vectors", o->block_rows, o->block_cols);
	if (isnan(o->min_margin))
		return cq_fail(err, CQ_EINVAL, "min_margin is NaN");
	return CQ_OK;
}
