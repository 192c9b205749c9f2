/*
 * Paired bootstrap resampling (Koehn, 2004) as sacreBLEU 2.x's paired_bs
 * test computes it, with the resamples drawn from Philox so that a seed gives
 * the same answer in any process, plan or machine.
 *
 * The input is one row of per-sentence statistics per test sentence: width/2
 * values for system A, then width/2 for system B.  Resample r draws as many
 * rows as there are, with replacement; row i of it is row
 *   floor(x * nrows / 2^64),  x = the 64-bit word (i mod 2) of
 *   Philox4x32-10(key = seed, counter = (i / 2, r, 0x6273 'bs', 0)),
 * built from words 2 (i mod 2) and 2 (i mod 2) + 1, high word first.
 * Rows are first put in a canonical order (lexicographic by value), so the
 * draws do not depend on the order in which a query delivered them.
 */
#ifndef CQ_METRICS_BOOTSTRAP_H
#define CQ_METRICS_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define CQ_BOOTSTRAP_STREAM 0x6273u

typedef struct cq_bootstrap_result
{
	double		mean_a,			/* mean of A's resampled scores */
				ci_a,			/* half-width of their central 95 % interval */
				mean_b,
				ci_b,
				p_value;		/* of |score_b - score_a| under the null */
} cq_bootstrap_result;

/* Sort rows (nrows of width values) lexicographically; false when out of memory. */
bool		cq_bootstrap_canonical(int32_t *rows, size_t nrows, int width);

/* The index of draw i of resample r (the formula above). */
size_t		cq_bootstrap_index(uint64_t seed, uint32_t r, size_t i, size_t nrows);

/* sum[0..width) = the column sums of resample r. */
void		cq_bootstrap_resample_sum(const int32_t *rows, size_t nrows, int width,
									  uint64_t seed, uint32_t r, int64_t *sum);

/*
 * From the n resampled scores of each system and their scores on the whole
 * test set: means, 95 % intervals (half the distance between the resampled
 * scores of rank n/40 and n - n/40 - 1, counted from 0 in ascending order)
 * and the p-value (1 + #{|b_r - a_r| - mean_r |b_r - a_r| > |b - a|}) / (n + 1).
 * scores_a and scores_b are sorted in place.  False when out of memory.
 */
bool		cq_bootstrap_summarize(double *scores_a, double *scores_b, int n,
								   double score_a, double score_b, cq_bootstrap_result *out);

/* A metric's score from the column sums of one system's statistics. */
typedef double (*cq_bootstrap_score_fn) (const int64_t *sum, const void *ctx);

/* Called once per resample (the glue checks for interrupts there). */
typedef void (*cq_bootstrap_tick_fn) (void *ctx);

/*
 * The whole test: canonical order, the scores of A and B on all rows, n
 * resamples scored with score(), the summary.  rows is reordered.  Errors:
 * CQ_EINVAL (n < 1, no rows, odd width), CQ_ELIMIT (2^32 rows or more),
 * CQ_ENOMEM.
 */
cq_code		cq_bootstrap_paired(int32_t *rows, size_t nrows, int width, int n, uint64_t seed,
								cq_bootstrap_score_fn score, const void *score_ctx,
								cq_bootstrap_tick_fn tick, void *tick_ctx,
								double *score_a, double *score_b, cq_bootstrap_result *out,
								cq_error *err);

#endif
