/*
 * A batch shared out to the thread pool in parts (parts.h).
 */
#include "nn/infer/parts.h"

#include "common/parallel.h"

static int
parts_count(long rows, int n, int threads)
{
	long		want = rows / CQ_PARTS_ROWS;

	if (threads <= 1 || n < 2)
		return 1;
	want = want > 2L * threads ? 2L * threads : want;
	want = want < threads ? threads : want;
	want = want > n ? n : want;
	return want > CQ_PARTS_MAX ? CQ_PARTS_MAX : (int) want;
}

/* Cut items [0, n) into at most `parts` contiguous parts of about equal work; returns how many. */
static int
parts_cut(const cq_parts_ops *ops, const void *arg, int n, int parts, int *bounds)
{
	double		total = 0,
				done = 0;
	int			k = 1;

	for (int i = 0; i < n; i++)
		total += ops->work(arg, i);
	bounds[0] = 0;
	for (int i = 0; i < n && k < parts; i++)
	{
		done += ops->work(arg, i);
		/* close part k - 1 after i once it holds its share, leaving an item per part to come */
		if ((done >= total * k / parts || n - (i + 1) == parts - k) && i + 1 < n)
			bounds[k++] = i + 1;
	}
	bounds[k] = n;
	return k;
}

void
cq_parts_plan_make(const cq_parts_ops *ops, const void *arg, int n, long rows, int threads,
				   cq_parts_plan *pl)
{
	pl->parts = parts_cut(ops, arg, n, parts_count(rows, n, threads), pl->bounds);
	pl->lanes = pl->parts < threads ? pl->parts : threads;
	pl->lane_bytes = 0;
	for (int k = 0; k < pl->parts; k++)
	{
		size_t		b = (ops->bytes(arg, pl->bounds[k], pl->bounds[k + 1]) + 63) / 64 * 64;

		pl->lane_bytes = b > pl->lane_bytes ? b : pl->lane_bytes;
	}
}

/* What the lanes share: the plan, the part function, where the next part is. */
typedef struct lanes
{
	const cq_parts_plan *pl;
	cq_part_fn	fn;
	void	   *arg;
	char	   *ws;
	int			next;			/* the next part to take (atomic) */
} lanes;

static void
run_lane(void *arg, int lane, int nlanes)
{
	lanes	   *j = arg;
	int			k;

	(void) nlanes;
	while ((k = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < j->pl->parts)
		j->fn(j->arg, k, j->pl->bounds[k], j->pl->bounds[k + 1], j->ws + (size_t) lane * j->pl->lane_bytes);
}

void
cq_parts_run(const cq_parts_plan *pl, cq_part_fn fn, void *arg, void *ws)
{
	lanes		j = {pl, fn, arg, ws, 0};

	cq_parallel_run(run_lane, &j, pl->lanes);
}
