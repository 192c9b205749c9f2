/* CAV accumulation: hand-worked matrices, l_max, restriction, limits. */
#include "test_cav.h"
#include "unit.h"

#include "common/mem.h"

#include <stdlib.h>

/*
 * Corpus (whitespace tokens):        pair 1: "a b" -> "x y"
 *                                    pair 2: "b"   -> "y x y"
 * Rows (sorted dictionaries, source then target): a=0 b=1 x=2 y=3.
 * concat(pair 1) = a b x y:   x@2 sees a:2 b:1 x:0;   y@3 sees a:3 b:2 x:1 y:0
 * concat(pair 2) = b y x y:   y@1 sees b:1 y:0;       x@2 sees b:2 y:1 x:0
 *                             y@3 sees b:3 y:2 x:1 y:0
 * With l_max = 4 (columns = distances 0..3):
 *   CAV(x), occ 2        CAV(y), occ 3
 *   a: 0 0 1 0           a: 0 0 0 1
 *   b: 0 1 1 0           b: 0 1 1 1
 *   x: 2 0 0 0           x: 0 2 0 0
 *   y: 0 1 0 0           y: 3 0 1 0
 * cos(x, y) = (b1*b1 + b2*b2) / sqrt(8 * 18) = 2 / 12.
 */
static const int64_t want_x[16] = {0, 0, 1, 0, 0, 1, 1, 0, 2, 0, 0, 0, 0, 1, 0, 0};
static const int64_t want_y[16] = {0, 0, 0, 1, 0, 1, 1, 1, 0, 2, 0, 0, 3, 0, 1, 0};

static cav_state *
hand_state(uint32_t l_max, const char *const *targets, size_t n_targets)
{
	size_t		lens[4] = {1, 1, 1, 1};
	cav_options opt = {l_max, targets, lens, n_targets};
	cav_state  *st;
	cq_error	err;

	CHECK_INT_EQ(cav_state_new(&opt, 0, &st, &err), CQ_OK);
	CHECK_INT_EQ(cav_state_add_text(st, "a b", 3, " x\ty ", 5, &err), CQ_OK);
	CHECK_INT_EQ(cav_state_add_text(st, "b", 1, "y x\ny", 5, &err), CQ_OK);
	return st;
}

static void
check_matrix(const cav_view *v, const char *tok, const int64_t *want,
			 uint32_t max_dist)
{
	uint32_t	idx;
	int64_t    *d;

	CHECK_INT_EQ(cav_view_find(v, tok, 1, &idx, NULL), CQ_OK);
	d = tcav_dense(v, idx);
	for (int r = 0; r < 4; r++)
		for (uint32_t c = 0; c < v->l_max; c++)
			CHECK_INT_EQ(d[r * v->l_max + c], c < max_dist && c < 4 ? want[r * 4 + c] : 0);
	free(d);
}

TEST(cav_hand_worked_matrices)
{
	cav_state  *st = hand_state(4, NULL, 0);
	size_t		len;
	uint8_t    *b = tcav_bytes(st, &len);
	cav_view	v;
	cav_token_info ti;
	cav_stats	s;
	uint32_t	x,
				y;

	CHECK_INT_EQ(cav_view_open(b, len, &v, NULL), CQ_OK);
	CHECK_INT_EQ(v.n_src, 2);
	CHECK_INT_EQ(v.n_tgt, 2);
	CHECK_INT_EQ(v.n_mat, 2);
	CHECK_INT_EQ(v.n_pairs, 2);
	CHECK_INT_EQ(tcav_row(&v, 0, "a"), 0);
	CHECK_INT_EQ(tcav_row(&v, 1, "y"), 3);
	check_matrix(&v, "x", want_x, 4);
	check_matrix(&v, "y", want_y, 4);
	cav_view_find(&v, "x", 1, &x, NULL);
	cav_view_find(&v, "y", 1, &y, NULL);
	cav_view_token(&v, y, &ti);
	CHECK_INT_EQ(ti.occurrences, 3);
	CHECK_INT_EQ(ti.nnz, 7);
	CHECK_INT_EQ(ti.row, 3);
	CHECK_NEAR(cav_view_cosine(&v, x, y), 2.0 / 12.0, 1e-15);
	CHECK_NEAR(cav_view_cosine(&v, y, x), 2.0 / 12.0, 1e-15);
	CHECK_NEAR(cav_view_cosine(&v, y, y), 1.0, 1e-15);
	CHECK_INT_EQ(cav_view_find(&v, "a", 1, &x, NULL), CQ_ENOTFOUND);
	cav_state_stats(st, &s);
	CHECK_INT_EQ(s.nnz, 12);
	CHECK(cav_state_bytes(st) > 0 && cav_state_peak_bytes(st) >= cav_state_bytes(st));
	cq_free(b);
	cav_state_free(st);
}

/* Distances l_max and beyond are dropped, not clamped into the last column. */
TEST(cav_lmax_boundary)
{
	for (uint32_t l_max = 1; l_max <= 5; l_max++)
	{
		cav_state  *st = hand_state(l_max, NULL, 0);
		size_t		len;
		uint8_t    *b = tcav_bytes(st, &len);
		cav_view	v;

		CHECK_INT_EQ(cav_view_open(b, len, &v, NULL), CQ_OK);
		CHECK_INT_EQ(v.l_max, l_max);
		check_matrix(&v, "x", want_x, l_max);
		check_matrix(&v, "y", want_y, l_max);
		cq_free(b);
		cav_state_free(st);
	}
}

/* Only y keeps a matrix; x still counts as context of y. */
TEST(cav_restricted_targets)
{
	const char *targets[] = {"y", "z"};
	cav_state  *st = hand_state(4, targets, 2);
	size_t		len;
	uint8_t    *b = tcav_bytes(st, &len);
	cav_view	v;
	uint32_t	idx;

	CHECK_INT_EQ(cav_view_open(b, len, &v, NULL), CQ_OK);
	CHECK_INT_EQ(v.n_tgt, 2);
	CHECK_INT_EQ(v.n_mat, 1);
	CHECK_INT_EQ(v.n_restrict, 2);
	check_matrix(&v, "y", want_y, 4);
	CHECK_INT_EQ(cav_view_find(&v, "x", 1, &idx, NULL), CQ_ENOTFOUND);
	CHECK_INT_EQ(cav_view_find(&v, "z", 1, &idx, NULL), CQ_ENOTFOUND);
	cq_free(b);
	cav_state_free(st);
}

TEST(cav_rejects_bad_options_and_tokens)
{
	cav_options bad = {0};
	cav_options ok = {8};
	cav_state  *st;
	cq_error	err;
	const char *toks[] = {"a", "\xff", ""};
	size_t		lens[] = {1, 1, 0};

	CHECK_INT_EQ(cav_state_new(&bad, 0, &st, &err), CQ_EINVAL);
	bad.l_max = CAV_MAX_LMAX + 1;
	CHECK_INT_EQ(cav_state_new(&bad, 0, &st, &err), CQ_EINVAL);
	CHECK_INT_EQ(cav_state_new(&ok, 0, &st, &err), CQ_OK);
	CHECK_INT_EQ(cav_state_add(st, toks, lens, 1, toks + 1, lens + 1, 1, &err), CQ_EINVAL);
	CHECK_INT_EQ(cav_state_add(st, toks, lens, 1, toks + 2, lens + 2, 1, &err), CQ_EINVAL);
	CHECK(strlen(err.msg) > 0);
	/* a rejected token leaves the state usable and untouched */
	CHECK_INT_EQ(cav_state_add(st, toks, lens, 1, toks, lens, 1, &err), CQ_OK);
	CHECK_INT_EQ(cav_state_add(st, toks, lens, 0, toks, lens, 0, &err), CQ_OK);
	{
		cav_stats	s;

		cav_state_stats(st, &s);
		CHECK_INT_EQ(s.n_pairs, 2);
		CHECK_INT_EQ(s.nnz, 2);
	}
	cav_state_free(st);
}

TEST(cav_merge_rejects_other_options)
{
	const char *t1[] = {"y"},
			   *t2[] = {"x"};
	cav_state  *a = hand_state(4, NULL, 0),
			   *b = hand_state(5, NULL, 0),
			   *c = hand_state(4, t1, 1),
			   *d = hand_state(4, t2, 1),
			   *e = hand_state(4, t1, 1);
	cq_error	err;

	CHECK_INT_EQ(cav_state_merge(a, b, &err), CQ_EMISMATCH);
	CHECK_INT_EQ(cav_state_merge(a, c, &err), CQ_EMISMATCH);
	CHECK_INT_EQ(cav_state_merge(c, d, &err), CQ_EMISMATCH);
	CHECK_INT_EQ(cav_state_merge(a, a, &err), CQ_EINVAL);
	CHECK_INT_EQ(cav_state_merge(c, e, &err), CQ_OK);
	/* the failed merges left a usable */
	CHECK_INT_EQ(cav_state_add_text(a, "a", 1, "x", 1, &err), CQ_OK);
	cav_state_free(a);
	cav_state_free(b);
	cav_state_free(c);
	cav_state_free(d);
	cav_state_free(e);
}

/* The byte limit is an error code, the accounting stays under it. */
TEST(cav_memory_cap)
{
	tcav_pair  *p = tcav_corpus(400, 7, 300);
	cav_options opt = {16};
	cav_state  *st;
	cq_error	err;
	size_t		limit = 64 * 1024;
	cq_code		rc = CQ_OK;
	int			i;

	CHECK_INT_EQ(cav_state_new(&opt, limit, &st, &err), CQ_OK);
	for (i = 0; i < 400 && rc == CQ_OK; i++)
		rc = tcav_add(st, p, i, i + 1);
	CHECK_INT_EQ(rc, CQ_ELIMIT);
	CHECK(i < 400);
	CHECK(cav_state_bytes(st) <= limit);
	CHECK(cav_state_peak_bytes(st) <= limit);
	CHECK_INT_EQ(cav_state_add_text(st, "a", 1, "b", 1, &err), CQ_EINTERNAL);
	CHECK(strstr(err.msg, "unusable after an earlier error") != NULL);
	{
		uint8_t    *b;
		size_t		len;

		CHECK_INT_EQ(cav_serialize(st, 0, &b, &len, &err), CQ_EINTERNAL);
	}
	cav_state_free(st);

	/* merging into a capped state fails the same way */
	{
		cav_state  *big = tcav_build(p, 0, 400, 16, NULL, 0);
		cav_state  *small;

		CHECK_INT_EQ(cav_state_new(&opt, limit, &small, &err), CQ_OK);
		CHECK_INT_EQ(cav_state_merge(small, big, &err), CQ_ELIMIT);
		CHECK(cav_state_bytes(small) <= limit);
		cav_state_free(small);
		cav_state_free(big);
	}
	free(p);
}
