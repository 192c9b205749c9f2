#include "unit.h"
#include "common/rng.h"

/* Known-answer vectors of Philox4x32-10 from Random123's kat_vectors. */
TEST(philox_known_answers)
{
	cq_philox_ctr r;

	r = cq_philox4x32((cq_philox_ctr) {{0, 0, 0, 0}}, (cq_philox_key) {{0, 0}});
	CHECK_INT_EQ(r.c[0], 0x6627e8d5u);
	CHECK_INT_EQ(r.c[1], 0xe169c58du);
	CHECK_INT_EQ(r.c[2], 0xbc57ac4cu);
	CHECK_INT_EQ(r.c[3], 0x9b00dbd8u);
	r = cq_philox4x32((cq_philox_ctr) {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
					  (cq_philox_key) {{0xffffffffu, 0xffffffffu}});
	CHECK_INT_EQ(r.c[0], 0x408f276du);
	CHECK_INT_EQ(r.c[1], 0x41c83b0eu);
	CHECK_INT_EQ(r.c[2], 0xa20bc7c6u);
	CHECK_INT_EQ(r.c[3], 0x6d5451fdu);
	r = cq_philox4x32((cq_philox_ctr) {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
					  (cq_philox_key) {{0xa4093822u, 0x299f31d0u}});
	CHECK_INT_EQ(r.c[0], 0xd16cfe09u);
	CHECK_INT_EQ(r.c[1], 0x94fdccebu);
	CHECK_INT_EQ(r.c[2], 0x5001e420u);
	CHECK_INT_EQ(r.c[3], 0x24126ea1u);
}

/* A draw depends only on its counter: any sub-range reproduces the stream. */
TEST(philox_uniform_is_counter_based)
{
	cq_philox_key key = cq_philox_key_from_seed(42);
	float		all[103],
				part[50];
	double		mean = 0.0;

	cq_philox_uniform(key, 7, 8, 9, 0, 103, all);
	cq_philox_uniform(key, 7, 8, 9, 37, 50, part);
	for (int i = 0; i < 50; i++)
		CHECK(part[i] == all[37 + i]);
	for (int i = 0; i < 103; i++)
	{
		CHECK(all[i] >= 0.0f && all[i] < 1.0f);
		mean += all[i] / 103;
	}
	CHECK_NEAR(mean, 0.5, 0.1);
	cq_philox_uniform(cq_philox_key_from_seed(43), 7, 8, 9, 37, 50, part);
	CHECK(part[0] != all[37] || part[1] != all[38]);
}

/* Moments of a long stream: mean 1/2, variance 1/12. */
TEST(philox_uniform_moments)
{
	static float u[1 << 16];
	double		m = 0.0,
				v = 0.0;

	cq_philox_uniform(cq_philox_key_from_seed(1), 0, 0, 0, 0, 1 << 16, u);
	for (int i = 0; i < (1 << 16); i++)
		m += u[i];
	m /= 1 << 16;
	for (int i = 0; i < (1 << 16); i++)
		v += (u[i] - m) * (u[i] - m);
	v /= 1 << 16;
	CHECK_NEAR(m, 0.5, 0.005);
	CHECK_NEAR(v, 1.0 / 12, 0.002);
}
