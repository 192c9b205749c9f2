/*
 * The norm object (nn/layers/norm.h) for every kind: hand-worked values, the
 * inference forward at a row stride against the training forward and its
 * statistics, the backward against central differences of the forward, and
 * an absent norm (the identity).
 */
#include "unit.h"

#include "common/rng.h"
#include "nn/layers/norm.h"

#define D 8
#define ROWS 3

/* A row: x = (1, 2, 3, 6): mean 3, var 3.5. */
TEST(norm_layer_hand_worked)
{
	/* two rows at stride 6: the object must not touch columns 4 and 5 */
	float		x[12] = {1, 2, 3, 6, 77, 77, 5, 5, 5, 5, 77, 77},
				w[4] = {1, 2, 1, 0.5f},
				b[4] = {0, 0, 1, -1},
				y[12] = {0};
	cq_norm		n = {w, b, 4, CQ_NORM_LAYER, 1e-5f};
	double		s = 1.0 / sqrt(3.5 + 1e-5);

	cq_norm_forward(&n, x, y, 2, 6);
	CHECK_NEAR(y[0], -2 * s, 1e-6);
	CHECK_NEAR(y[1], -2 * s, 1e-6);
	CHECK_NEAR(y[2], 1.0, 1e-6);
	CHECK_NEAR(y[3], 0.5 * 3 * s - 1, 1e-6);
	CHECK(y[4] == 0 && y[5] == 0 && y[10] == 0 && y[11] == 0);
	/* a constant row: (x - mean) = 0, only the bias stays */
	CHECK_NEAR(y[6], 0, 1e-6);
	CHECK_NEAR(y[8], 1, 1e-6);
	CHECK_NEAR(y[9], -1, 1e-6);
	CHECK(cq_norm_has_bias(CQ_NORM_LAYER));
}

/* RMSNorm of the same row: mean(x^2) = 12.5, no centring, no bias. */
TEST(norm_rms_hand_worked)
{
	float		x[8] = {1, 2, 3, 6, -2, -2, 2, 2},
				w[4] = {1, 2, 1, 0.5f},
				y[8];
	cq_norm		n = {w, NULL, 4, CQ_NORM_RMS, 1e-5f};
	double		r = 1.0 / sqrt(12.5 + 1e-5);

	cq_norm_forward(&n, x, y, 2, 4);
	CHECK_NEAR(y[0], r, 1e-6);
	CHECK_NEAR(y[1], 4 * r, 1e-6);
	CHECK_NEAR(y[2], 3 * r, 1e-6);
	CHECK_NEAR(y[3], 3 * r, 1e-6);
	/* a row of mean 0 keeps its sign pattern: x / 2 * w */
	CHECK_NEAR(y[4], -1 / sqrt(1 + 2.5e-6), 1e-6);
	CHECK_NEAR(y[5], -2 / sqrt(1 + 2.5e-6), 1e-6);
	CHECK_NEAR(y[7], 0.5 / sqrt(1 + 2.5e-6), 1e-6);
	CHECK(!cq_norm_has_bias(CQ_NORM_RMS));
}

/* Random rows, gain and bias (bias only where the kind has one). */
static void
fill(float *x, float *w, float *b, cq_norm_kind kind, uint64_t seed)
{
	cq_philox_key key = cq_philox_key_from_seed(seed);

	cq_philox_uniform(key, 0, 0, 0, 0, ROWS * D, x);
	cq_philox_uniform(key, 1, 0, 0, 0, D, w);
	cq_philox_uniform(key, 2, 0, 0, 0, D, b);
	for (int i = 0; i < ROWS * D; i++)
		x[i] = 4.0f * x[i] - 1.5f;	/* a mean away from 0 */
	for (int i = 0; i < D; i++)
	{
		w[i] += 0.5f;
		b[i] = cq_norm_has_bias(kind) ? b[i] - 0.5f : 0.0f;
	}
}

/* sum_ij c_ij N(x)_ij in double, through the training forward */
static double
weighted(const cq_norm *n, const float *x, const float *c)
{
	float		y[ROWS * D],
				mean[ROWS],
				rstd[ROWS];
	cq_norm_stats st = {mean, rstd};
	double		s = 0.0;

	cq_norm_forward_keep(n, x, y, ROWS, &st);
	for (int i = 0; i < ROWS * D; i++)
		s += (double) c[i] * y[i];
	return s;
}

static void
check_kind(cq_norm_kind kind, const char *label)
{
	float		x[ROWS * D],
				w[D],
				b[D],
				y[ROWS * D],
				yk[ROWS * D],
				mean[ROWS],
				rstd[ROWS],
				c[ROWS * D],
				dx[ROWS * D] = {0},
				gw[D] = {0},
				gb[D] = {0};
	cq_norm		n = {w, cq_norm_has_bias(kind) ? b : NULL, D, kind, 1e-3f},
				g = {gw, cq_norm_has_bias(kind) ? gb : NULL, D, kind, 1e-3f};
	cq_norm_stats st = {mean, rstd};
	double		worst = 0.0;

	fill(x, w, b, kind, 17 + kind);
	cq_norm_forward(&n, x, y, ROWS, D);
	cq_norm_forward_keep(&n, x, yk, ROWS, &st);
	for (int i = 0; i < ROWS * D; i++)
		CHECK_NEAR(y[i], yk[i], 2e-6);
	/* backward of L = sum c y against central differences of L */
	cq_philox_uniform(cq_philox_key_from_seed(3), 0, 0, 0, 0, ROWS * D, c);
	cq_norm_backward(&n, &g, x, &st, c, dx, ROWS);
	for (int i = 0; i < ROWS * D + D; i++)
	{
		float	   *p = i < ROWS * D ? &x[i] : &w[i - ROWS * D],
					keep = *p;
		double		h = 1e-2,
					an = i < ROWS * D ? dx[i] : gw[i - ROWS * D],
					fd;

		*p = keep + (float) h;
		fd = weighted(&n, x, c);
		*p = keep - (float) h;
		fd = (fd - weighted(&n, x, c)) / (2 * h);
		*p = keep;
		worst = fmax(worst, fabs(fd - an));
		CHECK_NEAR(an, fd, 2e-3);
	}
	if (n.b)
	{
		double		sum = 0.0;

		/* d/db_j = sum over rows of c_rj */
		for (int j = 0; j < D; j++, sum = 0.0)
		{
			for (int r = 0; r < ROWS; r++)
				sum += c[r * D + j];
			CHECK_NEAR(gb[j], sum, 1e-5);
		}
	}
	printf("  norm %-6s backward against central differences: worst |err| %.1e\n", label, worst);
}

TEST(norm_forward_keep_and_backward)
{
	check_kind(CQ_NORM_LAYER, "layer");
	check_kind(CQ_NORM_RMS, "rms");
}

/* w NULL: the identity forward (copy or in place) and backward. */
TEST(norm_absent_is_identity)
{
	float		x[ROWS * D],
				w[D],
				b[D],
				y[ROWS * D] = {0},
				dx[ROWS * D],
				mean[ROWS],
				rstd[ROWS];
	cq_norm		n = {NULL, NULL, D, CQ_NORM_LAYER, 1e-5f};
	cq_norm_stats st = {mean, rstd};

	fill(x, w, b, CQ_NORM_LAYER, 5);
	cq_norm_forward(&n, x, y, ROWS, D);
	CHECK(memcmp(x, y, sizeof(x)) == 0);
	memset(y, 0, sizeof(y));
	cq_norm_forward_keep(&n, x, y, ROWS, &st);
	CHECK(memcmp(x, y, sizeof(x)) == 0);
	cq_norm_forward(&n, y, y, ROWS, D);
	CHECK(memcmp(x, y, sizeof(x)) == 0);
	for (int i = 0; i < ROWS * D; i++)
		dx[i] = 1.0f;
	cq_norm_backward(&n, &n, x, &st, x, dx, ROWS);
	for (int i = 0; i < ROWS * D; i++)
		CHECK(dx[i] == 1.0f + x[i]);
}
