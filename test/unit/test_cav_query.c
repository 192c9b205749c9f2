/* CAV readers against brute-force dense computations on a random corpus. */
#include "test_cav.h"
#include "unit.h"

#include "common/mem.h"

#include <stdlib.h>

typedef struct dense_cav
{
	cav_view	v;
	uint8_t    *bytes;
	cav_state  *st;
	size_t		rows;
	int64_t   **m;				/* [n_mat] dense rows x l_max, built from the corpus */
} dense_cav;

/*
 * The definition, straight: for every target position j of every pair and
 * every concat position i <= n_src + j with d = n_src + j - i < l_max,
 * add 1 at (row of token i, d) of the matrix of target token j.
 */
static void
build_dense(dense_cav *d, const tcav_pair *p, int n, uint32_t l_max)
{
	cq_error	err;
	size_t		len;

	d->st = tcav_build(p, 0, n, l_max, NULL, 0);
	d->bytes = tcav_bytes(d->st, &len);
	CHECK_INT_EQ(cav_view_open(d->bytes, len, &d->v, &err), CQ_OK);
	d->rows = (size_t) d->v.n_src + d->v.n_tgt;
	d->m = calloc(d->v.n_mat, sizeof(int64_t *));
	for (uint32_t t = 0; t < d->v.n_mat; t++)
		d->m[t] = calloc(d->rows * l_max, sizeof(int64_t));
	for (int k = 0; k < n; k++)
		for (int j = 0; j < p[k].nt; j++)
		{
			uint32_t	t;
			int			at = p[k].ns + j;

			CHECK_INT_EQ(cav_view_find(&d->v, p[k].tgt[j], strlen(p[k].tgt[j]), &t, &err), CQ_OK);
			for (int i = 0; i <= at; i++)
			{
				int			side = i >= p[k].ns;
				long		row = tcav_row(&d->v, side, side ? p[k].tgt[i - p[k].ns] : p[k].src[i]);

				if ((uint32_t) (at - i) < l_max)
					d->m[t][row * l_max + (at - i)]++;
			}
		}
}

static void
free_dense(dense_cav *d)
{
	for (uint32_t t = 0; t < d->v.n_mat; t++)
		free(d->m[t]);
	free(d->m);
	cq_free(d->bytes);
	cav_state_free(d->st);
}

static double
dense_cos(const dense_cav *d, uint32_t a, uint32_t b)
{
	double		dot = 0,
				na = 0,
				nb = 0;

	for (size_t i = 0; i < d->rows * d->v.l_max; i++)
	{
		dot += (double) d->m[a][i] * d->m[b][i];
		na += (double) d->m[a][i] * d->m[a][i];
		nb += (double) d->m[b][i] * d->m[b][i];
	}
	return dot / sqrt(na * nb);
}

TEST(cav_matrices_cosine_match_dense)
{
	tcav_pair  *p = tcav_corpus(150, 42, 40);
	dense_cav	d;
	double		max_err = 0;

	build_dense(&d, p, 150, 10);
	CHECK(d.v.n_mat > 20);
	for (uint32_t t = 0; t < d.v.n_mat; t++)
	{
		int64_t    *got = tcav_dense(&d.v, t);

		CHECK(memcmp(got, d.m[t], d.rows * d.v.l_max * sizeof(int64_t)) == 0);
		free(got);
		for (uint32_t u = 0; u < d.v.n_mat; u++)
		{
			double		e = fabs(cav_view_cosine(&d.v, t, u) - dense_cos(&d, t, u));

			if (e > max_err)
				max_err = e;
		}
	}
	CHECK(max_err < 1e-12);
	free_dense(&d);
	free(p);
}

TEST(cav_topk_matches_brute_force)
{
	tcav_pair  *p = tcav_corpus(200, 9, 50);
	dense_cav	d;
	uint32_t	idx[64];
	double		sim[64];

	build_dense(&d, p, 200, 8);
	for (uint32_t q = 0; q < d.v.n_mat; q += 3)
	{
		uint32_t	k = 1 + q % 10,
					n;
		double		all[4096];
		cq_error	err;

		CHECK_INT_EQ(cav_view_topk(&d.v, q, k, idx, sim, &n, &err), CQ_OK);
		CHECK_INT_EQ(n, k);
		for (uint32_t t = 0; t < d.v.n_mat; t++)
			all[t] = dense_cos(&d, q, t);
		/* the brute-force ranking, by value (exact ties may round either way) */
		{
			double		sorted[4096];
			uint32_t	m = 0;

			for (uint32_t t = 0; t < d.v.n_mat; t++)
				if (t != q)
				{
					uint32_t	at = m++;

					while (at > 0 && sorted[at - 1] < all[t])
					{
						sorted[at] = sorted[at - 1];
						at--;
					}
					sorted[at] = all[t];
				}
			for (uint32_t r = 0; r < n; r++)
			{
				CHECK(idx[r] != q && idx[r] < d.v.n_mat);
				CHECK_NEAR(sim[r], all[idx[r]], 1e-12);
				CHECK_NEAR(sim[r], sorted[r], 1e-12);
				for (uint32_t o = 0; o < r; o++)
					CHECK(idx[o] != idx[r]);
				if (r)
					CHECK(sim[r] < sim[r - 1] || (sim[r] == sim[r - 1] && idx[r] > idx[r - 1]));
			}
		}
	}
	/* k above the number of other tokens returns all of them */
	{
		uint32_t	n,
				   *all_idx = malloc(sizeof(uint32_t) * d.v.n_mat);
		double	   *all_sim = malloc(sizeof(double) * d.v.n_mat);

		CHECK_INT_EQ(cav_view_topk(&d.v, 1, d.v.n_mat + 5, all_idx, all_sim, &n, NULL), CQ_OK);
		CHECK_INT_EQ(n, d.v.n_mat - 1);
		CHECK_INT_EQ(cav_view_topk(&d.v, d.v.n_mat, 1, all_idx, all_sim, &n, NULL), CQ_EINVAL);
		free(all_idx);
		free(all_sim);
	}
	free_dense(&d);
	free(p);
}

/* Straight PyTorch bin formula over a dense H x W matrix. */
static void
pool_doubles(const double *x, size_t H, size_t W, uint32_t oh, uint32_t ow, double *out)
{
	for (uint32_t i = 0; i < oh; i++)
		for (uint32_t j = 0; j < ow; j++)
		{
			size_t		r0 = i * H / oh,
						r1 = ((i + 1) * H + oh - 1) / oh,
						c0 = j * W / ow,
						c1 = ((j + 1) * W + ow - 1) / ow;
			double		s = 0;

			for (size_t r = r0; r < r1; r++)
				for (size_t c = c0; c < c1; c++)
					s += x[r * W + c];
			out[i * ow + j] = s / (double) ((r1 - r0) * (c1 - c0));
		}
}

/* The bin formula over the dense count matrix. */
static void
dense_pool(const int64_t *m, size_t H, size_t W, uint32_t oh, uint32_t ow, double *out)
{
	double	   *x = malloc(sizeof(double) * H * W);

	for (size_t i = 0; i < H * W; i++)
		x[i] = (double) m[i];
	pool_doubles(x, H, W, oh, ow, out);
	free(x);
}

TEST(cav_pool_matches_dense)
{
	tcav_pair  *p = tcav_corpus(80, 17, 30);
	dense_cav	d;
	const uint32_t shapes[][2] = {{1, 1}, {3, 4}, {7, 5}, {16, 16}, {64, 9}, {5, 23}};
	double		max_err = 0;

	build_dense(&d, p, 80, 9);
	for (uint32_t t = 0; t < d.v.n_mat; t += 2)
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		{
			uint32_t	oh = shapes[s][0],
						ow = shapes[s][1];
			double	   *got = malloc(sizeof(double) * oh * ow),
					   *want = malloc(sizeof(double) * oh * ow);

			CHECK_INT_EQ(cav_view_pool(&d.v, t, oh, ow, got, NULL), CQ_OK);
			dense_pool(d.m[t], d.rows, d.v.l_max, oh, ow, want);
			for (uint32_t i = 0; i < oh * ow; i++)
				if (fabs(got[i] - want[i]) > max_err)
					max_err = fabs(got[i] - want[i]);
			free(got);
			free(want);
		}
	CHECK(max_err < 1e-12);
	CHECK_INT_EQ(cav_view_pool(&d.v, 0, 0, 3, NULL, NULL), CQ_EINVAL);
	CHECK_INT_EQ(cav_view_pool(&d.v, d.v.n_mat, 1, 1, NULL, NULL), CQ_EINVAL);
	free_dense(&d);
	free(p);
}

/* LayerNorm (no affine) over the dense matrix, then pooled, done densely. */
static void
dense_layer_norm_pool(const int64_t *m, size_t H, size_t W, double eps, uint32_t oh,
					  uint32_t ow, double *out)
{
	double	   *x = malloc(sizeof(double) * H * W),
				mean = 0,
				var = 0;

	for (size_t i = 0; i < H * W; i++)
		mean += (double) m[i];
	mean /= (double) (H * W);
	for (size_t i = 0; i < H * W; i++)
		var += ((double) m[i] - mean) * ((double) m[i] - mean);
	var /= (double) (H * W);
	for (size_t i = 0; i < H * W; i++)
		x[i] = ((double) m[i] - mean) / sqrt(var + eps);
	pool_doubles(x, H, W, oh, ow, out);
	free(x);
}

TEST(cav_pool_layer_norm_matches_dense)
{
	tcav_pair  *p = tcav_corpus(60, 13, 25);
	dense_cav	d;
	const uint32_t shapes[][2] = {{1, 1}, {3, 4}, {8, 8}, {40, 3}};
	const double eps[] = {1e-5, 1.0};
	double		max_err = 0;

	build_dense(&d, p, 60, 7);
	for (uint32_t t = 0; t < d.v.n_mat; t += 3)
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
			for (size_t e = 0; e < 2; e++)
			{
				uint32_t	oh = shapes[s][0],
							ow = shapes[s][1];
				double	   *got = malloc(sizeof(double) * oh * ow),
						   *want = malloc(sizeof(double) * oh * ow);

				CHECK_INT_EQ(cav_view_pool_layer_norm(&d.v, t, oh, ow, eps[e], got, NULL), CQ_OK);
				dense_layer_norm_pool(d.m[t], d.rows, d.v.l_max, eps[e], oh, ow, want);
				for (uint32_t i = 0; i < oh * ow; i++)
					if (fabs(got[i] - want[i]) > max_err)
						max_err = fabs(got[i] - want[i]);
				free(got);
				free(want);
			}
	/* doubles of O(1..100) after a few hundred additions: far below 1e-9 */
	CHECK(max_err < 1e-9);
	CHECK_INT_EQ(cav_view_pool_layer_norm(&d.v, 0, 2, 2, 0.0, NULL, NULL), CQ_EINVAL);
	CHECK_INT_EQ(cav_view_pool_layer_norm(&d.v, 0, 0, 2, 1e-5, NULL, NULL), CQ_EINVAL);
	free_dense(&d);
	free(p);
}
