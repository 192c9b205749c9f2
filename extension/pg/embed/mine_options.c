/*
 * mine_vectors()' options (docs/embeddings.md), parsed straight onto the
 * core's options (mine/mine.h): k, mutual, min_margin, and the blocks of the
 * exact search, which change its memory and speed but no result.
 */
#include "postgres.h"

#include <math.h>

#include "pg/base/options.h"
#include "pg/embed/embed.h"

#define OPT(field) CORPQ_OPT_FIELD(cq_mine_options, field)

static const CorpqOption rows[] = {
	{.key = "k", OPT(k), .type = CORPQ_OPT_INT, .min = 1, .max = CQ_MINE_MAX_K,
	.def = CQ_MINE_DEFAULT_K},
	{.key = "mutual", OPT(mutual), .type = CORPQ_OPT_BOOL, .def = false},
	/* unset: every best pair; a margin below 0 is never a translation */
	{.key = "min_margin", OPT(min_margin), .type = CORPQ_OPT_NUMBER, .flags = CORPQ_OPT_UNSET,
	.range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 1e6},
	{.key = "block_rows", OPT(block_rows), .type = CORPQ_OPT_INT, .min = 1, .max = 65536,
	.def = CQ_MINE_DEFAULT_BLOCK_ROWS},
	{.key = "block_cols", OPT(block_cols), .type = CORPQ_OPT_INT, .min = 1, .max = 65536,
	.def = CQ_MINE_DEFAULT_BLOCK_COLS},
	{0}
};

static const CorpqOptionTable table = {"mining", rows};

void
corpq_mine_options_parse(Jsonb *options, cq_mine_options *o)
{
	cq_mine_options_default(o);
	corpq_options_parse(&table, options, o);
	if (o->min_margin == CORPQ_OPT_UNSET_VALUE)
		o->min_margin = -INFINITY;
}
