/* Gradient-boosted shallow trees (trees.h has the definition). */
#include "curate/trees.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/interrupt.h"
#include "common/mem.h"

typedef struct boost
{
	const cq_train_options *o;
	cq_classifier *c;
	size_t		m;				/* training rows */
	int			d;
	unsigned char *bin;			/* m x d bin numbers */
	double	   *edges;			/* d x (bins - 1) */
	int		   *n_edges;		/* d */
	double	   *g,
			   *h,
			   *margin;			/* m each */
	size_t	   *idx,
			   *tmp;			/* the rows of each node, in row order */
	double	   *hg,
			   *hh;				/* one feature's histogram */
	int			tree;
} boost;

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/* The edges of feature j from the training values (sorted into buf). */
static void
feature_edges(boost *b, const double *x, const size_t *rows, int j, double *buf)
{
	int			nb = b->o->bins,
				n = 0;
	double	   *e = b->edges + (size_t) j * (nb - 1);

	for (size_t i = 0; i < b->m; i++)
		buf[i] = x[rows[i] * b->d + j];
	qsort(buf, b->m, sizeof(double), cmp_double);
	for (int q = 1; q < nb; q++)
	{
		double		v = buf[(size_t) q * b->m / nb];

		if (n == 0 || v > e[n - 1])
			e[n++] = v;
	}
	b->n_edges[j] = n;
}

/* The number of edges <= v. */
static int
bin_of(const double *e, int n, double v)
{
	int			lo = 0,
				hi = n;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (e[mid] <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static cq_code
make_bins(boost *b, const double *x, const size_t *rows, cq_error *err)
{
	double	   *buf = cq_alloc((b->m + 1) * sizeof(double));

	if (!buf)
		return cq_fail(err, CQ_ENOMEM, "out of memory binning %zu rows", b->m);
	for (int j = 0; j < b->d; j++)
	{
		const double *e = b->edges + (size_t) j * (b->o->bins - 1);

		feature_edges(b, x, rows, j, buf);
		for (size_t i = 0; i < b->m; i++)
			b->bin[i * b->d + j] = (unsigned char) bin_of(e, b->n_edges[j], x[rows[i] * b->d + j]);
	}
	cq_free(buf);
	return CQ_OK;
}

typedef struct split
{
	double		gain;
	int			j;
	int			k;
} split;

/* The best bin of feature j for the node's rows idx[lo..hi). */
static void
best_in_feature(boost *b, size_t lo, size_t hi, double G, double H, int j, split *best)
{
	int			nb = b->n_edges[j] + 1;
	double		gl = 0,
				hl = 0,
				lam = b->o->lambda;

	memset(b->hg, 0, nb * sizeof(double));
	memset(b->hh, 0, nb * sizeof(double));
	for (size_t i = lo; i < hi; i++)
	{
		size_t		r = b->idx[i];

		b->hg[b->bin[r * b->d + j]] += b->g[r];
		b->hh[b->bin[r * b->d + j]] += b->h[r];
	}
	for (int k = 0; k < nb - 1; k++)
	{
		double		gain;

		gl += b->hg[k];
		hl += b->hh[k];
		gain = gl * gl / (hl + lam) + (G - gl) * (G - gl) / (H - hl + lam) - G * G / (H + lam);
		if (gain > best->gain && hl > b->o->min_hessian && H - hl > b->o->min_hessian)
			*best = (split) {gain, j, k};
	}
}

/* Stable partition of idx[lo..hi) by bin <= k of feature j; the left count. */
static size_t
partition(boost *b, size_t lo, size_t hi, int j, int k)
{
	size_t		nl = 0,
				nr = 0;

	for (size_t i = lo; i < hi; i++)
		if (b->bin[b->idx[i] * b->d + j] <= k)
			b->idx[lo + nl++] = b->idx[i];
		else
			b->tmp[nr++] = b->idx[i];
	memcpy(b->idx + lo + nl, b->tmp, nr * sizeof(size_t));
	return nl;
}

/* Node `node` (heap order, root 0) at `level` over idx[lo..hi). */
static void
grow(boost *b, int node, int level, size_t lo, size_t hi)
{
	cq_classifier *c = b->c;
	int			inner = (1 << c->depth) - 1;
	double		G = 0,
				H = 0;
	split		best = {0, -1, -1};

	for (size_t i = lo; i < hi; i++)
	{
		G += b->g[b->idx[i]];
		H += b->h[b->idx[i]];
	}
	if (level == c->depth)
	{
		double		v = -b->o->learning_rate * G / (H + b->o->lambda);

		c->leaf[(size_t) b->tree * (inner + 1) + (node - inner)] = v;
		for (size_t i = lo; i < hi; i++)
			b->margin[b->idx[i]] += v;
		return;
	}
	for (int j = 0; j < b->d && hi > lo; j++)
		best_in_feature(b, lo, hi, G, H, j, &best);
	c->feat[(size_t) b->tree * inner + node] = best.j;
	c->thr[(size_t) b->tree * inner + node] =
		best.j >= 0 ? b->edges[(size_t) best.j * (b->o->bins - 1) + best.k] : 0.0;
	{
		size_t		nl = best.j >= 0 ? partition(b, lo, hi, best.j, best.k) : hi - lo;

		grow(b, 2 * node + 1, level + 1, lo, lo + nl);
		grow(b, 2 * node + 2, level + 1, lo + nl, hi);
	}
}

static void
gradients(boost *b, const double *y)
{
	for (size_t i = 0; i < b->m; i++)
	{
		double		p = 1.0 / (1.0 + exp(-b->margin[i]));

		b->g[i] = p - y[i];
		b->h[i] = p * (1.0 - p);
	}
}

static cq_code
boost_alloc(boost *b, cq_error *err)
{
	size_t		m = b->m + 1;
	int			nb = b->o->bins;

	b->bin = cq_alloc(m * b->d);
	b->edges = cq_alloc((size_t) b->d * (nb - 1) * sizeof(double) + 1);
	b->n_edges = cq_alloc((size_t) b->d * sizeof(int) + 1);
	b->g = cq_alloc(3 * m * sizeof(double));
	b->idx = cq_alloc(2 * m * sizeof(size_t));
	b->hg = cq_alloc(2 * (size_t) nb * sizeof(double));
	if (!b->bin || !b->edges || !b->n_edges || !b->g || !b->idx || !b->hg)
		return cq_fail(err, CQ_ENOMEM, "out of memory boosting trees over %zu rows", b->m);
	b->h = b->g + m;
	b->margin = b->h + m;
	b->tmp = b->idx + m;
	b->hh = b->hg + nb;
	return CQ_OK;
}

static void
boost_free(boost *b)
{
	cq_free(b->bin);
	cq_free(b->edges);
	cq_free(b->n_edges);
	cq_free(b->g);
	cq_free(b->idx);
	cq_free(b->hg);
}

static void
rounds(boost *b, const double *y)
{
	double		mean = 0;

	for (size_t i = 0; i < b->m; i++)
		mean += y[i];
	mean /= (double) b->m;
	b->c->base = log(mean / (1 - mean));
	for (size_t i = 0; i < b->m; i++)
		b->margin[i] = b->c->base;
	for (b->tree = 0; b->tree < b->c->n_trees; b->tree++)
	{
		cq_poll();				/* a tree is a few passes over the rows */
		gradients(b, y);
		for (size_t i = 0; i < b->m; i++)
			b->idx[i] = i;
		grow(b, 0, 0, 0, b->m);
	}
}

cq_code
cq_trees_fit(cq_classifier *c, const double *x, const size_t *rows, const double *y,
			 size_t m, const cq_train_options *o, cq_error *err)
{
	boost		b = {o, c, m, c->d};
	cq_code		rc = boost_alloc(&b, err);

	if (rc == CQ_OK)
		rc = make_bins(&b, x, rows, err);
	if (rc == CQ_OK)
		rounds(&b, y);
	boost_free(&b);
	return rc;
}

double
cq_trees_logit(const cq_classifier *c, const double *x)
{
	int			inner = (1 << c->depth) - 1;
	double		s = c->base;

	for (int t = 0; t < c->n_trees; t++)
	{
		const int32_t *f = c->feat + (size_t) t * inner;
		const double *thr = c->thr + (size_t) t * inner;
		int			node = 0;

		while (node < inner)
			node = 2 * node + (f[node] < 0 || x[f[node]] < thr[node] ? 1 : 2);
		s += c->leaf[(size_t) t * (inner + 1) + (node - inner)];
	}
	return s;
}

cq_code
cq_trees_alloc(cq_classifier *c, cq_error *err)
{
	size_t		inner = ((size_t) 1 << c->depth) - 1,
				nt = (size_t) c->n_trees;
	void	   *block = cq_alloc0(nt * inner * (sizeof(int32_t) + sizeof(double)) +
								  nt * (inner + 1) * sizeof(double) + 1);

	if (!block)
		return cq_fail(err, CQ_ENOMEM, "out of memory for %d trees", c->n_trees);
	c->thr = block;
	c->leaf = c->thr + nt * inner;
	c->feat = (int32_t *) (c->leaf + nt * (inner + 1));
	return CQ_OK;
}
