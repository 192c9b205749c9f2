#include "metrics/bootstrap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "common/rng.h"
#include "metrics/msort.h"

typedef struct rows_ctx
{
	const int32_t *rows;
	int			width;
} rows_ctx;

static int
cmp_rows(uint32_t a, uint32_t b, const void *ctx)
{
	const rows_ctx *c = ctx;
	const int32_t *x = c->rows + (size_t) a * c->width,
			   *y = c->rows + (size_t) b * c->width;

	for (int t = 0; t < c->width; t++)
		if (x[t] != y[t])
			return x[t] < y[t] ? -1 : 1;
	return 0;
}

bool
cq_bootstrap_canonical(int32_t *rows, size_t nrows, int width)
{
	uint32_t   *order,
			   *tmp;
	int32_t    *sorted;
	rows_ctx	c = {rows, width};

	if (nrows > UINT32_MAX)
		return false;
	order = cq_alloc((nrows + 1) * sizeof(uint32_t));
	tmp = cq_alloc((nrows + 1) * sizeof(uint32_t));
	sorted = cq_alloc((nrows * width + 1) * sizeof(int32_t));
	if (order == NULL || tmp == NULL || sorted == NULL)
	{
		cq_free(order);
		cq_free(tmp);
		cq_free(sorted);
		return false;
	}
	for (size_t i = 0; i < nrows; i++)
		order[i] = (uint32_t) i;
	cq_msort(order, nrows, tmp, cmp_rows, &c);
	for (size_t i = 0; i < nrows; i++)
		memcpy(sorted + i * width, rows + (size_t) order[i] * width, width * sizeof(int32_t));
	memcpy(rows, sorted, nrows * width * sizeof(int32_t));
	cq_free(order);
	cq_free(tmp);
	cq_free(sorted);
	return true;
}

/* floor(x * n / 2^64): unbiased to within n / 2^64. */
static inline size_t
scale(uint64_t x, size_t n)
{
	return (size_t) (((unsigned __int128) x * n) >> 64);
}

size_t
cq_bootstrap_index(uint64_t seed, uint32_t r, size_t i, size_t nrows)
{
	cq_philox_ctr w = cq_philox4x32((cq_philox_ctr) {{(uint32_t) (i >> 1), r, CQ_BOOTSTRAP_STREAM, 0}},
									cq_philox_key_from_seed(seed));
	int			h = 2 * (int) (i & 1);

	return scale(((uint64_t) w.c[h] << 32) | w.c[h + 1], nrows);
}

void
cq_bootstrap_resample_sum(const int32_t *rows, size_t nrows, int width,
						  uint64_t seed, uint32_t r, int64_t *sum)
{
	cq_philox_key key = cq_philox_key_from_seed(seed);

	memset(sum, 0, width * sizeof(int64_t));
	for (size_t i = 0; i < nrows; i += 2)
	{
		cq_philox_ctr w = cq_philox4x32((cq_philox_ctr) {{(uint32_t) (i >> 1), r, CQ_BOOTSTRAP_STREAM, 0}}, key);

		for (int h = 0; h < 2 && i + h < nrows; h++)
		{
			const int32_t *row = rows + scale(((uint64_t) w.c[2 * h] << 32) | w.c[2 * h + 1], nrows) * width;

			for (int t = 0; t < width; t++)
				sum[t] += row[t];
		}
	}
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* Mean (summed in order) and 95 % half-width of n scores, sorting them. */
static void
mean_ci(double *s, int n, double *mean, double *ci)
{
	double		sum = 0.0;
	int			lo = n / 40,
				hi = n - lo - 1;

	qsort(s, n, sizeof(double), cmp_double);
	for (int i = 0; i < n; i++)
		sum += s[i];
	*mean = sum / n;
	*ci = 0.5 * (s[hi] - s[lo]);
}

bool
cq_bootstrap_summarize(double *scores_a, double *scores_b, int n,
					   double score_a, double score_b, cq_bootstrap_result *out)
{
	double	   *d = cq_alloc((n + 1) * sizeof(double)),
				mean_d = 0.0,
				real = fabs(score_b - score_a);
	int			c = 0;

	if (d == NULL || n < 1)
	{
		cq_free(d);
		return false;
	}
	/* the differences pair resample r of A with resample r of B: before sorting */
	for (int r = 0; r < n; r++)
	{
		d[r] = fabs(scores_b[r] - scores_a[r]);
		mean_d += d[r];
	}
	mean_d /= n;
	for (int r = 0; r < n; r++)
		c += d[r] - mean_d > real;
	out->p_value = (double) (c + 1) / (double) (n + 1);
	mean_ci(scores_a, n, &out->mean_a, &out->ci_a);
	mean_ci(scores_b, n, &out->mean_b, &out->ci_b);
	cq_free(d);
	return true;
}

/* Column sums of all rows. */
static void
all_rows_sum(const int32_t *rows, size_t nrows, int width, int64_t *sum)
{
	memset(sum, 0, width * sizeof(int64_t));
	for (size_t i = 0; i < nrows; i++)
		for (int t = 0; t < width; t++)
			sum[t] += rows[i * width + t];
}

cq_code
cq_bootstrap_paired(int32_t *rows, size_t nrows, int width, int n, uint64_t seed,
					cq_bootstrap_score_fn score, const void *score_ctx,
					cq_bootstrap_tick_fn tick, void *tick_ctx,
					double *score_a, double *score_b, cq_bootstrap_result *out,
					cq_error *err)
{
	int			half = width / 2;
	int64_t    *sum;
	double	   *sa,
			   *sb;
	bool		ok;

	if (n < 1 || nrows == 0 || width < 2 || width % 2 != 0)
		return cq_fail(err, CQ_EINVAL, "a paired bootstrap needs rows, resamples and an even width");
	if (nrows > UINT32_MAX)
		return cq_fail(err, CQ_ELIMIT, "a paired bootstrap takes fewer than 2^32 rows");
	sum = cq_alloc(width * sizeof(int64_t));
	sa = cq_alloc(((size_t) n + 1) * sizeof(double));
	sb = cq_alloc(((size_t) n + 1) * sizeof(double));
	ok = sum && sa && sb && cq_bootstrap_canonical(rows, nrows, width);

	if (ok)
	{
		all_rows_sum(rows, nrows, width, sum);
		*score_a = score(sum, score_ctx);
		*score_b = score(sum + half, score_ctx);
		for (int r = 0; r < n; r++)
		{
			if (tick)
				tick(tick_ctx);
			cq_bootstrap_resample_sum(rows, nrows, width, seed, (uint32_t) r, sum);
			sa[r] = score(sum, score_ctx);
			sb[r] = score(sum + half, score_ctx);
		}
		ok = cq_bootstrap_summarize(sa, sb, n, *score_a, *score_b, out);
	}
	cq_free(sum);
	cq_free(sa);
	cq_free(sb);
	return ok ? CQ_OK : cq_fail(err, CQ_ENOMEM, "out of memory");
}
