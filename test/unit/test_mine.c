/*
 * Margin-based mining (extension/mine/mine.h) against a hand-worked example,
 * and its invariances: the same bits for any blocks and any number of
 * threads, the tie rule, k larger than the sets, empty sets, bad options,
 * and a cancel between blocks that leaves nothing but cq_alloc memory.
 */
#include "unit.h"

#include <setjmp.h>
#include <stdlib.h>

#include "common/interrupt.h"
#include "common/mem.h"
#include "common/parallel.h"
#include "mine/mine.h"

/*
 * The hand-worked example, d = 4.  Sources and targets are given unscaled;
 * normalised, every component is 0, +-1/2 or +-1, so every cosine is exact:
 *
 *   x0 = (-1, 1, 1, -1) / 2     y0 = (-1, -1, 1, -1) / 2
 *   x1 = (-1, 0, 0, 0)          y1 = ( 0,  0, 1,  0)
 *   x2 = ( 1, -1, -1, 1) / 2    y2 = ( 1, -1, 1,  1) / 2
 *                               y3 = (-1, -1, -1, 1) / 2
 *
 *   cos    y0    y1    y2    y3
 *   x0    1/2   1/2  -1/2  -1/2
 *   x1    1/2    0   -1/2   1/2
 *   x2   -1/2  -1/2   1/2   1/2
 *
 * k = 2.  Lists (ties: the smaller index first):
 *   NN(x0) = y0, y1 (both 1/2)   r(x0) = 1/2
 *   NN(x1) = y0, y3 (both 1/2)   r(x1) = 1/2
 *   NN(x2) = y2, y3 (both 1/2)   r(x2) = 1/2
 *   NN(y0) = x0, x1 (1/2, 1/2)   r(y0) = 1/2
 *   NN(y1) = x0, x1 (1/2, 0)     r(y1) = 1/4
 *   NN(y2) = x2, x0 (1/2, -1/2; x0 before x1 at -1/2)  r(y2) = 0
 *   NN(y3) = x1, x2 (1/2, 1/2)   r(y3) = 1/2
 * Margins cos / ((r(x) + r(y)) / 2) of the candidates:
 *   x0: y0 1/2 / (1/2) = 1,   y1 1/2 / (3/8) = 4/3  -> y1 (cosine alone ties y0 first)
 *   x1: y0 1,                 y3 1                  -> y0 (equal margins: smaller index)
 *   x2: y2 1/2 / (1/4) = 2,   y3 1                  -> y2
 *   y0: x0 1, x1 1 -> x0;  y1: x0 4/3, x1 0 -> x0;  y2: x2 2, x0 -2 -> x2;  y3: x1 1, x2 1 -> x1
 * Forward pairs (0, 1, 4/3), (1, 0, 1), (2, 2, 2); mutual drops (1, 0), since
 * y0's best is x0.
 */
static const float hand_x[3 * 4] = {-1, 1, 1, -1, -3, 0, 0, 0, 2, -2, -2, 2};
static const float hand_y[4 * 4] = {-1, -1, 1, -1, 0, 0, 5, 0, 1, -1, 1, 1, -1, -1, -1, 1};

static void
hand_vectors(float *x, float *y)
{
	memcpy(x, hand_x, sizeof(hand_x));
	memcpy(y, hand_y, sizeof(hand_y));
	CHECK_INT_EQ(cq_mine_normalize(x, 3, 4, NULL, NULL), CQ_OK);
	CHECK_INT_EQ(cq_mine_normalize(y, 4, 4, NULL, NULL), CQ_OK);
}

static void
check_pair(const cq_mine_pair *p, int src, int tgt, double cos, double margin)
{
	CHECK_INT_EQ(p->src, src);
	CHECK_INT_EQ(p->tgt, tgt);
	CHECK(p->cosine == cos);
	CHECK(p->margin == margin);
}

TEST(mine_normalize)
{
	float		v[3 * 2] = {3, 4, 0, -2, 1e-30f, 0};
	float		z[2 * 2] = {1, 0, 0, 0};
	float		f[2] = {1, NAN};
	size_t		bad = 99;
	cq_error	err;

	CHECK_INT_EQ(cq_mine_normalize(v, 3, 2, NULL, NULL), CQ_OK);
	CHECK(v[0] == (float) (3.0 / 5.0) && v[1] == (float) (4.0 / 5.0));
	CHECK(v[2] == 0 && v[3] == -1);
	CHECK(v[4] == 1 && v[5] == 0);	/* tiny is not zero: the norm is in double */
	CHECK_INT_EQ(cq_mine_normalize(z, 2, 2, &bad, &err), CQ_EINVAL);
	CHECK_INT_EQ(bad, 1);
	CHECK(strstr(err.msg, "all its components are zero") != NULL);
	CHECK_INT_EQ(cq_mine_normalize(f, 1, 2, &bad, &err), CQ_EINVAL);
	CHECK_INT_EQ(bad, 0);
	CHECK(strstr(err.msg, "component 2 is nan, not a finite number") != NULL);
	f[1] = INFINITY;
	CHECK_INT_EQ(cq_mine_normalize(f, 1, 2, &bad, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_mine_normalize(f, 1, 0, &bad, &err), CQ_EINVAL);
}

TEST(mine_hand_lists)
{
	float		x[12],
				y[16];
	cq_mine_options o;
	cq_knn		x2y,
				y2x;
	static const int32_t x2y_idx[] = {0, 1, 0, 3, 2, 3};
	static const int32_t y2x_idx[] = {0, 1, 0, 1, 2, 0, 1, 2};
	static const float y2x_sim[] = {0.5f, 0.5f, 0.5f, 0, 0.5f, -0.5f, 0.5f, 0.5f};
	static const double y_mean[] = {0.5, 0.25, 0, 0.5};

	hand_vectors(x, y);
	cq_mine_options_default(&o);
	o.k = 2;
	CHECK_INT_EQ(cq_mine_knn(x, 3, y, 4, 4, &o, &x2y, &y2x, NULL), CQ_OK);
	CHECK_INT_EQ(x2y.len, 2);
	CHECK_INT_EQ(y2x.len, 2);
	for (int i = 0; i < 6; i++)
	{
		CHECK_INT_EQ(x2y.idx[i], x2y_idx[i]);
		CHECK(x2y.sim[i] == 0.5f);
	}
	for (int i = 0; i < 3; i++)
		CHECK(x2y.mean[i] == 0.5);
	for (int i = 0; i < 8; i++)
	{
		CHECK_INT_EQ(y2x.idx[i], y2x_idx[i]);
		CHECK(y2x.sim[i] == y2x_sim[i]);
	}
	for (int j = 0; j < 4; j++)
		CHECK(y2x.mean[j] == y_mean[j]);
	cq_mine_knn_free(&x2y);
	cq_mine_knn_free(&y2x);
}

TEST(mine_hand_pairs)
{
	float		x[12],
				y[16];
	cq_mine_options o;
	cq_mine_pair p[3];
	int			n;

	hand_vectors(x, y);
	cq_mine_options_default(&o);
	o.k = 2;
	CHECK_INT_EQ(cq_mine(x, 3, y, 4, 4, &o, p, &n, NULL), CQ_OK);
	CHECK_INT_EQ(n, 3);
	check_pair(&p[0], 0, 1, 0.5, 4.0 / 3.0);
	check_pair(&p[1], 1, 0, 0.5, 1);
	check_pair(&p[2], 2, 2, 0.5, 2);

	o.mutual = true;
	CHECK_INT_EQ(cq_mine(x, 3, y, 4, 4, &o, p, &n, NULL), CQ_OK);
	CHECK_INT_EQ(n, 2);
	check_pair(&p[0], 0, 1, 0.5, 4.0 / 3.0);
	check_pair(&p[1], 2, 2, 0.5, 2);

	o.mutual = false;
	o.min_margin = 4.0 / 3.0;	/* inclusive */
	CHECK_INT_EQ(cq_mine(x, 3, y, 4, 4, &o, p, &n, NULL), CQ_OK);
	CHECK_INT_EQ(n, 2);
	check_pair(&p[0], 0, 1, 0.5, 4.0 / 3.0);
	check_pair(&p[1], 2, 2, 0.5, 2);
}

/*
 * k = 5, larger than both sets: every list is the whole other set.
 *   r(x) = row means over 4 targets: 0, 1/8, 0;  r(y) = column means over 3
 *   sources: 1/6, 0, -1/6, 1/6.
 *   x0: y0 1/2 / (1/12) = 6; y1 and y2 have no margin (r sums 0 and -1/6);
 *       y3 -1/2 / (1/12) = -6                                   -> y0, 6
 *   x1: y0 1/2 / (7/48) = 24/7; y1 0; y2 none; y3 24/7          -> y0, 24/7
 *   x2: y0 -6; y1, y2 none; y3 6                                -> y3, 6
 *   y0: x0 6, x1 24/7, x2 -6 -> x0;  y3: x0 -6, x1 24/7, x2 6 -> x2
 * so mutual keeps (0, 0) and (2, 3).
 */
TEST(mine_k_larger_than_sets)
{
	float		x[12],
				y[16];
	cq_mine_options o;
	cq_mine_pair p[3];
	cq_knn		x2y,
				y2x;
	int			n;

	hand_vectors(x, y);
	cq_mine_options_default(&o);
	o.k = 5;
	CHECK_INT_EQ(cq_mine_knn(x, 3, y, 4, 4, &o, &x2y, &y2x, NULL), CQ_OK);
	CHECK_INT_EQ(x2y.len, 4);
	CHECK_INT_EQ(y2x.len, 3);
	CHECK(x2y.mean[0] == 0 && x2y.mean[1] == 0.125 && x2y.mean[2] == 0);
	CHECK_NEAR(y2x.mean[0], 1.0 / 6, 1e-15);
	CHECK(y2x.mean[1] == 0);
	CHECK_NEAR(y2x.mean[2], -1.0 / 6, 1e-15);
	cq_mine_knn_free(&x2y);
	cq_mine_knn_free(&y2x);

	CHECK_INT_EQ(cq_mine(x, 3, y, 4, 4, &o, p, &n, NULL), CQ_OK);
	CHECK_INT_EQ(n, 3);
	CHECK_INT_EQ(p[0].tgt, 0);
	CHECK_NEAR(p[0].margin, 6, 1e-12);
	CHECK_INT_EQ(p[1].tgt, 0);
	CHECK_NEAR(p[1].margin, 24.0 / 7, 1e-12);
	CHECK_INT_EQ(p[2].tgt, 3);
	CHECK_NEAR(p[2].margin, 6, 1e-12);
	o.mutual = true;
	CHECK_INT_EQ(cq_mine(x, 3, y, 4, 4, &o, p, &n, NULL), CQ_OK);
	CHECK_INT_EQ(n, 2);
	CHECK(p[0].src == 0 && p[0].tgt == 0 && p[1].src == 2 && p[1].tgt == 3);
}

TEST(mine_knn_mean_and_margin)
{
	double		v[4] = {0.1, 0.9, 0.5, 0.7};
	double		w[2] = {0.25, -0.25};
	double		m = 0;

	CHECK_NEAR(cq_mine_knn_mean(v, 4, 2), 0.8, 1e-15);
	CHECK(v[0] == 0.9 && v[1] == 0.7 && v[2] == 0.5 && v[3] == 0.1);
	CHECK(cq_mine_knn_mean(w, 2, 4) == 0);
	CHECK(isnan(cq_mine_knn_mean(v, 0, 4)));
	CHECK(cq_mine_ratio_margin(0.5, 0.25, 0.5, &m));
	CHECK(m == 0.5 / 0.375);
	CHECK(!cq_mine_ratio_margin(0.5, 0.25, -0.25, &m));
	CHECK(!cq_mine_ratio_margin(0.5, -0.5, 0.25, &m));
	CHECK(!cq_mine_ratio_margin(0.5, NAN, 0.25, &m));
}

/* A small generator of the tests' own (xorshift64*), uniform in [-1, 1). */
static float
uniform(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (float) ((*s * 0x2545F4914F6CDD1DULL) >> 40) / (1 << 23) - 1;
}

/*
 * Random unit vectors, every repeat_every-th row a copy of the one before
 * (so that cosines tie exactly); positive: components in [0, 1) (every
 * cosine positive, so every candidate has a margin).
 */
static float *
random_set(uint64_t *rng, int n, int d, int repeat_every, bool positive)
{
	float	   *v = malloc(sizeof(float) * n * d);

	for (int i = 0; i < n; i++)
		for (int c = 0; c < d; c++)
			v[i * d + c] = (repeat_every && i % repeat_every == repeat_every - 1)
				? v[(i - 1) * d + c] : positive ? fabsf(uniform(rng)) : uniform(rng);
	CHECK_INT_EQ(cq_mine_normalize(v, n, d, NULL, NULL), CQ_OK);
	return v;
}

static bool
pairs_equal(const cq_mine_pair *a, const cq_mine_pair *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i].src != b[i].src || a[i].tgt != b[i].tgt ||
			memcmp(&a[i].cosine, &b[i].cosine, sizeof(float)) != 0 ||
			memcmp(&a[i].margin, &b[i].margin, sizeof(double)) != 0)
			return false;
	return true;
}

static bool
knn_equal(const cq_knn *a, const cq_knn *b)
{
	size_t		cells = (size_t) a->rows * a->len;

	return a->rows == b->rows && a->len == b->len &&
		memcmp(a->sim, b->sim, cells * sizeof(float)) == 0 &&
		memcmp(a->idx, b->idx, cells * sizeof(int32_t)) == 0 &&
		memcmp(a->mean, b->mean, a->rows * sizeof(double)) == 0;
}

TEST(mine_same_bits_any_blocks_and_threads)
{
	enum {N = 67, M = 45, D = 19};
	static const int blocks[][2] = {{256, 1024}, {1, 1}, {5, 7}, {67, 1}, {2, 45}, {16, 33}};
	int			saved = cq_parallel_threads();
	uint64_t	rng;
	float	   *x,
			   *y;
	cq_mine_options o;
	cq_knn		rx,
				ry,
				x2y,
				y2x;
	cq_mine_pair p0[N],
				p[N];
	int			n0,
				n;

	rng = 119449609246;
	x = random_set(&rng, N, D, 5, false);
	y = random_set(&rng, M, D, 4, false);
	cq_mine_options_default(&o);
	o.k = 3;
	cq_parallel_set_threads(1);
	CHECK_INT_EQ(cq_mine_knn(x, N, y, M, D, &o, &rx, &ry, NULL), CQ_OK);
	CHECK_INT_EQ(cq_mine(x, N, y, M, D, &o, p0, &n0, NULL), CQ_OK);
	CHECK(n0 > N / 2);
	for (int t = 1; t <= 3; t++)
		for (int b = 0; b < (int) (sizeof(blocks) / sizeof(blocks[0])); b++)
		{
			cq_parallel_set_threads(t);
			o.block_rows = blocks[b][0];
			o.block_cols = blocks[b][1];
			CHECK_INT_EQ(cq_mine_knn(x, N, y, M, D, &o, &x2y, &y2x, NULL), CQ_OK);
			CHECK(knn_equal(&x2y, &rx));
			CHECK(knn_equal(&y2x, &ry));
			cq_mine_knn_free(&x2y);
			cq_mine_knn_free(&y2x);
			CHECK_INT_EQ(cq_mine(x, N, y, M, D, &o, p, &n, NULL), CQ_OK);
			CHECK(n == n0 && pairs_equal(p, p0, n));
		}
	cq_parallel_set_threads(saved);
	cq_mine_knn_free(&rx);
	cq_mine_knn_free(&ry);
	free(x);
	free(y);
}

/*
 * The sweep fed block by block (cq_mine_knn_add), as a host streaming the
 * vectors from a file feeds it: sources and targets cut into uneven blocks,
 * swept target-block first or source-block first, give cq_mine_knn's lists
 * and means bit for bit (the k-NN of a source over all target blocks is the
 * merge of its per-block top k), and so the same pairs.
 */
TEST(mine_knn_add_any_partition)
{
	enum {N = 71, M = 53, D = 13};
	static const int cuts[][2] = {{71, 53}, {1, 1}, {13, 7}, {30, 53}, {71, 9}, {8, 20}};
	uint64_t	rng;
	float	   *x,
			   *y;
	cq_mine_options o;
	cq_knn		rx,
				ry,
				x2y,
				y2x;
	cq_mine_pair p0[N],
				p[N];
	int			n0,
				n;

	rng = 3141592653589;
	x = random_set(&rng, N, D, 6, false);
	y = random_set(&rng, M, D, 5, false);
	cq_mine_options_default(&o);
	o.k = 4;
	o.mutual = true;
	CHECK_INT_EQ(cq_mine_knn(x, N, y, M, D, &o, &rx, &ry, NULL), CQ_OK);
	CHECK_INT_EQ(cq_mine_select(&rx, &ry, true, -INFINITY, p0, &n0, NULL), CQ_OK);
	CHECK(n0 > 0);
	for (int c = 0; c < (int) (sizeof(cuts) / sizeof(cuts[0])); c++)
		for (int tgt_outer = 0; tgt_outer < 2; tgt_outer++)
		{
			int			r = cuts[c][0],
						q = cuts[c][1];

			o.block_rows = 1 + c;	/* the core's own tiling inside a block */
			o.block_cols = 3 + 2 * c;
			CHECK_INT_EQ(cq_mine_knn_init(N, M, o.k, &x2y, &y2x, NULL), CQ_OK);
			for (int a = 0; a < (tgt_outer ? M : N); a += tgt_outer ? q : r)
				for (int b = 0; b < (tgt_outer ? N : M); b += tgt_outer ? r : q)
				{
					int			i0 = tgt_outer ? b : a,
								j0 = tgt_outer ? a : b,
								rows = N - i0 < r ? N - i0 : r,
								cols = M - j0 < q ? M - j0 : q;

					CHECK_INT_EQ(cq_mine_knn_add(x + (size_t) i0 * D, i0, rows,
												 y + (size_t) j0 * D, j0, cols, D, &o,
												 &x2y, &y2x, NULL), CQ_OK);
				}
			cq_mine_knn_finish(&x2y, &y2x);
			CHECK(knn_equal(&x2y, &rx));
			CHECK(knn_equal(&y2x, &ry));
			CHECK_INT_EQ(cq_mine_select(&x2y, &y2x, true, -INFINITY, p, &n, NULL), CQ_OK);
			CHECK(n == n0 && pairs_equal(p, p0, n));
			cq_mine_knn_free(&x2y);
			cq_mine_knn_free(&y2x);
		}
	/* a block outside the lists is refused */
	CHECK_INT_EQ(cq_mine_knn_init(N, M, o.k, &x2y, &y2x, NULL), CQ_OK);
	CHECK_INT_EQ(cq_mine_knn_add(x, 70, 2, y, 0, 1, D, &o, &x2y, &y2x, NULL), CQ_EINVAL);
	CHECK_INT_EQ(cq_mine_knn_add(x, 0, 1, y, 53, 1, D, &o, &x2y, &y2x, NULL), CQ_EINVAL);
	cq_mine_knn_free(&x2y);
	cq_mine_knn_free(&y2x);
	cq_mine_knn_free(&rx);
	cq_mine_knn_free(&ry);
	free(x);
	free(y);
}

/*
 * A source's candidates for re-ranking (cq_mine_candidates), on the hand
 * vectors with k = 2: in margin order, equal margins the smaller index
 * first; kc cuts the list; mutual keeps the targets whose best source is
 * the row (y0's is x0, so x1 keeps y3 only); min_margin drops after the
 * cut.  With kc = 1 every row's candidate is cq_mine_select's pair.
 */
TEST(mine_candidates_hand)
{
	float		x[12],
				y[16];
	cq_mine_options o;
	cq_knn		x2y,
				y2x;
	cq_mine_pair c[4],
				p[3];
	int32_t		bwd[4];
	int			n;

	hand_vectors(x, y);
	cq_mine_options_default(&o);
	o.k = 2;
	CHECK_INT_EQ(cq_mine_knn(x, 3, y, 4, 4, &o, &x2y, &y2x, NULL), CQ_OK);
	CHECK_INT_EQ(cq_mine_candidates(&x2y, &y2x, NULL, 0, -INFINITY, 2, c), 2);
	check_pair(&c[0], 0, 1, 0.5, 4.0 / 3.0);
	check_pair(&c[1], 0, 0, 0.5, 1);
	CHECK_INT_EQ(cq_mine_candidates(&x2y, &y2x, NULL, 1, -INFINITY, 2, c), 2);
	check_pair(&c[0], 1, 0, 0.5, 1);
	check_pair(&c[1], 1, 3, 0.5, 1);
	CHECK_INT_EQ(cq_mine_candidates(&x2y, &y2x, NULL, 2, -INFINITY, 2, c), 2);
	check_pair(&c[0], 2, 2, 0.5, 2);
	check_pair(&c[1], 2, 3, 0.5, 1);
	/* kc = 1: the best alone */
	CHECK_INT_EQ(cq_mine_candidates(&x2y, &y2x, NULL, 1, -INFINITY, 1, c), 1);
	check_pair(&c[0], 1, 0, 0.5, 1);
	/* min_margin after the cut: x0 keeps y1 (4/3) only, x1 none with kc = 1 */
	CHECK_INT_EQ(cq_mine_candidates(&x2y, &y2x, NULL, 0, 4.0 / 3.0, 2, c), 1);
	check_pair(&c[0], 0, 1, 0.5, 4.0 / 3.0);
	CHECK_INT_EQ(cq_mine_candidates(&x2y, &y2x, NULL, 1, 1.5, 2, c), 0);
	/* mutual */
	cq_mine_best_sources(&x2y, &y2x, bwd);
	CHECK_INT_EQ(bwd[0], 0);
	CHECK_INT_EQ(bwd[1], 0);
	CHECK_INT_EQ(bwd[2], 2);
	CHECK_INT_EQ(bwd[3], 1);
	CHECK_INT_EQ(cq_mine_candidates(&x2y, &y2x, bwd, 1, -INFINITY, 2, c), 1);
	check_pair(&c[0], 1, 3, 0.5, 1);
	CHECK_INT_EQ(cq_mine_candidates(&x2y, &y2x, bwd, 1, -INFINITY, 1, c), 0);
	/* kc = 1 is the selection, forward and mutual */
	for (int mutual = 0; mutual < 2; mutual++)
	{
		int			at = 0;

		CHECK_INT_EQ(cq_mine_select(&x2y, &y2x, mutual, -INFINITY, p, &n, NULL), CQ_OK);
		for (int i = 0; i < 3; i++)
			if (cq_mine_candidates(&x2y, &y2x, mutual ? bwd : NULL, i, -INFINITY, 1, c) == 1)
			{
				CHECK(at < n && pairs_equal(&c[0], &p[at], 1));
				at++;
			}
		CHECK_INT_EQ(at, n);
	}
	cq_mine_knn_free(&x2y);
	cq_mine_knn_free(&y2x);
}

/*
 * Random sets, k = 6: each row's candidates with kc = k are its whole list
 * (every entry with a margin) in descending margin order, and kc = 1 gives
 * cq_mine_select's pairs with and without mutual and a threshold.
 */
TEST(mine_candidates_random)
{
	enum {N = 41, M = 37, D = 11, K = 6};
	uint64_t	rng = 2718281828459;
	float	   *x = random_set(&rng, N, D, 0, false),
			   *y = random_set(&rng, M, D, 0, false);
	cq_mine_options o;
	cq_knn		x2y,
				y2x;
	cq_mine_pair c[K],
				p[N];
	int32_t		bwd[M];
	int			n;

	cq_mine_options_default(&o);
	o.k = K;
	CHECK_INT_EQ(cq_mine_knn(x, N, y, M, D, &o, &x2y, &y2x, NULL), CQ_OK);
	cq_mine_best_sources(&x2y, &y2x, bwd);
	for (int i = 0; i < N; i++)
	{
		int			nc = cq_mine_candidates(&x2y, &y2x, NULL, i, -INFINITY, K, c),
					with_margin = 0;

		for (int q = 0; q < K; q++)
		{
			double		mg;

			with_margin += cq_mine_ratio_margin(x2y.sim[i * K + q], x2y.mean[i],
												y2x.mean[x2y.idx[i * K + q]], &mg);
		}
		CHECK_INT_EQ(nc, with_margin);
		for (int q = 0; q + 1 < nc; q++)
			CHECK(c[q].margin > c[q + 1].margin ||
				  (c[q].margin == c[q + 1].margin && c[q].tgt < c[q + 1].tgt));
	}
	for (int mutual = 0; mutual < 2; mutual++)
		for (int t = 0; t < 2; t++)
		{
			double		thr = t ? 1.0 : -INFINITY;
			int			at = 0;

			CHECK_INT_EQ(cq_mine_select(&x2y, &y2x, mutual, thr, p, &n, NULL), CQ_OK);
			CHECK(n > 0);
			for (int i = 0; i < N; i++)
				if (cq_mine_candidates(&x2y, &y2x, mutual ? bwd : NULL, i, thr, 1, c) == 1)
				{
					CHECK(at < n && pairs_equal(&c[0], &p[at], 1));
					at++;
				}
			CHECK_INT_EQ(at, n);
		}
	cq_mine_knn_free(&x2y);
	cq_mine_knn_free(&y2x);
	free(x);
	free(y);
}

/*
 * Exact ties: a target repeated (y1 = y0, y3 = y2) gives equal cosines; the
 * lists keep the smaller index first and the pairs choose it.
 */
TEST(mine_ties_smaller_index)
{
	enum {D = 8};
	uint64_t	rng;
	float	   *x,
			   *y;
	cq_mine_options o;
	cq_knn		x2y,
				y2x;
	cq_mine_pair p[6];
	int			n;

	rng = 18581050328;
	x = random_set(&rng, 6, D, 0, true);
	y = random_set(&rng, 4, D, 2, true);
	CHECK(memcmp(y, y + D, sizeof(float) * D) == 0);
	cq_mine_options_default(&o);
	o.k = 4;
	CHECK_INT_EQ(cq_mine_knn(x, 6, y, 4, D, &o, &x2y, &y2x, NULL), CQ_OK);
	for (int i = 0; i < 6; i++)
		for (int q = 0; q + 1 < 4; q++)
		{
			int32_t		a = x2y.idx[i * 4 + q],
						b = x2y.idx[i * 4 + q + 1];

			CHECK(x2y.sim[i * 4 + q] >= x2y.sim[i * 4 + q + 1]);
			/* a pair of equal targets sits together, the smaller first */
			if (a / 2 == b / 2)
				CHECK(a < b && x2y.sim[i * 4 + q] == x2y.sim[i * 4 + q + 1]);
		}
	for (int j = 0; j < 4; j += 2)
		CHECK(y2x.mean[j] == y2x.mean[j + 1]);
	cq_mine_knn_free(&x2y);
	cq_mine_knn_free(&y2x);
	CHECK_INT_EQ(cq_mine(x, 6, y, 4, D, &o, p, &n, NULL), CQ_OK);
	CHECK_INT_EQ(n, 6);
	for (int i = 0; i < n; i++)
		CHECK(p[i].tgt % 2 == 0);
	free(x);
	free(y);
}

TEST(mine_empty_sets_and_bad_options)
{
	float		x[4] = {1, 0, 0, 1};
	cq_mine_options o;
	cq_mine_pair p[2];
	cq_error	err;
	int			n = -1;

	cq_mine_options_default(&o);
	CHECK_INT_EQ(cq_mine(x, 2, x, 0, 2, &o, p, &n, NULL), CQ_OK);
	CHECK_INT_EQ(n, 0);
	CHECK_INT_EQ(cq_mine(x, 0, x, 2, 2, &o, p, &n, NULL), CQ_OK);
	CHECK_INT_EQ(n, 0);
	o.k = 0;
	CHECK_INT_EQ(cq_mine(x, 2, x, 2, 2, &o, p, &n, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "k is 0") != NULL);
	o.k = CQ_MINE_MAX_K + 1;
	CHECK_INT_EQ(cq_mine(x, 2, x, 2, 2, &o, p, &n, &err), CQ_EINVAL);
	cq_mine_options_default(&o);
	o.block_cols = 0;
	CHECK_INT_EQ(cq_mine(x, 2, x, 2, 2, &o, p, &n, &err), CQ_EINVAL);
	cq_mine_options_default(&o);
	o.min_margin = NAN;
	CHECK_INT_EQ(cq_mine(x, 2, x, 2, 2, &o, p, &n, &err), CQ_EINVAL);
	cq_mine_options_default(&o);
	CHECK_INT_EQ(cq_mine(x, 2, x, 2, 0, &o, p, &n, &err), CQ_EINVAL);
}

TEST(mine_work_bytes)
{
	cq_mine_options o;

	cq_mine_options_default(&o);
	/* lists 8 (3*4 + 5*3), means 8*8, best sources 4*5, block 4*(3*5), packed 4*(32*2) */
	CHECK_INT_EQ(cq_mine_work_bytes(3, 5, 2, &o), 216 + 64 + 20 + 60 + 256);
	/* 10^5 x 10^5, d 256: lists 6.4 MB, blocks 1 MB + 1 MB */
	CHECK_INT_EQ(cq_mine_work_bytes(100000, 100000, 256, &o),
				 8L * 800000 + 8L * 200000 + 4L * 100000 + 4L * 256 * 1024 + 4L * 1024 * 256);
}

/* ---- a cancel between blocks ---- */

static jmp_buf cancel_jmp;
static int	polls_left;
static int	polls;
static void *live[64];
static int	n_live;

static void
cancel_hook(void)
{
	polls++;
	if (polls_left >= 0 && polls_left-- == 0)
		longjmp(cancel_jmp, 1);
}

static void *
track_alloc(size_t size)
{
	void	   *p = malloc(size);

	if (p && n_live < 64)
		live[n_live++] = p;
	return p;
}

static void *
track_realloc(void *ptr, size_t size)
{
	int			slot = -1;
	void	   *p;

	for (int i = 0; i < n_live; i++)
		if (live[i] == ptr)
			slot = i;
	p = realloc(ptr, size);
	if (p && slot >= 0)
		live[slot] = p;
	return p;
}

static void
track_free(void *ptr)
{
	for (int i = 0; i < n_live; i++)
		if (live[i] == ptr)
			live[i] = NULL;
	free(ptr);
}

TEST(mine_cancel_between_blocks)
{
	static const cq_allocator tracking = {track_alloc, track_realloc, track_free};
	enum {N = 40, M = 30, D = 8};
	uint64_t	rng;
	float	   *x,
			   *y;
	cq_mine_options o;
	cq_mine_pair p[N];
	int			n;

	rng = 7963307284;
	x = random_set(&rng, N, D, 0, false);
	y = random_set(&rng, M, D, 0, false);
	cq_mine_options_default(&o);
	o.block_rows = 10;
	o.block_cols = 10;
	/* without a cancel: at least one poll per block (4 x 3) */
	polls = 0;
	polls_left = -1;
	cq_set_interrupt_hook(cancel_hook);
	CHECK_INT_EQ(cq_mine(x, N, y, M, D, &o, p, &n, NULL), CQ_OK);
	CHECK(polls >= 12);
	/* cancelled at the fifth poll: the core leaves by longjmp */
	n_live = 0;
	polls_left = 4;
	cq_set_allocator(&tracking);
	if (setjmp(cancel_jmp) == 0)
	{
		cq_mine(x, N, y, M, D, &o, p, &n, NULL);
		CHECK(!"cq_mine returned after a cancel");
	}
	cq_set_allocator(NULL);
	cq_set_interrupt_hook(NULL);
	CHECK(n_live > 0);
	/* what it held was all cq_alloc'd: the host frees it (ASan: no leak) */
	for (int i = 0; i < n_live; i++)
		free(live[i]);
	free(x);
	free(y);
}

/*
 * A cancel is also taken after the sweep: while the means are summed and
 * while the pairs are chosen (with k = 1000 on 60,000 x 60,000 vectors
 * those took seconds without a poll).
 */
TEST(mine_polls_in_means_and_selection)
{
	enum {N = 3000, M = 2000, D = 3};
	uint64_t	rng;
	float	   *x,
			   *y;
	cq_mine_options o;
	cq_knn		x2y,
				y2x;
	cq_mine_pair *p = malloc(sizeof(cq_mine_pair) * N);
	int			n;

	rng = 2718281828459;
	x = random_set(&rng, N, D, 0, false);
	y = random_set(&rng, M, D, 0, false);
	cq_mine_options_default(&o);
	CHECK_INT_EQ(cq_mine_knn_init(N, M, o.k, &x2y, &y2x, NULL), CQ_OK);
	CHECK_INT_EQ(cq_mine_knn_add(x, 0, N, y, 0, M, D, &o, &x2y, &y2x, NULL), CQ_OK);
	polls = 0;
	polls_left = -1;
	cq_set_interrupt_hook(cancel_hook);
	cq_mine_knn_finish(&x2y, &y2x);
	/* every 256 rows: 12 + 8 */
	CHECK_INT_EQ(polls, 20);
	polls = 0;
	CHECK_INT_EQ(cq_mine_select(&x2y, &y2x, true, -INFINITY, p, &n, NULL), CQ_OK);
	/* every 1024 rows: 2 targets' blocks + 3 sources' */
	CHECK_INT_EQ(polls, 5);
	/* a cancel in the selection leaves by longjmp, holding only cq_alloc memory */
	{
		static const cq_allocator tracking = {track_alloc, track_realloc, track_free};

		n_live = 0;
		polls_left = 3;
		cq_set_allocator(&tracking);
		if (setjmp(cancel_jmp) == 0)
		{
			cq_mine_select(&x2y, &y2x, true, -INFINITY, p, &n, NULL);
			CHECK(!"cq_mine_select returned after a cancel");
		}
		cq_set_allocator(NULL);
		CHECK(n_live > 0);
		for (int i = 0; i < n_live; i++)
			free(live[i]);
	}
	cq_set_interrupt_hook(NULL);
	cq_mine_knn_free(&x2y);
	cq_mine_knn_free(&y2x);
	free(p);
	free(x);
	free(y);
}

/*
 * With a large k a block's update of the lists is cut into slices of rows
 * with a poll between them (a block of 256 x 1024 cosines with k = 1000
 * took seconds): 300 x 1100 vectors, k = 1000, in 2 x 2 blocks, poll many
 * times per block; the lists are those of small blocks (no slicing).
 */
TEST(mine_polls_within_a_block_for_large_k)
{
	enum {N = 300, M = 1100, D = 4};
	uint64_t	rng;
	float	   *x,
			   *y;
	cq_mine_options o;
	cq_knn		x2y,
				y2x,
				rx,
				ry;

	rng = 1618033988749;
	x = random_set(&rng, N, D, 0, false);
	y = random_set(&rng, M, D, 0, false);
	cq_mine_options_default(&o);
	o.k = 1000;
	polls = 0;
	polls_left = -1;
	cq_set_interrupt_hook(cancel_hook);
	CHECK_INT_EQ(cq_mine_knn_init(N, M, o.k, &x2y, &y2x, NULL), CQ_OK);
	CHECK_INT_EQ(cq_mine_knn_add(x, 0, N, y, 0, M, D, &o, &x2y, &y2x, NULL), CQ_OK);
	cq_set_interrupt_hook(NULL);
	/* slices of 4194304 / (1024 x 1300) = 3 rows: 86 + 15 per target block */
	CHECK(polls >= 2 * (86 + 15));
	cq_mine_knn_finish(&x2y, &y2x);
	o.block_rows = 3;
	o.block_cols = 50;
	CHECK_INT_EQ(cq_mine_knn(x, N, y, M, D, &o, &rx, &ry, NULL), CQ_OK);
	CHECK(knn_equal(&x2y, &rx));
	CHECK(knn_equal(&y2x, &ry));
	cq_mine_knn_free(&x2y);
	cq_mine_knn_free(&y2x);
	cq_mine_knn_free(&rx);
	cq_mine_knn_free(&ry);
	free(x);
	free(y);
}
