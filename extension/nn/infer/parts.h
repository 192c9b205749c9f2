/*
 * Cutting a batch into parts for the thread pool (common/parallel.h).  The
 * batched passes that give each lane whole sub-batches (cq_forward_parallel,
 * cq_encode_parallel) plan their parts here, so that both cut alike: up to 2
 * parts per thread, so that a thread held up by the machine leaves work to
 * the others, but parts of CQ_PARTS_ROWS rows or more, since each part reads
 * all the weights once.  Which part computes an item never changes its bits.
 */
#ifndef CQ_NN_PARTS_H
#define CQ_NN_PARTS_H

#define CQ_PARTS_ROWS 256
#define CQ_PARTS_MAX 64

/* The work of item i of arg (any unit: only the ratios count). */
typedef double (*cq_part_work_fn) (const void *arg, int i);

/*
 * How many parts for n items holding `rows` rows in all on `threads`
 * threads: 1 for one thread or one item; else rows / CQ_PARTS_ROWS, raised
 * to threads, cut to 2 per thread, to n and to CQ_PARTS_MAX.
 */
int			cq_parts_count(long rows, int n, int threads);

/*
 * Cut items [0, n) into contiguous parts of about equal work, at most
 * `parts` of them and none empty: bounds[0] = 0 < bounds[1] < ... <
 * bounds[k] = n; returns k.
 */
int			cq_parts_cut(cq_part_work_fn work, const void *arg, int n, int parts, int *bounds);

#endif
