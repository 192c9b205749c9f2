/*
 * Cutting a batch into parts for the thread pool (parts.h).
 */
#include "nn/infer/parts.h"

int
cq_parts_count(long rows, int n, int threads)
{
	long		want = rows / CQ_PARTS_ROWS;

	if (threads <= 1 || n < 2)
		return 1;
	want = want > 2L * threads ? 2L * threads : want;
	want = want < threads ? threads : want;
	want = want > n ? n : want;
	return want > CQ_PARTS_MAX ? CQ_PARTS_MAX : (int) want;
}

int
cq_parts_cut(cq_part_work_fn work, const void *arg, int n, int parts, int *bounds)
{
	double		total = 0,
				done = 0;
	int			k = 1;

	for (int i = 0; i < n; i++)
		total += work(arg, i);
	bounds[0] = 0;
	for (int i = 0; i < n && k < parts; i++)
	{
		done += work(arg, i);
		/* close part k - 1 after i once it holds its share, leaving an item per part to come */
		if ((done >= total * k / parts || n - (i + 1) == parts - k) && i + 1 < n)
			bounds[k++] = i + 1;
	}
	bounds[k] = n;
	return k;
}
