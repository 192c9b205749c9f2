/*
 * A batch shared out to the thread pool (common/parallel.h) in parts: the
 * batched passes that give each lane whole sub-batches (cq_forward_parallel,
 * cq_encode_parallel) plan and run their parts here, so that both cut and
 * schedule alike.  Up to 2 parts per thread, so that a thread held up by the
 * machine leaves work to the others, but parts of CQ_PARTS_ROWS rows or
 * more, since each part reads all the weights once.  A lane takes the next
 * part until none is left.  Which part or lane computes an item never
 * changes its bits.
 */
#ifndef CQ_NN_PARTS_H
#define CQ_NN_PARTS_H

#include <stddef.h>

#define CQ_PARTS_ROWS 256
#define CQ_PARTS_MAX 64

/* Parts [bounds[k], bounds[k + 1]) of the items, run by `lanes` lanes with lane_bytes each. */
typedef struct cq_parts_plan
{
	int			parts;
	int			lanes;
	int			bounds[CQ_PARTS_MAX + 1];
	size_t		lane_bytes;
} cq_parts_plan;

/* What the planner asks of a batch: an item's work (any unit), a part's workspace. */
typedef struct cq_parts_ops
{
	double		(*work) (const void *arg, int i);
	size_t		(*bytes) (const void *arg, int lo, int hi);
} cq_parts_ops;

/*
 * The plan for n items holding `rows` rows in all on `threads` threads: one
 * part for one thread or one item; else rows / CQ_PARTS_ROWS parts, raised to
 * threads, cut to 2 per thread, to n and to CQ_PARTS_MAX, contiguous and of
 * about equal work, none empty; lane_bytes is the largest part's workspace,
 * rounded up to 64 bytes.
 */
void		cq_parts_plan_make(const cq_parts_ops *ops, const void *arg, int n, long rows,
							   int threads, cq_parts_plan *pl);

/* One part: items [lo, hi), part k, on a workspace of the plan's lane_bytes. */
typedef void (*cq_part_fn) (void *arg, int k, int lo, int hi, void *ws);

/*
 * Every part of the plan, on pl->lanes lanes of the pool, lane i on
 * ws + i * lane_bytes; returns when all are done.  A part must keep the
 * pool's contract (common/parallel.h): its products run inline.
 */
void		cq_parts_run(const cq_parts_plan *pl, cq_part_fn fn, void *arg, void *ws);

#endif
