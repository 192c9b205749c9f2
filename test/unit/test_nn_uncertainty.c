#include "unit.h"
#include "nn/infer/uncertainty.h"

/* Two passes over three positions; expected values worked by hand. */
static const float P[6] = {0.5f, 0.25f, 1.0f, 0.8f, 0.4f, 0.5f};
static const float H[6] = {1.0f, 2.0f, 0.5f, 1.5f, 1.0f, 0.25f};

static double
measure(const char *name)
{
	cq_uncertainty u;
	cq_error err;
	double		v = NAN;

	CHECK_INT_EQ(cq_uncertainty_from_name(name, &u, &err), CQ_OK);
	CHECK_STR_EQ(cq_uncertainty_name(u), name);
	CHECK_INT_EQ(cq_uncertainty_measure(u, P, H, 2, 3, &v, &err), CQ_OK);
	return v;
}

TEST(uncertainty_hand_worked)
{
	/* pretp: 1 - .125 = .875 and 1 - .16 = .84; per-pass then averaged (Eq. 12) */
	CHECK_NEAR(measure("pretp"), 0.8575, 1e-6);
	/* averaging probabilities first would give 1 - .65 * .325 * .75 = .8415625 */
	CHECK(fabs(measure("pretp") - 0.8415625) > 0.01);
	CHECK_NEAR(measure("exptp"), 0.425, 1e-6);
	/* var: .4375 - (7/12)^2 = .0972222 and .35 - (1.7/3)^2 = .0288889 */
	CHECK_NEAR(measure("vartp"), (0.0972222 + 0.0288889) / 2, 1e-6);
	/* comev: .0972222 / .5833333 = 1/6 and .0288889 / .5666667 = .0509804 */
	CHECK_NEAR(measure("comev"), (1.0 / 6 + 0.0509804) / 2, 1e-6);
	CHECK_NEAR(measure("entsent"), (3.5 / 3 + 2.75 / 3) / 2, 1e-6);
	CHECK_NEAR(measure("enteos"), 0.375, 1e-6);
	/* 1 - .125^(1/3) = .5 and 1 - .16^(1/3) = .4571165 */
	CHECK_NEAR(measure("exptp_geo"), (0.5 + 0.4571165) / 2, 1e-6);
	/* var of ln p: 2 (ln 2)^2 / 3 = .3203022 and .0834610 */
	CHECK_NEAR(measure("vartp_log"), (0.3203022 + 0.0834610) / 2, 2e-6);
	/* exp(.3203022 / -ln 2) = .6299605 and exp(.0834610 / -.6108605) = .8722963 */
	CHECK_NEAR(measure("comev_log"), (0.6299605 + 0.8722963) / 2, 2e-6);
}

/* Each measure against its formula written out directly, random tables. */
TEST(uncertainty_direct_formulas)
{
	enum
	{
		K = 5, T = 7
	};
	float		p[K * T],
				h[K * T];
	unsigned	s = 99;
	double		want[CQ_UNC_COUNT] = {0};

	for (int i = 0; i < K * T; i++)
	{
		s = s * 1103515245u + 12345u;
		p[i] = 0.05f + 0.95f * (float) ((s >> 8) & 0xFFFF) / 65536.0f;
		h[i] = 3.0f * (float) ((s >> 4) & 0xFF) / 256.0f;
	}
	for (int k = 0; k < K; k++)
	{
		const float *pk = p + k * T,
				   *hk = h + k * T;
		double		prod = 1,
					sp = 0,
					sp2 = 0,
					sl = 0,
					sl2 = 0,
					sh = 0;

		for (int t = 0; t < T; t++)
		{
			prod *= pk[t];
			sp += pk[t];
			sp2 += (double) pk[t] * pk[t];
			sl += log(pk[t]);
			sl2 += log(pk[t]) * log(pk[t]);
			sh += hk[t];
		}
		want[CQ_UNC_PRETP] += (1 - prod) / K;
		want[CQ_UNC_EXPTP] += (1 - sp / T) / K;
		want[CQ_UNC_VARTP] += (sp2 / T - (sp / T) * (sp / T)) / K;
		want[CQ_UNC_COMEV] += (sp2 / T - (sp / T) * (sp / T)) / (sp / T) / K;
		want[CQ_UNC_ENTSENT] += sh / T / K;
		want[CQ_UNC_ENTEOS] += hk[T - 1] / (double) K;
		want[CQ_UNC_EXPTP_GEO] += (1 - pow(prod, 1.0 / T)) / K;
		want[CQ_UNC_VARTP_LOG] += (sl2 / T - (sl / T) * (sl / T)) / K;
		want[CQ_UNC_COMEV_LOG] += exp((sl2 / T - (sl / T) * (sl / T)) / (sl / T)) / K;
	}
	for (int u = 0; u < CQ_UNC_COUNT; u++)
	{
		double		got = NAN;
		cq_error err;

		CHECK_INT_EQ(cq_uncertainty_measure(u, p, h, K, T, &got, &err), CQ_OK);
		if (!(fabs(got - want[u]) <= 1e-9 * (1 + fabs(want[u]))))
			unit_fail(__FILE__, __LINE__, "%s: %.12g, direct %.12g",
					  cq_uncertainty_name(u), got, want[u]);
	}
}

TEST(uncertainty_errors_and_edges)
{
	cq_uncertainty u;
	cq_error err;
	double		v;
	const float one[2] = {1.0f, 1.0f},
				bad[2] = {0.5f, 0.0f};

	CHECK_INT_EQ(cq_uncertainty_from_name("entropy", &u, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "valid: pretp, exptp, vartp, comev, entsent, enteos, "
				 "exptp_geo, vartp_log, comev_log") != NULL);
	CHECK_INT_EQ(cq_uncertainty_from_name(NULL, &u, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_uncertainty_measure(CQ_UNC_PRETP, one, NULL, 0, 2, &v, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_uncertainty_measure(CQ_UNC_PRETP, one, NULL, 1, 0, &v, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_uncertainty_measure(CQ_UNC_ENTSENT, one, NULL, 1, 2, &v, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_uncertainty_measure(CQ_UNC_EXPTP, bad, NULL, 1, 2, &v, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_uncertainty_measure(CQ_UNC_COUNT, one, one, 1, 2, &v, &err), CQ_EINVAL);
	/* a certain model: every measure at its floor */
	for (int m = 0; m < CQ_UNC_COUNT; m++)
		if (m != CQ_UNC_ENTSENT && m != CQ_UNC_ENTEOS)
		{
			CHECK_INT_EQ(cq_uncertainty_measure(m, one, NULL, 1, 2, &v, &err), CQ_OK);
			CHECK_NEAR(v, m == CQ_UNC_COMEV_LOG ? 1.0 : 0.0, 1e-12);
		}
}

/* Pair tables inside [K, Nt] pass arrays equal the same tables copied out. */
TEST(uncertainty_strided_matches_copied)
{
	/* two passes over a batch of 5 positions; the pair is positions 1..3 */
	const float pk[10] = {0.9f, 0.5f, 0.25f, 1.0f, 0.3f, 0.7f, 0.8f, 0.4f, 0.5f, 0.6f};
	const float hk[10] = {0.1f, 1.0f, 2.0f, 0.5f, 3.0f, 0.2f, 1.5f, 1.0f, 0.25f, 0.9f};
	cq_error err;

	for (int u = 0; u < CQ_UNC_COUNT; u++)
	{
		double		a = NAN,
					b = NAN;

		CHECK_INT_EQ(cq_uncertainty_measure_strided(u, pk + 1, hk + 1, 2, 3, 5, &a, &err), CQ_OK);
		CHECK_INT_EQ(cq_uncertainty_measure(u, P, H, 2, 3, &b, &err), CQ_OK);
		CHECK_NEAR(a, b, 1e-12);
	}
	CHECK_INT_EQ(cq_uncertainty_measure_strided(CQ_UNC_PRETP, pk, hk, 2, 3, 2, NULL, &err),
				 CQ_EINVAL);
}
