/*
 * Exact k nearest neighbours in both directions by blocked products (knn.h),
 * and the k-NN mean r() of the lists.
 *
 * The sweep: for each block of target rows (packed once for the row kernel),
 * for each block of source rows, the block of cosines S = X_b Y_b^T
 * (nn/ops/rowgemm.h, shared out over the pool by the kernel itself), then one
 * parallel call whose first half of parts updates the source rows' lists (a
 * range of S's rows each) and whose second half updates the target rows'
 * lists (a range of S's columns each): every list belongs to one part, so
 * parts write disjoint memory and need no lock.  Nothing of the pool's size
 * enters a result: the cosines do not depend on it (rowgemm's contract) and
 * the lists are the top k under a strict total order (a larger cosine
 * first, of equal cosines the smaller index), whatever the order of the
 * candidates.  cq_poll() between blocks, between slices of a block's
 * update of the lists (a slice is a few milliseconds of insertions at any
 * k), and while the means are summed.
 * The sweep can be called block by block (cq_mine_knn_add): a host that
 * holds the vectors in a file feeds it a block of sources and a block of
 * targets at a time, and the lists come out the same.
 */
#include "mine/knn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/interrupt.h"
#include "common/mem.h"
#include "common/parallel.h"
#include "nn/ops/rowgemm.h"

/* The total order of the lists: does (a, ia) come before (b, ib)? */
static inline bool
before(float a, int32_t ia, float b, int32_t ib)
{
	return a > b || (a == b && ia < ib);
}

/* Insert (v, j) into a list of len entries, best first, if it belongs there. */
static inline void
push(float *sim, int32_t *idx, int len, float v, int32_t j)
{
	int			p = len - 1;

	if (!before(v, j, sim[p], idx[p]))
		return;
	while (p > 0 && before(v, j, sim[p - 1], idx[p - 1]))
	{
		sim[p] = sim[p - 1];
		idx[p] = idx[p - 1];
		p--;
	}
	sim[p] = v;
	idx[p] = j;
}

/* One block of cosines and the lists it updates. */
typedef struct block
{
	const float *s;				/* [rows, cols], row stride cols */
	int			i0,				/* first source row */
				j0,				/* first target row */
				rows,
				cols,
				r0,				/* the slice of S's rows being updated */
				r1,
				half;			/* parts per direction */
	cq_knn	   *x2y,
			   *y2x;
} block;

static void
update_rows(const block *b, int r0, int r1)
{
	int			len = b->x2y->len;

	for (int r = r0; r < r1; r++)
	{
		const float *srow = b->s + (size_t) r * b->cols;
		float	   *sim = b->x2y->sim + (size_t) (b->i0 + r) * len;
		int32_t    *idx = b->x2y->idx + (size_t) (b->i0 + r) * len;

		for (int c = 0; c < b->cols; c++)
			if (srow[c] >= sim[len - 1])
				push(sim, idx, len, srow[c], b->j0 + c);
	}
}

static void
update_cols(const block *b, int c0, int c1)
{
	int			len = b->y2x->len;

	/* row by row: S is read along its rows, the lists stay in cache */
	for (int r = b->r0; r < b->r1; r++)
	{
		const float *srow = b->s + (size_t) r * b->cols;

		for (int c = c0; c < c1; c++)
		{
			float	   *sim = b->y2x->sim + (size_t) (b->j0 + c) * len;

			if (srow[c] >= sim[len - 1])
				push(sim, b->y2x->idx + (size_t) (b->j0 + c) * len, len, srow[c], b->i0 + r);
		}
	}
}

static void
update_part(void *arg, int part, int nparts)
{
	const block *b = arg;
	int			p = part % b->half;

	if (part < b->half)
	{
		int			n = b->r1 - b->r0;

		update_rows(b, b->r0 + (int) ((long) n * p / b->half), b->r0 + (int) ((long) n * (p + 1) / b->half));
	}
	else
		update_cols(b, (int) ((long) b->cols * p / b->half), (int) ((long) b->cols * (p + 1) / b->half));
}

void
cq_mine_knn_free(cq_knn *l)
{
	cq_free(l->sim);
	cq_free(l->idx);
	cq_free(l->mean);
	memset(l, 0, sizeof(*l));
}

/* rows empty lists of len entries (every slot after any real candidate). */
static bool
lists_init(cq_knn *l, int rows, int len)
{
	size_t		cells = (size_t) rows * len;

	memset(l, 0, sizeof(*l));
	l->rows = rows;
	l->len = len;
	l->sim = cq_alloc(sizeof(float) * cells);
	l->idx = cq_alloc(sizeof(int32_t) * cells);
	l->mean = cq_alloc(sizeof(double) * (size_t) rows);
	if (!l->sim || !l->idx || !l->mean)
		return false;
	for (size_t c = 0; c < cells; c++)
	{
		l->sim[c] = -INFINITY;
		l->idx[c] = INT32_MAX;
	}
	return true;
}

/* r() of every row, by cq_mine_knn_mean (the one definition of the mean). */
static void
lists_means(cq_knn *l)
{
	double		buf[CQ_MINE_MAX_K];

	for (int r = 0; r < l->rows; r++)
	{
		/* a cancel within a moment: 256 rows of k = 1000 are ~1 ms */
		if (r % 256 == 0)
			cq_poll();
		for (int p = 0; p < l->len; p++)
			buf[p] = l->sim[(size_t) r * l->len + p];
		l->mean[r] = cq_mine_knn_mean(buf, l->len, l->len);
	}
}

size_t
cq_mine_knn_lists_bytes(int n, int m, int k)
{
	double		kx = m < k ? m : k,
				ky = n < k ? n : k,
				bytes = 8.0 * ((double) n * kx + (double) m * ky) + 8.0 * ((double) n + m);

	return bytes >= (double) SIZE_MAX ? SIZE_MAX : (size_t) bytes;
}

size_t
cq_mine_knn_block_bytes(int rows, int cols, int d, const cq_mine_options *o)
{
	int			br = o->block_rows < rows ? o->block_rows : rows,
				bc = o->block_cols < cols ? o->block_cols : cols;
	double		bytes = 4.0 * br * bc + 4.0 * (double) cq_rowgemm_packed_floats(bc, d);

	return bytes >= (double) SIZE_MAX ? SIZE_MAX : (size_t) bytes;
}

cq_code
cq_mine_knn_init(int n, int m, int k, cq_knn *x2y, cq_knn *y2x, cq_error *err)
{
	memset(x2y, 0, sizeof(*x2y));
	memset(y2x, 0, sizeof(*y2x));
	if (n < 0 || m < 0 || k < 1 || k > CQ_MINE_MAX_K)
		return cq_fail(err, CQ_EINVAL, "cannot mine %d x %d vectors with k = %d", n, m, k);
	if (!lists_init(x2y, n, m < k ? m : k) || !lists_init(y2x, m, n < k ? n : k))
	{
		cq_mine_knn_free(x2y);
		cq_mine_knn_free(y2x);
		return cq_fail(err, CQ_ENOMEM, "no memory for the neighbour lists of %d x %d vectors", n, m);
	}
	return CQ_OK;
}

cq_code
cq_mine_knn_add(const float *x, int i0, int rows, const float *y, int j0, int cols, int d,
				const cq_mine_options *o, cq_knn *x2y, cq_knn *y2x, cq_error *err)
{
	int			br,
				bc,
				slice;
	float	   *s,
			   *packed;
	block		b = {.x2y = x2y, .y2x = y2x, .half = cq_parallel_threads()};

	if (rows < 0 || cols < 0 || d < 1 || i0 < 0 || j0 < 0 ||
		i0 > x2y->rows - rows || j0 > y2x->rows - cols)
		return cq_fail(err, CQ_EINVAL, "sources %d + %d and targets %d + %d of dimension %d "
					   "are not within %d x %d vectors", i0, rows, j0, cols, d, x2y->rows, y2x->rows);
	if (rows == 0 || cols == 0)
		return CQ_OK;
	br = o->block_rows < rows ? o->block_rows : rows;
	bc = o->block_cols < cols ? o->block_cols : cols;
	s = cq_alloc(sizeof(float) * (size_t) br * bc);
	packed = cq_alloc(sizeof(float) * cq_rowgemm_packed_floats(bc, d));
	b.s = s;
	if (!s || !packed)
	{
		cq_free(s);
		cq_free(packed);
		return cq_fail(err, CQ_ENOMEM, "no memory for a block of %d x %d cosines", br, bc);
	}
	/*
	 * Rows of S per slice of the lists' update: ~2^22 list cells of work
	 * each (an insertion moves up to k entries), so that a cancel waits for
	 * milliseconds whatever k -- a whole block of 256 x 1024 cosines with
	 * k = 1000 took seconds on a loaded machine.  With the default k a
	 * slice is the whole block.
	 */
	slice = (int) ((1L << 22) / ((long) bc * (x2y->len + y2x->len)));
	if (slice < 1)
		slice = 1;
	for (int jb = 0; jb < cols; jb += bc)
	{
		b.j0 = j0 + jb;
		b.cols = cols - jb < bc ? cols - jb : bc;
		cq_rowgemm_pack(y + (size_t) jb * d, d, b.cols, d, packed);
		for (int ib = 0; ib < rows; ib += br)
		{
			b.i0 = i0 + ib;
			b.rows = rows - ib < br ? rows - ib : br;
			cq_poll();
			cq_rowgemm_packed(packed, b.cols, d, NULL, x + (size_t) ib * d, d,
							  s, b.cols, b.rows);
			/* the lists updated a slice of S's rows at a time, cq_poll() between */
			for (b.r0 = 0; b.r0 < b.rows; b.r0 = b.r1)
			{
				b.r1 = b.rows - b.r0 < slice ? b.rows : b.r0 + slice;
				if (b.r0 > 0)
					cq_poll();
				cq_parallel_run(update_part, &b, 2 * b.half);
			}
		}
	}
	cq_free(s);
	cq_free(packed);
	return CQ_OK;
}

void
cq_mine_knn_finish(cq_knn *x2y, cq_knn *y2x)
{
	lists_means(x2y);
	lists_means(y2x);
}

cq_code
cq_mine_knn(const float *x, int n, const float *y, int m, int d,
			const cq_mine_options *o, cq_knn *x2y, cq_knn *y2x, cq_error *err)
{
	cq_code		rc = cq_mine_options_validate(o, err);

	memset(x2y, 0, sizeof(*x2y));
	memset(y2x, 0, sizeof(*y2x));
	if (rc != CQ_OK)
		return rc;
	if (n < 0 || m < 0 || d < 1)
		return cq_fail(err, CQ_EINVAL, "cannot mine %d x %d vectors of dimension %d", n, m, d);
	rc = cq_mine_knn_init(n, m, o->k, x2y, y2x, err);
	if (rc == CQ_OK)
		rc = cq_mine_knn_add(x, 0, n, y, 0, m, d, o, x2y, y2x, err);
	if (rc != CQ_OK)
	{
		cq_mine_knn_free(x2y);
		cq_mine_knn_free(y2x);
		return rc;
	}
	cq_mine_knn_finish(x2y, y2x);
	return CQ_OK;
}

static int
descending(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x > y ? -1 : x < y ? 1 : 0;
}

double
cq_mine_knn_mean(double *values, int n, int k)
{
	int			len = n < k ? n : k;
	double		sum = 0;

	bool		sorted = true;

	if (len <= 0)
		return NAN;
	for (int i = 1; i < n && sorted; i++)
		sorted = values[i] <= values[i - 1];	/* false for a NaN: sorted as before */
	if (!sorted)
		qsort(values, n, sizeof(double), descending);
	for (int i = 0; i < len; i++)
		sum += values[i];
	return sum / len;
}
