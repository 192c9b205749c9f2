/*
 * Cosine similarity between CAV matrices, flattened over (row, distance),
 * and top-k search.  Top-k makes one pass over every stored entry: a hash
 * of the query's keys gives the dot products, the same pass gives the
 * norms, a k-heap keeps the best.  Cost O(total nnz + nnz(q) + n_mat log k)
 * time, O(nnz(q) + n_rows/8 + k) memory; nothing is precomputed between
 * calls, so a cav value needs no side index.
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

typedef struct qhash
{
	uint64_t   *keys;			/* UINT64_MAX = empty */
	double	   *vals;
	uint32_t	mask;
	uint8_t    *rows;			/* bitmap of rows the query uses */
} qhash;

static inline uint32_t
qslot(uint64_t key, uint32_t mask)
{
	return (uint32_t) ((key * 0x9E3779B97F4A7C15ULL) >> 32) & mask;
}

static double
qhash_get(const qhash *h, uint32_t row, uint64_t key)
{
	if (!(h->rows[row >> 3] & (1u << (row & 7))))
		return 0;
	for (uint32_t i = qslot(key, h->mask);; i = (i + 1) & h->mask)
	{
		if (h->keys[i] == key)
			return h->vals[i];
		if (h->keys[i] == UINT64_MAX)
			return 0;
	}
}

/* Returns the query's squared norm, or -1 when out of memory. */
static double
qhash_build(qhash *h, const cav_view *v, uint32_t q)
{
	cav_token_info info;
	cav_entry_iter it;
	cav_entry	e;
	uint32_t	cap = 16;
	double		norm = 0;

	cav_view_token(v, q, &info);
	while (cap < 2 * (uint64_t) info.nnz)
		cap *= 2;
	h->keys = cq_alloc((size_t) cap * sizeof(uint64_t));
	h->vals = cq_alloc((size_t) cap * sizeof(double));
	h->rows = cq_alloc0(((size_t) v->n_src + v->n_tgt) / 8 + 1);
	h->mask = cap - 1;
	if (!h->keys || !h->vals || !h->rows)
		return -1;
	memset(h->keys, 0xff, (size_t) cap * sizeof(uint64_t));
	cav_entry_iter_init(v, q, &it);
	while (cav_entry_iter_next(&it, &e))
	{
		uint32_t	i = qslot(entry_key(&e), h->mask);

		while (h->keys[i] != UINT64_MAX)
			i = (i + 1) & h->mask;
		h->keys[i] = entry_key(&e);
		h->vals[i] = (double) e.count;
		h->rows[e.row >> 3] |= 1u << (e.row & 7);
		norm += (double) e.count * e.count;
	}
	return norm;
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

cav_code
cav_view_topk(const cav_view *v, uint32_t q, uint32_t k, uint32_t *idx_out,
			  double *sim_out, uint32_t *n_out, cav_error *err)
{
	qhash		h = {0};
	double		qnorm;
	uint32_t	n = 0;

	*n_out = 0;
	if (q >= v->n_mat)
		return cav_fail(err, CAV_EINVAL, "token index %u out of range", q);
	if (k > v->n_mat - 1)
		k = v->n_mat - 1;
	qnorm = k ? qhash_build(&h, v, q) : 0;
	if (qnorm < 0)
	{
		cq_free(h.keys);
		cq_free(h.vals);
		cq_free(h.rows);
		return cav_fail(err, CAV_ENOMEM, "out of memory in CAV top-k");
	}
	for (uint32_t t = 0; k && t < v->n_mat; t++)
	{
		cav_entry_iter it;
		cav_entry	e;
		double		dot = 0,
					norm = 0;

		if (t == q)
			continue;
		cav_entry_iter_init(v, t, &it);
		while (cav_entry_iter_next(&it, &e))
		{
			norm += (double) e.count * e.count;
			dot += (double) e.count * qhash_get(&h, e.row, entry_key(&e));
		}
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
	cq_free(h.keys);
	cq_free(h.vals);
	cq_free(h.rows);
	return CAV_OK;
}
