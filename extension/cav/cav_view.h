/*
 * Reading a serialized CAV in place, without rebuilding the state.
 *
 * cav_view_open() runs the full validator (every offset, length, count,
 * sort order and UTF-8 string); only then do the readers touch the bytes.
 * A view borrows the buffer: keep it alive and unchanged while the view is
 * used.  Token indexes below are positions in the matrix table, i.e. the
 * target tokens that have a matrix, in byte order of their strings.
 *
 * Rows: 0 .. n_src-1 are source tokens, n_src .. n_src+n_tgt-1 target
 * tokens, both in byte order.  Columns: distances 0 .. l_max-1.
 */
#ifndef CQ_CAV_VIEW_H
#define CQ_CAV_VIEW_H

#include "cav/cav.h"
#include "common/le.h"
#include "common/varint.h"

#include <stdbool.h>

typedef struct cav_view
{
	const uint8_t *buf;
	size_t		len;
	uint32_t	l_max;
	uint32_t	n_src;
	uint32_t	n_tgt;
	uint32_t	n_restrict;		/* 0: every target token has a matrix */
	uint32_t	n_mat;
	uint64_t	n_pairs;
	/* section starts (offsets into buf) */
	size_t		src_dict;
	size_t		tgt_dict;
	size_t		res_dict;
	size_t		table;
	size_t		entries;
} cav_view;

/* Validate buf and describe it.  CQ_EFORMAT with a reason when invalid. */
cq_code		cav_view_open(const void *buf, size_t len, cav_view *v, cq_error *err);

/*
 * Header and section bounds only, O(1): for bytes that passed
 * cav_view_open() before (a stored cav datum written by the type's input,
 * recv or aggregate), so a SQL function need not re-validate per call.
 * Never use it on untrusted bytes: string offsets and entries are not checked.
 */
cq_code		cav_view_open_trusted(const void *buf, size_t len, cav_view *v,
								  cq_error *err);

/* Validation only. */
cq_code		cav_validate(const void *buf, size_t len, cq_error *err);

typedef struct cav_token_info
{
	const char *str;			/* not NUL-terminated */
	size_t		len;
	uint64_t	occurrences;
	uint32_t	nnz;
	uint32_t	row;			/* its row in the concatenated dictionary */
} cav_token_info;

void		cav_view_token(const cav_view *v, uint32_t idx, cav_token_info *out);

/* Matrix index of a target token, or CQ_ENOTFOUND. */
cq_code		cav_view_find(const cav_view *v, const char *tok, size_t len,
						  uint32_t *idx, cq_error *err);

/* The token behind a row: side 0 source, 1 target. */
void		cav_view_row(const cav_view *v, uint32_t row, int *side,
						 const char **str, size_t *len);

/* The entries of one matrix, in (row, distance) order. */
typedef struct cav_entry
{
	uint32_t	row;
	uint32_t	dist;
	int64_t		count;
} cav_entry;

typedef struct cav_entry_iter
{
	const uint8_t *p;
	const uint8_t *end;
	uint32_t	row;
	uint32_t	left;
} cav_entry_iter;

void		cav_entry_iter_init(const cav_view *v, uint32_t idx, cav_entry_iter *it);

/* Next entry, false at the end (inline: it is the inner loop of every reader). */
static inline bool
cav_entry_iter_next(cav_entry_iter *it, cav_entry *e)
{
	uint64_t	delta,
				dist,
				count;

	if (it->left == 0 ||
		!cq_varint_get(&it->p, it->end, &delta) ||
		!cq_varint_get(&it->p, it->end, &dist) ||
		!cq_varint_get(&it->p, it->end, &count))
		return false;
	it->left--;
	it->row += (uint32_t) delta;
	e->row = it->row;
	e->dist = (uint32_t) dist;
	e->count = (int64_t) count;
	return true;
}

/* All entries of matrix idx into out[nnz] (nnz from cav_view_token); returns the count. */
uint32_t	cav_view_entries(const cav_view *v, uint32_t idx, cav_entry *out);

/* Cosine similarity of two matrices over the flattened (row, distance) keys. */
double		cav_view_cosine(const cav_view *v, uint32_t a, uint32_t b);

/*
 * The k tokens most similar to q (q itself excluded), by descending cosine,
 * ties by ascending index.  Writes min(k, n_mat-1) results, count in *n_out.
 * One pass over all entries, merged against q indexed by row:
 * O(total nnz + n_rows) time, extra memory O(nnz(q) + n_rows + k).
 */
cq_code		cav_view_topk(const cav_view *v, uint32_t q, uint32_t k,
						  uint32_t *idx_out, double *sim_out, uint32_t *n_out,
						  cq_error *err);

/*
 * Adaptive average pooling of matrix idx, dense shape (n_src+n_tgt) x l_max,
 * to out_h x out_w (row-major doubles) with PyTorch's adaptive_avg_pool2d
 * bins: start = floor(i*H/out), end = ceil((i+1)*H/out).  Sparse: each
 * nonzero is added to the bins that cover it, O(nnz * overlap + out_h*out_w).
 */
cq_code		cav_view_pool(const cav_view *v, uint32_t idx, uint32_t out_h,
						  uint32_t out_w, double *out, cq_error *err);

/*
 * ANTAP's input (paper 002, Sec. 3.2, Eq. 6): LayerNorm over the whole dense
 * matrix, without an affine part (PyTorch's F.layer_norm(x, x.shape, eps=eps):
 * one mean and one population variance over all (n_src+n_tgt) x l_max cells,
 * zeros included), then adaptive average pooling as cav_view_pool.  Pooling
 * averages, and the normalisation is one affine map for the whole matrix, so
 * the two commute: out = (pool(x) - mean) / sqrt(var + eps), with mean and
 * var taken from the nonzeros (the zeros contribute (0 - mean)^2 each).
 * eps must be positive (a 1 x 1 matrix has variance 0).
 */
#define CAV_LAYER_NORM_EPS 1e-5	/* PyTorch's LayerNorm default */

cq_code		cav_view_pool_layer_norm(const cav_view *v, uint32_t idx, uint32_t out_h,
									 uint32_t out_w, double eps, double *out,
									 cq_error *err);

#endif
