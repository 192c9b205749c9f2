/* The co-occurrence table, its iterator, and the link index. */
#include "unit.h"

#include "align/link_index.h"

#include <stdlib.h>

/*
 * Pairs "0 1 | 2 0" and "1 1 | 1": row 0 holds {0, 2}, row 1 {0, 1, 2},
 * the NULL row (2) every target {0, 1, 2}.
 */
TEST(ttable_rows_are_sorted_cooccurrences)
{
	const int32_t src[] = {0, 1, 1, 1}, tgt[] = {2, 0, 1};
	const int64_t so[] = {0, 2, 4}, to[] = {0, 2, 3};
	cq_bitext	b = {2, src, so, tgt, to, 2, 3};
	cq_bitext_view v = cq_bitext_direction(&b, false);
	cq_ttable	t;
	cq_ttable_iter it;
	int32_t		e,
				f;
	double		p;
	int			n = 0;

	CHECK_INT_EQ(cq_ttable_build(&t, &v, NULL, NULL, NULL), 0);
	CHECK_INT_EQ(t.nnz, 8);
	CHECK(t.row_off[1] == 2 && t.row_off[2] == 5 && t.row_off[3] == 8);
	CHECK(t.col[0] == 0 && t.col[1] == 2 && t.col[2] == 0 && t.col[4] == 2);
	CHECK_INT_EQ(cq_ttable_find(&t, 0, 1), -1);
	CHECK_INT_EQ(cq_ttable_find(&t, 1, 1), 3);
	CHECK_INT_EQ(cq_ttable_find(&t, 2, 0), 5);
	CHECK_INT_EQ(cq_ttable_find(&t, 3, 0), -1);
	CHECK_NEAR(cq_ttable_prob_or(&t, 0, 1, 0.5), 0.5, 0);
	for (int64_t q = 0; q < t.nnz; q++)
		t.prob[q] = q / 10.0;
	cq_ttable_iter_init(&it, &t, 0.35);
	while (cq_ttable_iter_next(&it, &e, &f, &p))
	{
		CHECK(p >= 0.35);
		if (n == 0)
			CHECK(e == 1 && f == 2 && p == 0.4);
		if (p == 0.5)
			CHECK(e == -1 && f == 0);
		n++;
	}
	CHECK_INT_EQ(n, 4);
	cq_ttable_free(&t);
}

/* The index built with the table equals searching every pair. */
TEST(link_index_matches_search)
{
	enum {NP = 300};
	int32_t    *src = malloc(NP * 12 * sizeof(int32_t)),
			   *tgt = malloc(NP * 12 * sizeof(int32_t));
	int64_t		so[NP + 1] = {0},
				to[NP + 1] = {0};
	uint32_t	x = 3;
	cq_bitext	b;
	int			bad = 0;

	for (int k = 0; k < NP; k++)
	{
		int			n = k % 11,
					m = (k * 7) % 12;

		for (int i = 0; i < n; i++)
			src[so[k] + i] = (x = x * 1103515245u + 12345u) >> 25;
		for (int j = 0; j < m; j++)
			tgt[to[k] + j] = (x = x * 1103515245u + 12345u) >> 26;
		so[k + 1] = so[k] + n;
		to[k + 1] = to[k] + m;
	}
	b = (cq_bitext) {NP, src, so, tgt, to, 128, 64};
	for (int rev = 0; rev < 2; rev++)
	{
		cq_bitext_view v = cq_bitext_direction(&b, rev);
		cq_ttable	t;
		cq_link_index li,
					none;
		uint32_t   *scratch = malloc((cq_link_index_max_pair(&v) + 1) * sizeof(uint32_t));

		CHECK_INT_EQ(cq_ttable_build_indexed(&t, &li, &v, 1 << 20, NULL), 0);
		CHECK(li.idx != NULL);
		memset(&none, 0, sizeof(none));
		for (int k = 0; k < NP; k++)
		{
			int64_t		len = li.off[k + 1] - li.off[k];
			const uint32_t *s = cq_link_index_pair(&none, &t, &v, k, scratch);

			bad += memcmp(li.idx + li.off[k], s, len * sizeof(uint32_t)) != 0;
		}
		cq_link_index_free(&li);
		cq_ttable_free(&t);
		/* a budget too small for the index leaves it empty */
		CHECK_INT_EQ(cq_ttable_build_indexed(&t, &li, &v, 16, NULL), 0);
		CHECK(li.idx == NULL);
		cq_ttable_free(&t);
		free(scratch);
	}
	CHECK_INT_EQ(bad, 0);
	free(src);
	free(tgt);
}
