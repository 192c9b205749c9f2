/*
 * Cosine similarity between CAV matrices, flattened over (row, distance),
 * and top-k search.  Top-k makes one pass over every stored entry: the
 * query indexed by row gives the dot products (a forward merge, since every
 * matrix is sorted by (row, distance)), the same pass gives the norms, a
 * k-heap keeps the best.  Cost O(total nnz + n_rows + n_mat log k) time
 * (plus, per shared row, the query's entries of that row), O(nnz(q) +
 * n_rows + k) memory; nothing is precomputed between calls, so a cav value
 * needs no side index.
 */
#include "cav/view_impl.h"

#include "common/mem.h"

#include <math.h>
#include <string.h>

static inline uint64_t
entry_key(const cav_entry *e)
{
	return (uint64_t) e->row << 16 | e->dist;
}

double
cav_view_cosine(const cav_view *v, uint32_t a, uint32_t b)
{
	cav_entry_iter ia,
				ib;
	cav_entry	ea = {0},
				eb = {0};
	bool		ha,
				hb;
	double		dot = 0,
				na = 0,
				nb = 0;

	cav_entry_iter_init(v, a, &ia);
	cav_entry_iter_init(v, b, &ib);
	ha = cav_entry_iter_next(&ia, &ea);
	hb = cav_entry_iter_next(&ib, &eb);
	while (ha || hb)
	{
		uint64_t	ka = ha ? entry_key(&ea) : UINT64_MAX;
		uint64_t	kb = hb ? entry_key(&eb) : UINT64_MAX;

		if (ka <= kb)
			na += (double) ea.count * ea.count;
		if (kb <= ka)
			nb += (double) eb.count * eb.count;
		if (ka == kb)
			dot += (double) ea.count * eb.count;
		if (ka <= kb)
			ha = cav_entry_iter_next(&ia, &ea);
		if (kb <= ka)
			hb = cav_entry_iter_next(&ib, &eb);
	}
	return na > 0 && nb > 0 ? dot / (sqrt(na) * sqrt(nb)) : 0.0;
}

/*
 * The query indexed by row: its entries are sorted by (row, distance), so
 * rowstart[r] .. rowstart[r+1] is row r's run of (distance, count).  A
 * scanned matrix is sorted the same way, so both walks move forward only.
 */
typedef struct qindex
{
	uint32_t   *rowstart;		/* [n_rows + 1] */
	uint32_t   *dist;			/* [nnz(q)] */
	double	   *val;			/* [nnz(q)] */
} qindex;

static void
qindex_free(qindex *x)
{
	cq_free(x->rowstart);
	cq_free(x->dist);
	cq_free(x->val);
}

/* Returns the query's squared norm, or -1 when out of memory. */
static double
qindex_build(qindex *x, const cav_view *v, uint32_t q)
{
	size_t		n_rows = (size_t) v->n_src + v->n_tgt;
	cav_token_info info;
	cav_entry_iter it;
	cav_entry	e;
	uint32_t	n = 0;
	double		norm = 0;

	cav_view_token(v, q, &info);
	x->rowstart = cq_alloc0((n_rows + 1) * sizeof(uint32_t));
	x->dist = cq_alloc((size_t) info.nnz * sizeof(uint32_t));
	x->val = cq_alloc((size_t) info.nnz * sizeof(double));
	if (!x->rowstart || !x->dist || !x->val)
		return -1;
	cav_entry_iter_init(v, q, &it);
	while (cav_entry_iter_next(&it, &e))
	{
		x->rowstart[e.row + 1]++;
		x->dist[n] = e.dist;
		x->val[n++] = (double) e.count;
		norm += (double) e.count * e.count;
	}
	for (size_t r = 0; r < n_rows; r++)
		x->rowstart[r + 1] += x->rowstart[r];
	return norm;
}

/* Dot product with the query and squared norm of matrix t, in one walk. */
static void
qindex_dot(const qindex *x, const cav_view *v, uint32_t t, double *dot, double *norm)
{
	cav_entry_iter it;
	cav_entry	e;
	uint32_t	row = UINT32_MAX,
				p = 0,
				end = 0;
	double		d = 0,
				n = 0;

	cav_entry_iter_init(v, t, &it);
	while (cav_entry_iter_next(&it, &e))
	{
		n += (double) e.count * e.count;
		if (e.row != row)
		{
			row = e.row;
			p = x->rowstart[row];
			end = x->rowstart[row + 1];
		}
		while (p < end && x->dist[p] < e.dist)
			p++;
		if (p < end && x->dist[p] == e.dist)
			d += (double) e.count * x->val[p];
	}
	*dot = d;
	*norm = n;
}

/* a ranks before b: higher similarity, then lower index. */
static inline bool
better(double sa, uint32_t ia, double sb, uint32_t ib)
{
	return sa > sb || (sa == sb && ia < ib);
}

/* Min-heap on "better": the root is the worst of the kept k. */
static void
sift_down(uint32_t *idx, double *sim, uint32_t n, uint32_t i)
{
	for (;;)
	{
		uint32_t	w = i,
					l = 2 * i + 1,
					r = l + 1;

		if (l < n && better(sim[w], idx[w], sim[l], idx[l]))
			w = l;
		if (r < n && better(sim[w], idx[w], sim[r], idx[r]))
			w = r;
		if (w == i)
			return;
		{
			uint32_t	ti = idx[i];
			double		ts = sim[i];

			idx[i] = idx[w];
			sim[i] = sim[w];
			idx[w] = ti;
			sim[w] = ts;
		}
		i = w;
	}
}

static void
heap_offer(uint32_t *idx, double *sim, uint32_t *n, uint32_t k, uint32_t i, double s)
{
	if (*n < k)
	{
		uint32_t	c = (*n)++;

		idx[c] = i;
		sim[c] = s;
		while (c > 0 && better(sim[(c - 1) / 2], idx[(c - 1) / 2], sim[c], idx[c]))
		{
			uint32_t	p = (c - 1) / 2,
						ti = idx[p];
			double		ts = sim[p];

			idx[p] = idx[c];
			sim[p] = sim[c];
			idx[c] = ti;
			sim[c] = ts;
			c = p;
		}
	}
	else if (better(s, i, sim[0], idx[0]))
	{
		idx[0] = i;
		sim[0] = s;
		sift_down(idx, sim, k, 0);
	}
}

cq_code
cav_view_topk(const cav_view *v, uint32_t q, uint32_t k, uint32_t *idx_out,
			  double *sim_out, uint32_t *n_out, cq_error *err)
{
	qindex		x = {0};
	double		qnorm;
	uint32_t	n = 0;

	*n_out = 0;
	if (q >= v->n_mat)
		return cq_fail(err, CQ_EINVAL, "token index %u out of range", q);
	if (k > v->n_mat - 1)
		k = v->n_mat - 1;
	qnorm = k ? qindex_build(&x, v, q) : 0;
	if (qnorm < 0)
	{
		qindex_free(&x);
		return cq_fail(err, CQ_ENOMEM, "out of memory in CAV top-k");
	}
	for (uint32_t t = 0; k && t < v->n_mat; t++)
	{
		double		dot,
					norm;

		if (t == q)
			continue;
		qindex_dot(&x, v, t, &dot, &norm);
		heap_offer(idx_out, sim_out, &n, k, t, dot / (sqrt(norm) * sqrt(qnorm)));
	}
	/* heap sort: repeatedly move the worst kept to the end */
	for (uint32_t m = n; m > 1; m--)
	{
		uint32_t	ti = idx_out[0];
		double		ts = sim_out[0];

		idx_out[0] = idx_out[m - 1];
		sim_out[0] = sim_out[m - 1];
		idx_out[m - 1] = ti;
		sim_out[m - 1] = ts;
		sift_down(idx_out, sim_out, m - 1, 0);
	}
	*n_out = n;
	qindex_free(&x);
	return CQ_OK;
}
