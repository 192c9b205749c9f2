/*
 * Merge sort of 32-bit indices under a caller's comparison: the n-gram
 * counting and token interning sort positions by what they point at, which
 * qsort cannot do without a context argument (qsort_r is not portable).
 */
#ifndef CQ_METRICS_MSORT_H
#define CQ_METRICS_MSORT_H

#include <stddef.h>
#include <stdint.h>

typedef int (*cq_msort_cmp) (uint32_t a, uint32_t b, const void *ctx);

/* Sort a[0..n) ascending; tmp has room for n items.  Stable. */
void		cq_msort(uint32_t *a, size_t n, uint32_t *tmp, cq_msort_cmp cmp, const void *ctx);

/* Unsigned 128-bit integers: packed n-gram windows, (hash, index) pairs. */
typedef unsigned __int128 cq_u128;

/* Sort a[0..n) ascending; tmp has room for n items. */
void		cq_sort_u128(cq_u128 *a, size_t n, cq_u128 *tmp);

#endif
