/*
 * The options of mining (mine/mine.h): k, mutual, the margin threshold and
 * the product blocks.  Plain C: no PostgreSQL header.
 */
#ifndef CQ_MINE_OPTIONS_H
#define CQ_MINE_OPTIONS_H

#include <stdbool.h>

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

#endif
