/*
 * Translation table t(f|e) over the co-occurring pairs of a bitext, in CSR
 * form: one row per conditioning word e (plus a NULL row, index n_e), target
 * ids sorted within each row.  The pair set is fixed after the first pass, so
 * lookups are a binary search (or a precomputed index, see link_index.h)
 * instead of a hash probe, and counts live in a parallel array.
 */
#ifndef CQ_ALIGN_TTABLE_H
#define CQ_ALIGN_TTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "align/bitext.h"

typedef struct cq_ttable
{
	int32_t		n_e;			/* rows 0..n_e-1 are words, row n_e is NULL */
	int32_t		n_f;
	int64_t		nnz;
	int64_t    *row_off;		/* [n_e + 2] */
	int32_t    *col;			/* [nnz] f ids, strictly increasing per row */
	double	   *prob;			/* [nnz] t(f|e) */
	double	   *count;			/* [nnz] expected counts; NULL unless training */
} cq_ttable;

/*
 * Rows hold every f co-occurring with e in some pair; the NULL row holds every
 * f of the corpus.  prob and count are zeroed.  When idx is given, it also
 * fills the link index (link_index.h layout, pair k at idx_off[k]) from a
 * dense f -> position map per row, which costs no searching.
 */
cq_code		cq_ttable_build(cq_ttable *t, const cq_bitext_view *v,
							uint32_t *idx, const int64_t *idx_off,
							cq_error *err);

/* Allocate an empty table of the given shape (row_off zeroed). */
cq_code		cq_ttable_alloc(cq_ttable *t, int32_t n_e, int32_t n_f, int64_t nnz,
							bool with_counts, cq_error *err);

/* Index of (e, f) in col/prob, or -1; e == n_e is the NULL row. */
int64_t		cq_ttable_find(const cq_ttable *t, int32_t e, int32_t f);

/* t(f|e), or `missing` for a pair (or id) outside the table. */
double		cq_ttable_prob_or(const cq_ttable *t, int32_t e, int32_t f,
							  double missing);

/* Bytes held by the table's arrays. */
size_t		cq_ttable_bytes(const cq_ttable *t);

void		cq_ttable_free(cq_ttable *t);

/* Walks the entries with prob >= min_prob, row by row (e == -1 is NULL). */
typedef struct cq_ttable_iter
{
	const cq_ttable *t;
	double		min_prob;
	int32_t		row;
	int64_t		pos;
} cq_ttable_iter;

void		cq_ttable_iter_init(cq_ttable_iter *it, const cq_ttable *t,
								double min_prob);
bool		cq_ttable_iter_next(cq_ttable_iter *it, int32_t *e, int32_t *f,
								double *prob);

#endif
