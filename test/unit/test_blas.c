#include "unit.h"
#include "nn/ops/blas.h"

/* A hand-worked product, in every transpose combination, through both paths. */
TEST(sgemm_hand_worked)
{
	const float a[6] = {1, 2, 3, 4, 5, 6};		/* 2x3 */
	const float at[6] = {1, 4, 2, 5, 3, 6};		/* its transpose, 3x2 */
	const float b[6] = {7, 8, 9, 10, 11, 12};	/* 3x2 */
	const float bt[6] = {7, 9, 11, 8, 10, 12};	/* its transpose, 2x3 */
	const float want[4] = {58, 64, 139, 154};

	for (int path = 0; path < 2; path++)
		for (int ta = 0; ta < 2; ta++)
			for (int tb = 0; tb < 2; tb++)
			{
				float		c[4] = {1, 1, 1, 1};

				(path ? cq_sgemm : cq_sgemm_reference) (ta, tb, 2, 2, 3, 1.0f,
														ta ? at : a, ta ? 2 : 3,
														tb ? bt : b, tb ? 3 : 2,
														0.0f, c, 2);
				for (int i = 0; i < 4; i++)
					CHECK_NEAR(c[i], want[i], 1e-5);
			}
}

TEST(sgemm_accumulates_with_beta)
{
	const float a[2] = {1, 2};
	const float b[2] = {3, 4};
	float		c[1] = {10};

	cq_sgemm(false, false, 1, 1, 2, 2.0f, a, 2, b, 1, 0.5f, c, 1);
	CHECK_NEAR(c[0], 2.0 * 11 + 5, 1e-5);
	CHECK(cq_blas_bound());
}
