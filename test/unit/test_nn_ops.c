#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu.h"
#include "common/rng.h"
#include "nn/ops/dropout_kernel.h"
#include "nn/ops/loss.h"
#include "nn/ops/ops.h"

TEST(gelu_relu_values)
{
	/* Phi(1) = .8413447461, Phi(-2) = .0227501319 */
	float		x[5] = {1, -2, 0, 3, -0.5f};
	float		r[5] = {1, -2, 0, 3, -0.5f};

	cq_gelu_erf(x, 5);
	CHECK_NEAR(x[0], 0.8413447461, 1e-6);
	CHECK_NEAR(x[1], -2 * 0.0227501319, 1e-6);
	CHECK_NEAR(x[2], 0, 0);
	CHECK_NEAR(x[3], 3 * 0.9986501020, 1e-6);
	CHECK_NEAR(x[4], -0.5 * 0.3085375387, 1e-6);
	cq_relu(r, 5);
	CHECK(r[0] == 1 && r[1] == 0 && r[2] == 0 && r[3] == 3 && r[4] == 0);
}

TEST(fast_exp_accuracy)
{
	double		worst = 0.0;

	for (float x = -87.0f; x <= 0.0f; x += 0.00731f)
	{
		double		rel = fabs(cq_fast_expf(x) - exp(x)) / exp(x);

		worst = rel > worst ? rel : worst;
	}
	CHECK(worst < 3e-7);
	CHECK(cq_fast_expf(0.0f) == 1.0f);
	CHECK(cq_fast_expf(-1000.0f) >= 0.0f && cq_fast_expf(-1000.0f) < 1e-37f);
}

/* Outside its domain: defined results (the sanitizer run checks no UB). */
TEST(fast_exp_non_finite)
{
	CHECK(isnan(cq_fast_expf(NAN)));
	CHECK(isnan(cq_fast_expf(-NAN)));
	CHECK(cq_fast_expf(-INFINITY) >= 0.0f && cq_fast_expf(-INFINITY) < 1e-37f);
	CHECK(isfinite(cq_fast_expf(INFINITY)) && cq_fast_expf(INFINITY) > 1e38f);
	CHECK(cq_fast_expf(88.0f) > 1e38f && cq_fast_expf(1e30f) == cq_fast_expf(88.0f));
}

TEST(softmax_rows_causal)
{
	/* [[0, ln 3], [ln 2, 0]] plain; causal keeps row 0's first entry only */
	float		a[4] = {0, logf(3), logf(2), 0};
	float		c[6] = {5, 7, 9, 1, 1, 100};

	cq_softmax_rows(a, 2, 2, 2, false);
	CHECK_NEAR(a[0], 0.25, 1e-6);
	CHECK_NEAR(a[1], 0.75, 1e-6);
	CHECK_NEAR(a[2], 2.0 / 3, 1e-6);
	CHECK_NEAR(a[3], 1.0 / 3, 1e-6);
	cq_softmax_rows(c, 2, 3, 3, true);
	CHECK(c[0] == 1.0f && c[1] == 0.0f && c[2] == 0.0f);
	CHECK_NEAR(c[3], 0.5, 1e-6);
	CHECK_NEAR(c[4], 0.5, 1e-6);
	CHECK(c[5] == 0.0f);
}

/* The fused statistics against a naive double loop, on rows of many widths. */
/* Whether two row statistics have the same bits (the floats compared as bytes). */
static bool
same_stats(cq_row_stats a, cq_row_stats b)
{
	return memcmp(&a.logp_gold, &b.logp_gold, sizeof(float)) == 0 &&
		memcmp(&a.p_max, &b.p_max, sizeof(float)) == 0 &&
		memcmp(&a.entropy, &b.entropy, sizeof(float)) == 0 && a.argmax == b.argmax;
}

/*
 * The AVX2 row statistics give the generic bits (the forward's scores may
 * not depend on the CPU's variant): rows of every length up to 300 and V =
 * 8000, on logits spread as a model's, with ties of the max (the argmax is
 * the first), values below exp's clamp, -inf, signed zeros, all equal, and
 * a NaN first element (the max is then NaN and the argmax n - 1).
 */
TEST(logit_row_stats_avx2_has_the_generic_bits)
{
	unsigned	s = 11;
	long		rows = 0,
				bad = 0;

	if (!cq_logit_row_stats_avx2_runs())
	{
		printf("     row statistics: avx2 skipped, this CPU cannot execute it\n");
		return;
	}
	for (int kind = 0; kind < 6; kind++)
		for (int n = 1; n <= 8000; n = n < 300 ? n + 1 : n + 7700)
		{
			float	   *l = malloc(sizeof(float) * n);

			for (int i = 0; i < n; i++)
			{
				s = s * 1103515245u + 12345u;
				l[i] = 30.0f * (float) ((s >> 8) & 0xFFFF) / 65536.0f - 20.0f;
				if (kind == 1)
					l[i] = (float) ((s >> 12) % 5);	/* many ties of the max */
				else if (kind == 2 && i % 3 == 0)
					l[i] = -200.0f;		/* below the clamp after the shift */
				else if (kind == 3)
					l[i] = i % 7 == 0 ? -INFINITY : i % 2 ? 0.0f : -0.0f;
				else if (kind == 4)
					l[i] = 1.5f;
			}
			if (kind == 5)
				l[0] = NAN;
			for (int g = 0; g < n; g += n / 3 + 1)
			{
				rows++;
				bad += !same_stats(cq_logit_row_stats_avx2(l, n, g),
								   cq_logit_row_stats_generic(l, n, g));
			}
			free(l);
		}
	if (bad)
		unit_fail(__FILE__, __LINE__, "%ld of %ld rows: the AVX2 statistics differ from the generic bits",
				  bad, rows);
}

TEST(logit_row_stats_vs_naive)
{
	unsigned	s = 5;

	for (int n = 1; n < 300; n += 7)
	{
		float	   *l = malloc(sizeof(float) * n);
		double		m = -INFINITY,
					z = 0,
					h = 0;
		int			arg = 0,
					gold = n / 3;
		cq_row_stats st;

		for (int i = 0; i < n; i++)
		{
			s = s * 1103515245u + 12345u;
			l[i] = 12.0f * (float) ((s >> 8) & 0xFFFF) / 65536.0f - 6.0f;
			if (l[i] > m)
			{
				m = l[i];
				arg = i;
			}
		}
		for (int i = 0; i < n; i++)
			z += exp(l[i] - m);
		for (int i = 0; i < n; i++)
		{
			double		lp = l[i] - m - log(z);

			h -= exp(lp) * lp;
		}
		st = cq_logit_row_stats(l, n, gold);
		CHECK_NEAR(st.logp_gold, l[gold] - m - log(z), 2e-6);
		CHECK_NEAR(st.p_max, 1.0 / z, 1e-6);
		CHECK_NEAR(st.entropy, h, 2e-6);
		CHECK_INT_EQ(st.argmax, arg);
		free(l);
	}
}

/* Attention on a hand-sized case against a naive triple loop. */
TEST(attention_vs_naive_with_causal_mask)
{
	enum
	{
		LQ = 3, LK = 3, H = 2, DH = 2, D = H * DH
	};
	float		q[LQ * D],
				k[LK * D],
				v[LK * D],
				out[LQ * D],
				scores[LQ * LK];
	unsigned	s = 11;

	for (int i = 0; i < LQ * D; i++)
	{
		s = s * 1103515245u + 12345u;
		q[i] = (float) ((s >> 8) & 0xFF) / 64.0f - 2.0f;
		k[i] = (float) ((s >> 16) & 0xFF) / 64.0f - 2.0f;
		v[i] = (float) ((s >> 4) & 0xFF) / 32.0f - 4.0f;
	}
	for (int causal = 0; causal < 2; causal++)
	{
		cq_attention_args a = {q, k, v, D, D, D, out, D, LQ, LK, H, DH, causal, scores};

		cq_attention(&a);
		for (int h = 0; h < H; h++)
			for (int i = 0; i < LQ; i++)
			{
				double		w[LK],
							z = 0;
				int			nk = causal ? i + 1 : LK;

				for (int j = 0; j < nk; j++)
				{
					double		dot = 0;

					for (int c = 0; c < DH; c++)
						dot += (double) q[i * D + h * DH + c] * k[j * D + h * DH + c];
					w[j] = exp(dot / sqrt(DH));
					z += w[j];
				}
				for (int c = 0; c < DH; c++)
				{
					double		o = 0;

					for (int j = 0; j < nk; j++)
						o += w[j] / z * v[j * D + h * DH + c];
					CHECK_NEAR(out[i * D + h * DH + c], o, 1e-5);
				}
			}
	}
}

/* Inverted dropout: about p dropped, the rest scaled, keyed by coordinates. */
/*
 * Batch and step invariance of attention (ops.h, attention.c): a causal row i
 * of a whole sentence equals, bitwise, the same query over keys 0..i alone
 * (an incremental decoder's step), and a query computed alone equals it
 * computed with the other queries.
 */
TEST(attention_rows_equal_incremental_steps)
{
	enum
	{
		L = 37, H = 4, DH = 24, D = H * DH
	};
	float	   *q = malloc(sizeof(float) * L * D),
			   *k = malloc(sizeof(float) * L * D),
			   *v = malloc(sizeof(float) * L * D),
			   *out = malloc(sizeof(float) * L * D),
			   *scores = malloc(sizeof(float) * L * L),
				one[D];
	unsigned	s = 5;

	for (int i = 0; i < L * D; i++)
	{
		s = s * 1103515245u + 12345u;
		q[i] = (float) ((s >> 8) & 0xFFFF) / 16384.0f - 2.0f;
		k[i] = (float) ((s >> 12) & 0xFFFF) / 16384.0f - 2.0f;
		v[i] = (float) ((s >> 4) & 0xFFFF) / 8192.0f - 4.0f;
	}
	for (int causal = 0; causal < 2; causal++)
	{
		cq_attention_args all = {q, k, v, D, D, D, out, D, L, L, H, DH, causal, scores};

		cq_attention(&all);
		for (int i = 0; i < L; i++)
		{
			cq_attention_args step = {q + i * D, k, v, D, D, D, one, D, 1,
			causal ? i + 1 : L, H, DH, false, scores};

			cq_attention(&step);
			if (memcmp(one, out + i * D, sizeof(one)) != 0)
				unit_fail(__FILE__, __LINE__, "%s row %d differs from its query alone",
						  causal ? "causal" : "full", i);
		}
	}
	free(q), free(k), free(v), free(out), free(scores);
}

TEST(dropout_rate_scale_and_keys)
{
	static float x[20000],
				y[20000];
	cq_dropout_stream ds = {true, 77, 3, 1234};
	int			zeros = 0;

	for (int i = 0; i < 20000; i++)
		x[i] = y[i] = 1.0f;
	cq_dropout_apply(&ds, 0.3f, cq_dropout_site(CQ_DROP_ENC_FFN_ACT, 1, 0), 5, x, 20000);
	for (int i = 0; i < 20000; i++)
	{
		zeros += x[i] == 0.0f;
		CHECK(x[i] == 0.0f || fabs(x[i] - 1.0 / 0.7) < 1e-6);
	}
	CHECK_NEAR(zeros / 20000.0, 0.3, 0.015);
	/* the same coordinates give the same mask; another row, another mask */
	cq_dropout_apply(&ds, 0.3f, cq_dropout_site(CQ_DROP_ENC_FFN_ACT, 1, 0), 5, y, 20000);
	CHECK(memcmp(x, y, sizeof(x)) == 0);
	for (int i = 0; i < 20000; i++)
		y[i] = 1.0f;
	cq_dropout_apply(&ds, 0.3f, cq_dropout_site(CQ_DROP_ENC_FFN_ACT, 1, 0), 6, y, 20000);
	CHECK(memcmp(x, y, sizeof(x)) != 0);
	/* off, or p = 0: untouched */
	for (int i = 0; i < 20000; i++)
		y[i] = 1.0f;
	ds.on = false;
	cq_dropout_apply(&ds, 0.3f, 1, 5, y, 20000);
	ds.on = true;
	cq_dropout_apply(&ds, 0.0f, 1, 5, y, 20000);
	for (int i = 0; i < 20000; i++)
		CHECK(y[i] == 1.0f);
}

/*
 * The vectorised masks = the scalar Philox words of their documented
 * counters, whichever kernel runs: lengths around the AVX2 kernel's 64 and
 * the portable one's 32, counters past 2^16 blocks, several rows.
 */
TEST(dropout_mask_matches_scalar_philox)
{
	cq_dropout_stream ds = {true, 5, 2, 99};
	cq_philox_key key = cq_philox_key_from_seed(cq_mix64(5 ^ cq_mix64(99)));
	uint32_t	site = cq_dropout_site(CQ_DROP_DEC_CROSS_ATTN, 3, 1);
	static const int lens[] = {1, 3, 31, 32, 63, 64, 65, 70, 129, 1000, 262147};
	static float x[262147];

	for (int li = 0; li < (int) (sizeof(lens) / sizeof(lens[0])); li++)
		for (uint32_t row = 16; row < 19; row++)
		{
			int			n = lens[li],
						bad = 0;

			for (int j = 0; j < n; j++)
				x[j] = 2.0f + (float) (j % 7);
			cq_dropout_apply(&ds, 0.5f, site, row, x, n);
			for (int j = 0; j < n; j++)
			{
				cq_philox_ctr r = cq_philox4x32((cq_philox_ctr) {{(uint32_t) j / 4, row, site, 2}}, key);
				bool		drop = cq_u32_to_unit(r.c[j % 4]) < 0.5f;

				bad += x[j] != (drop ? 0.0f : (2.0f + (float) (j % 7)) * 2.0f);
			}
			CHECK(bad == 0);
		}
}

/* The AVX2 kernel and the portable one give the same bits (where it runs),
 * on every length up to 200 (the masked last vectors) and a long row. */
TEST(dropout_kernels_agree)
{
	cq_dropout_job d = {cq_philox_key_from_seed(42), 0.1f, 1.0f / 0.9f, 7, 12345, 3};
	bool		avx2 = (cq_cpu_detect() & CQ_CPU_BIT(CQ_CPU_AVX2)) != 0;
	static float a[4096 + 64],
				b[4096 + 64];
	int			bad = 0;

	for (int n = 1; n <= 4096 + 37; n = n < 200 ? n + 1 : 4096 + 37 + (n == 4096 + 37))
	{
		int			done;

		for (int j = 0; j < 4096 + 64; j++)
			a[j] = b[j] = (float) j * 0.25f - 100.0f;
		d.row = (uint32_t) n;
		done = avx2 ? cq_dropout_avx2(&d, a, n) : 0;
		cq_dropout_portable(&d, a, done, n);
		cq_dropout_portable(&d, b, 0, n);
		bad += memcmp(a, b, sizeof(a)) != 0;	/* past n too: nothing written there */
		bad += avx2 && done != n;
	}
	CHECK(bad == 0);
}

/* The label-smoothed cross-entropy as scalar loops (8 lane sums, then the
 * tail first in double, as loss.c documents): the vectorised row must give
 * these bits. */
static double
ls_xent_scalar(float *l, int v, int gold, float eps, double *nll)
{
	float		m = l[0],
				gold_l = l[gold],
				off = eps / v,
				zl[8] = {0},
				sl[8] = {0},
				inv;
	double		z = 0.0,
				sum_l = 0.0,
				lse;
	int			i = 0;

	for (int j = 1; j < v; j++)
		m = l[j] > m ? l[j] : m;
	for (; i + 8 <= v; i += 8)
		for (int k = 0; k < 8; k++)
		{
			float		e = cq_fast_expf(l[i + k] - m);

			zl[k] += e;
			sl[k] += l[i + k];
			l[i + k] = e;
		}
	for (; i < v; i++)
	{
		float		e = cq_fast_expf(l[i] - m);

		z += e;
		sum_l += l[i];
		l[i] = e;
	}
	for (int k = 0; k < 8; k++)
	{
		z += zl[k];
		sum_l += sl[k];
	}
	lse = m + log(z);
	*nll = lse - gold_l;
	inv = (float) (1.0 / z);
	for (int j = 0; j < v; j++)
		l[j] = l[j] * inv - off;
	l[gold] -= 1.0f - eps;
	return (1.0 - eps) * *nll + eps * (lse - sum_l / v);
}

TEST(ls_xent_row_matches_scalar_bits)
{
	static float a[8003],
				b[8003];
	static const int lens[] = {1, 2, 7, 8, 9, 15, 16, 17, 40, 8000, 8003};
	uint64_t	s = 12345;
	int			bad = 0;

	for (int li = 0; li < (int) (sizeof(lens) / sizeof(lens[0])); li++)
		for (int spread = 0; spread < 3; spread++)
		{
			int			v = lens[li];
			double		nll_a,
						nll_b,
						la,
						lb;

			for (int j = 0; j < v; j++)
			{
				s = s * 6364136223846793005ULL + 1442695040888963407ULL;
				/* spread 2: logits 200 apart, so exp's clamp at -87 is hit */
				a[j] = b[j] = ((float) (s >> 40) / 16777216.0f - 0.5f) * (spread == 0 ? 4.0f : spread == 1 ? 40.0f : 400.0f);
			}
			la = cq_ls_xent_row(a, v, v / 3, 0.1f, &nll_a);
			lb = ls_xent_scalar(b, v, v / 3, 0.1f, &nll_b);
			bad += memcmp(a, b, sizeof(float) * v) != 0 || la != lb || nll_a != nll_b;
		}
	CHECK(bad == 0);
}
