#include "metrics/msort.h"

#include <string.h>

/* Short runs are insertion-sorted first: sentences are short. */
#define RUN 16

static void
insertion(uint32_t *a, size_t n, cq_msort_cmp cmp, const void *ctx)
{
	for (size_t i = 1; i < n; i++)
	{
		uint32_t	x = a[i];
		size_t		j = i;

		while (j > 0 && cmp(a[j - 1], x, ctx) > 0)
		{
			a[j] = a[j - 1];
			j--;
		}
		a[j] = x;
	}
}

void
cq_msort(uint32_t *a, size_t n, uint32_t *tmp, cq_msort_cmp cmp, const void *ctx)
{
	uint32_t   *src = a,
			   *dst = tmp;

	for (size_t i = 0; i < n; i += RUN)
		insertion(a + i, n - i < RUN ? n - i : RUN, cmp, ctx);
	for (size_t width = RUN; width < n; width *= 2)
	{
		for (size_t lo = 0; lo < n; lo += 2 * width)
		{
			size_t		mid = lo + width < n ? lo + width : n,
						hi = lo + 2 * width < n ? lo + 2 * width : n,
						i = lo,
						j = mid,
						k = lo;

			while (i < mid && j < hi)
				dst[k++] = cmp(src[j], src[i], ctx) < 0 ? src[j++] : src[i++];
			while (i < mid)
				dst[k++] = src[i++];
			while (j < hi)
				dst[k++] = src[j++];
		}
		uint32_t   *t = src;

		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(uint32_t));
}

void
cq_sort_u128(cq_u128 *a, size_t n, cq_u128 *tmp)
{
	cq_u128	   *src = a,
			   *dst = tmp;

	/* insertion sort of runs of 16, then bottom-up merges */
	for (size_t lo = 0; lo < n; lo += 16)
	{
		size_t		hi = lo + 16 < n ? lo + 16 : n;

		for (size_t i = lo + 1; i < hi; i++)
		{
			cq_u128		x = a[i];
			size_t		j = i;

			while (j > lo && a[j - 1] > x)
			{
				a[j] = a[j - 1];
				j--;
			}
			a[j] = x;
		}
	}
	for (size_t width = 16; width < n; width *= 2)
	{
		for (size_t lo = 0; lo < n; lo += 2 * width)
		{
			size_t		mid = lo + width < n ? lo + width : n,
						hi = lo + 2 * width < n ? lo + 2 * width : n,
						i = lo,
						j = mid,
						k = lo;

			while (i < mid && j < hi)
				dst[k++] = src[j] < src[i] ? src[j++] : src[i++];
			while (i < mid)
				dst[k++] = src[i++];
			while (j < hi)
				dst[k++] = src[j++];
		}
		cq_u128	   *t = src;

		src = dst;
		dst = t;
	}
	if (src != a)
		for (size_t i = 0; i < n; i++)
			a[i] = src[i];
}
