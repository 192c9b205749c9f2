/*
 * The pair-quality classifier (extension/curate/classifier.h): a logistic
 * regression and a Platt calibration worked by hand, the split, and the
 * serialised form refusing every damaged byte.  test/ref/test_curate.py
 * checks fits on the corpora against a numpy implementation.
 */
#include "unit.h"

#include <math.h>
#include <stdlib.h>

#include "common/crc32.h"
#include "common/le.h"
#include "curate/classifier.h"

/* One feature (char_log_ratio, the first of the enum). */
static cq_feature_set
one_feature(void)
{
	cq_feature_set fs;

	cq_feature_set_strings(&fs);
	fs.mask = CQ_F_BIT(CQ_F_CHAR_LOG_RATIO);
	return fs;
}

/*
 * x = -1 (noise) and x = 1 (clean), standardised already (mean 0, sd 1).
 * By symmetry the bias is 0; the gradient in w is
 *   (1/2) [sigmoid(-w) * (-1) + (sigmoid(w) - 1) * 1] + l2 w = -sigmoid(-w) + l2 w,
 * so w = ln 3 (sigmoid(-ln 3) = 1/4) when l2 = 1 / (4 ln 3).
 * Platt on the held-out copy: logits -ln 3 and ln 3, targets 1/3 and 2/3
 * ((N+ + 1) / (N+ + 2) with N+ = 1), so b = 0 and sigmoid(a ln 3) = 2/3:
 * a = ln 2 / ln 3, and the calibrated probability of x = 1 is 2/3.
 */
TEST(curate_classifier_hand_worked_logistic_regression)
{
	cq_feature_set fs = one_feature();
	double		x[4] = {-1, 1, -1, 1};
	unsigned char y[4] = {0, 1, 0, 1},
				holdout[4] = {0, 0, 1, 1};
	cq_train_options o;
	cq_classifier c;
	cq_error	err;

	cq_train_options_default(&o);
	o.kind = CQ_CLASSIFIER_LOGISTIC;
	o.l2 = 1 / (4 * log(3.0));
	CHECK_INT_EQ(cq_classifier_train(&fs, x, y, 4, holdout, &o, &c, &err), CQ_OK);
	CHECK_NEAR(c.mean[0], 0, 0);
	CHECK_NEAR(c.scale[0], 1, 0);
	CHECK_NEAR(c.w[0], log(3.0), 1e-12);
	CHECK_NEAR(c.bias, 0, 1e-12);
	CHECK_NEAR(c.platt_a, log(2.0) / log(3.0), 1e-12);
	CHECK_NEAR(c.platt_b, 0, 1e-12);
	CHECK_NEAR(cq_classifier_logit(&c, &x[1]), log(3.0), 1e-12);
	CHECK_NEAR(cq_classifier_prob(&c, &x[1]), 2.0 / 3.0, 1e-12);
	CHECK_NEAR(cq_classifier_prob(&c, &x[0]), 1.0 / 3.0, 1e-12);
	CHECK(c.iterations >= 2 && c.iterations < 20);
	cq_classifier_free(&c);
}

/* Standardisation: x = 10 and 14 are z = -1 and 1 (mean 12, sd 2). */
TEST(curate_classifier_standardises)
{
	cq_feature_set fs = one_feature();
	double		x[4] = {10, 14, 10, 14};
	unsigned char y[4] = {0, 1, 0, 1},
				holdout[4] = {0, 0, 1, 1};
	cq_train_options o;
	cq_classifier c;

	cq_train_options_default(&o);
	o.kind = CQ_CLASSIFIER_LOGISTIC;
	o.l2 = 1 / (4 * log(3.0));
	CHECK_INT_EQ(cq_classifier_train(&fs, x, y, 4, holdout, &o, &c, NULL), CQ_OK);
	CHECK_NEAR(c.mean[0], 12, 0);
	CHECK_NEAR(c.scale[0], 2, 0);
	CHECK_NEAR(c.w[0], log(3.0), 1e-12);
	cq_classifier_free(&c);
}

static void
const_row(const void *ctx, size_t i, double *out)
{
	out[0] = 1;
	out[1] = 0;
}

/* The intercept alone: three of four clean, so bias = logit(3/4) = ln 3;
 * the penalised weight of a zero feature stays 0. */
TEST(curate_classifier_intercept_is_the_log_odds)
{
	double		t[4] = {1, 1, 1, 0},
				theta[2];
	int			it;

	CHECK_INT_EQ(cq_logistic_newton(const_row, NULL, 4, 2, t, 0.1, 100, 1e-12, theta, &it, NULL),
				 CQ_OK);
	CHECK_NEAR(theta[0], log(3.0), 1e-12);
	CHECK_NEAR(theta[1], 0, 0);
}

/* Separable rows: the penalty keeps the weights finite. */
TEST(curate_classifier_separable_rows_stay_finite)
{
	cq_feature_set fs = one_feature();
	double		x[8] = {0, 1, 2, 3, 0, 1, 2, 3};
	unsigned char y[8] = {0, 0, 1, 1, 0, 0, 1, 1},
				holdout[8] = {0, 0, 0, 0, 1, 1, 1, 1};
	cq_train_options o;
	cq_classifier c;

	cq_train_options_default(&o);
	o.kind = CQ_CLASSIFIER_LOGISTIC;
	CHECK_INT_EQ(cq_classifier_train(&fs, x, y, 8, holdout, &o, &c, NULL), CQ_OK);
	CHECK(isfinite(c.w[0]) && c.w[0] > 5);
	CHECK(cq_classifier_prob(&c, &x[3]) > 0.5 && cq_classifier_prob(&c, &x[0]) < 0.5);
	cq_classifier_free(&c);
}

TEST(curate_classifier_refuses_bad_training_data)
{
	cq_feature_set fs = one_feature();
	double		x[4] = {-1, 1, -1, NAN};
	unsigned char y[4] = {0, 1, 0, 1},
				holdout[4] = {0, 0, 1, 1};
	cq_train_options o;
	cq_classifier c;
	cq_error	err;

	cq_train_options_default(&o);
	CHECK_INT_EQ(cq_classifier_train(&fs, x, y, 4, holdout, &o, &c, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "char_log_ratio") != NULL);
	x[3] = 1;
	y[3] = 0;					/* the held-out side has no clean pair */
	CHECK_INT_EQ(cq_classifier_train(&fs, x, y, 4, holdout, &o, &c, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "held-out") != NULL);
	y[3] = 2;
	CHECK_INT_EQ(cq_classifier_train(&fs, x, y, 4, holdout, &o, &c, &err), CQ_EINVAL);
	CHECK(c.mean == NULL);
}

TEST(curate_classifier_split_by_group)
{
	enum
	{
		N = 20000
	};
	static int64_t groups[N];
	static unsigned char a[N],
				b[N];
	size_t		held = 0;

	for (size_t i = 0; i < N; i++)
		groups[i] = (int64_t) (i % 5000);	/* four rows per group */
	cq_holdout_split(11, groups, N, 0.2, a);
	cq_holdout_split(11, groups, N, 0.2, b);
	CHECK(memcmp(a, b, N) == 0);
	for (size_t i = 0; i < N; i++)
	{
		held += a[i];
		CHECK(a[i] == a[i % 5000]);
	}
	CHECK(held > 0.17 * N && held < 0.23 * N);
	cq_holdout_split(12, groups, N, 0.2, b);
	CHECK(memcmp(a, b, N) != 0);
}

/* A small trained classifier (the rows are not separable). */
static void
trained(cq_classifier *c)
{
	cq_feature_set fs = one_feature();
	double		x[8] = {0, 1, 2, 3, 0.5, 1, 2.5, 3};
	unsigned char y[8] = {0, 1, 0, 1, 0, 0, 1, 1},
				holdout[8] = {0, 0, 0, 0, 1, 1, 1, 1};
	cq_train_options o;

	cq_train_options_default(&o);
	o.kind = CQ_CLASSIFIER_LOGISTIC;
	if (cq_classifier_train(&fs, x, y, 8, holdout, &o, c, NULL) != CQ_OK)
		abort();
}

TEST(curate_classifier_round_trip)
{
	cq_classifier c,
				r;
	unsigned char buf[512];
	size_t		size;
	double		x = 1.7;
	cq_error	err;

	trained(&c);
	size = cq_classifier_size(&c);
	CHECK_INT_EQ(size, 72 + 3 * 8 + 3 * 8 + 4);
	CHECK_INT_EQ(cq_classifier_write(&c, buf, size - 1, &err), CQ_ELIMIT);
	CHECK_INT_EQ(cq_classifier_write(&c, buf, sizeof(buf), NULL), CQ_OK);
	CHECK_INT_EQ(cq_classifier_read(buf, size, &r, &err), CQ_OK);
	CHECK(r.d == 1 && r.fs.mask == c.fs.mask && r.fs.src_lang == -1);
	CHECK(memcmp(r.w, c.w, sizeof(double)) == 0 && r.bias == c.bias && r.platt_a == c.platt_a);
	CHECK(cq_classifier_prob(&r, &x) == cq_classifier_prob(&c, &x));
	cq_classifier_free(&r);
	cq_classifier_free(&c);
}

/* Every single-byte change and every truncation is refused with a core
 * error; none is read as a classifier. */
TEST(curate_classifier_refuses_damaged_bytes)
{
	cq_classifier c,
				r;
	unsigned char buf[512];
	size_t		size;
	cq_error	err;

	trained(&c);
	size = cq_classifier_size(&c);
	cq_classifier_write(&c, buf, sizeof(buf), NULL);
	for (size_t i = 0; i < size; i++)
		for (int bit = 0; bit < 8; bit++)
		{
			cq_code		rc;

			buf[i] ^= (unsigned char) (1 << bit);
			rc = cq_classifier_read(buf, size, &r, &err);
			CHECK(rc == CQ_EFORMAT || rc == CQ_ECORRUPT);
			if (rc == CQ_OK)
				cq_classifier_free(&r);
			buf[i] ^= (unsigned char) (1 << bit);
		}
	for (size_t len = 0; len < size; len++)
		CHECK_INT_EQ(cq_classifier_read(buf, len, &r, &err), CQ_EFORMAT);
	buf[size] = 0;
	CHECK_INT_EQ(cq_classifier_read(buf, size + 1, &r, &err), CQ_EFORMAT);
	/* a later version, checksum fixed: refused by its number */
	cq_le_put_u32(buf + 4, 3);
	cq_le_put_u32(buf + size - 4, cq_crc32(0, buf, size - 4));
	CHECK_INT_EQ(cq_classifier_read(buf, size, &r, &err), CQ_EFORMAT);
	CHECK(strstr(err.msg, "version 3") != NULL);
	/* a finite-looking layout with a NaN weight, checksum fixed */
	cq_le_put_u32(buf + 4, 1);
	memset(buf + 72 + 16, 0xff, 8);
	cq_le_put_u32(buf + size - 4, cq_crc32(0, buf, size - 4));
	CHECK_INT_EQ(cq_classifier_read(buf, size, &r, &err), CQ_EFORMAT);
	CHECK(r.mean == NULL);
	cq_classifier_free(&c);
}

/*
 * A version-1 classifier as builds before the tail features wrote it, its
 * bytes laid out here by hand from FORMAT.md (not by the writer): two
 * features, char_log_ratio (bit 0) and align_fwd (bit 21), mean 0, scale 1,
 * weights 1 and 2, bias 0.5, Platt a 1, b 0.  It must keep loading with the
 * same layout and scoring the same: x = (0.25, -0.5) has the logit
 * 0.5 + 0.25 - 1 = -0.25, the probability 1 / (1 + e^0.25).  Written again,
 * it is the same bytes (still version 1).  The same header naming a tail
 * feature is refused (those are version 2's), and a classifier that uses
 * one is written as version 2 and read back.
 */
TEST(curate_classifier_reads_version_1)
{
	const int	d = 2;
	const size_t size = 72 + 24 * 2 + 24 + 4;
	unsigned char buf[512],
				again[512];
	unsigned char *p;
	const double values[] = {0, 0, 1, 1, 1, 2, 0.5, 1, 0};
	double		x[2] = {0.25, -0.5};
	cq_classifier r;
	cq_error	err;

	memset(buf, 0, sizeof(buf));
	memcpy(buf, "CQPQ", 4);
	cq_le_put_u32(buf + 4, 1);
	cq_le_put_u32(buf + 8, 1);
	cq_le_put_u32(buf + 12, (uint32_t) d);
	cq_le_put_u64(buf + 16, (uint64_t) 1 | (uint64_t) 1 << 21);
	cq_le_put_u32(buf + 24, (uint32_t) -1);
	cq_le_put_u32(buf + 28, (uint32_t) -1);
	p = buf + 72;
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++, p += 8)
	{
		uint64_t	bits;

		memcpy(&bits, &values[i], 8);
		cq_le_put_u64(p, bits);
	}
	cq_le_put_u32(p, cq_crc32(0, buf, size - 4));
	CHECK_INT_EQ(cq_classifier_read(buf, size, &r, &err), CQ_OK);
	CHECK_INT_EQ(r.d, 2);
	CHECK(cq_feature_at(&r.fs, 0) == CQ_F_CHAR_LOG_RATIO);
	CHECK(cq_feature_at(&r.fs, 1) == CQ_F_ALIGN_FWD);
	CHECK(strcmp(cq_feature_name(cq_feature_at(&r.fs, 1)), "align_fwd") == 0);
	CHECK_NEAR(cq_classifier_logit(&r, x), -0.25, 1e-15);
	CHECK_NEAR(cq_classifier_prob(&r, x), 1 / (1 + exp(0.25)), 1e-15);
	CHECK_INT_EQ(cq_classifier_size(&r), size);
	CHECK_INT_EQ(cq_classifier_write(&r, again, sizeof(again), &err), CQ_OK);
	CHECK(memcmp(again, buf, size) == 0);

	/* a tail feature makes it version 2 */
	r.fs.mask = (uint64_t) 1 | (uint64_t) 1 << CQ_F_TAIL_TGT;
	CHECK_INT_EQ(cq_classifier_write(&r, again, sizeof(again), &err), CQ_OK);
	CHECK_INT_EQ(cq_le_get_u32(again + 4), 2);
	cq_classifier_free(&r);
	CHECK_INT_EQ(cq_classifier_read(again, size, &r, &err), CQ_OK);
	CHECK(cq_feature_at(&r.fs, 1) == CQ_F_TAIL_TGT);
	CHECK_NEAR(cq_classifier_prob(&r, x), 1 / (1 + exp(0.25)), 1e-15);
	cq_classifier_free(&r);
	/* ... and version 1 cannot name it */
	cq_le_put_u32(again + 4, 1);
	cq_le_put_u32(again + size - 4, cq_crc32(0, again, size - 4));
	CHECK_INT_EQ(cq_classifier_read(again, size, &r, &err), CQ_EFORMAT);
	CHECK(strstr(err.msg, "version 1") != NULL);
}

/* ---- boosted trees (curate/trees.h) --------------------------------------- */

static cq_train_options
tree_options(int rounds, int depth)
{
	cq_train_options o;

	cq_train_options_default(&o);
	o.kind = CQ_CLASSIFIER_TREES;
	o.rounds = rounds;
	o.depth = depth;
	return o;
}

/*
 * One stump by hand: training x = 0, 0, 1, 1 with y = 0, 0, 1, 1; base
 * ln(1/1) = 0, so p = 1/2, g = 1/2, 1/2, -1/2, -1/2 and h = 1/4 each.  Two
 * bins: the edge is v[floor(4/2)] = 1.  The only split (x < 1) has GL = 1,
 * HL = 1/2, GR = -1, HR = 1/2, gain 1/1.5 + 1/1.5 - 0 > 0 (lambda 1); the
 * leaves are -GL / (HL + 1) = -2/3 and +2/3 (learning rate 1).  Platt on the
 * held-out x = 0, 1: logits -2/3 and 2/3, targets 1/3 and 2/3, so b = 0 and
 * a (2/3) = ln 2.  Depth 2: the children are pure in x (one bin), so they do
 * not split and pass their rows left.
 */
TEST(curate_trees_hand_worked_stump)
{
	cq_feature_set fs = one_feature();
	double		x[6] = {0, 0, 1, 1, 0, 1};
	unsigned char y[6] = {0, 0, 1, 1, 0, 1},
				holdout[6] = {0, 0, 0, 0, 1, 1};
	cq_train_options o = tree_options(1, 2);
	cq_classifier c;

	o.learning_rate = 1;
	o.bins = 2;
	o.min_hessian = 0;
	CHECK_INT_EQ(cq_classifier_train(&fs, x, y, 6, holdout, &o, &c, NULL), CQ_OK);
	CHECK_NEAR(c.base, 0, 0);
	CHECK_INT_EQ(c.feat[0], 0);
	CHECK_NEAR(c.thr[0], 1, 0);
	CHECK_INT_EQ(c.feat[1], -1);
	CHECK_INT_EQ(c.feat[2], -1);
	CHECK_NEAR(c.leaf[0], -2.0 / 3.0, 1e-15);	/* left, left */
	CHECK_NEAR(c.leaf[2], 2.0 / 3.0, 1e-15);	/* right, left */
	CHECK_NEAR(cq_classifier_logit(&c, &x[5]), 2.0 / 3.0, 1e-15);
	CHECK_NEAR(c.platt_a, 1.5 * log(2.0), 1e-12);
	CHECK_NEAR(c.platt_b, 0, 1e-12);
	CHECK_NEAR(cq_classifier_prob(&c, &x[5]), 2.0 / 3.0, 1e-12);
	cq_classifier_free(&c);
}

/* y = (x1 > 0) xor (x2 > 0): no linear rule does better than chance, two
 * levels of trees get every row right. */
TEST(curate_trees_learn_an_interaction)
{
	enum
	{
		N = 400
	};
	static double x[2 * N];
	static unsigned char y[N],
				holdout[N];
	cq_feature_set fs = one_feature();
	cq_train_options o = tree_options(50, 2),
				lo;
	cq_classifier t,
				l;
	int			right_t = 0,
				right_l = 0;

	fs.mask = CQ_F_BIT(CQ_F_CHAR_LOG_RATIO) | CQ_F_BIT(CQ_F_WORD_LOG_RATIO);
	for (int i = 0; i < N; i++)
	{
		x[2 * i] = (i % 7) - 3 + 0.5;
		x[2 * i + 1] = (i % 11) - 5 + 0.5;
		y[i] = (x[2 * i] > 0) != (x[2 * i + 1] > 0);
		holdout[i] = i % 4 == 0;
	}
	cq_train_options_default(&lo);
	lo.kind = CQ_CLASSIFIER_LOGISTIC;
	CHECK_INT_EQ(cq_classifier_train(&fs, x, y, N, holdout, &o, &t, NULL), CQ_OK);
	CHECK_INT_EQ(cq_classifier_train(&fs, x, y, N, holdout, &lo, &l, NULL), CQ_OK);
	for (int i = 0; i < N; i++)
	{
		right_t += (cq_classifier_prob(&t, &x[2 * i]) > 0.5) == y[i];
		right_l += (cq_classifier_prob(&l, &x[2 * i]) > 0.5) == y[i];
	}
	CHECK_INT_EQ(right_t, N);
	CHECK(right_l < 0.7 * N);
	cq_classifier_free(&t);
	cq_classifier_free(&l);
}

static void
trained_trees(cq_classifier *c)
{
	cq_feature_set fs = one_feature();
	double		x[8] = {0, 1, 2, 3, 0.5, 1, 2.5, 3};
	unsigned char y[8] = {0, 1, 0, 1, 0, 0, 1, 1},
				holdout[8] = {0, 0, 0, 0, 1, 1, 1, 1};
	cq_train_options o = tree_options(3, 2);

	o.min_hessian = 0;
	if (cq_classifier_train(&fs, x, y, 8, holdout, &o, c, NULL) != CQ_OK)
		abort();
}

TEST(curate_trees_round_trip_and_damage)
{
	cq_classifier c,
				r;
	unsigned char buf[1024];
	size_t		size;
	double		xs[4] = {-1, 0.7, 2.2, 9};
	cq_error	err;

	trained_trees(&c);
	size = cq_classifier_size(&c);
	CHECK_INT_EQ(size, 72 + 16 + 3 * (3 * 4 + 3 * 8 + 4 * 8) + 16 + 4);
	CHECK_INT_EQ(cq_classifier_write(&c, buf, sizeof(buf), NULL), CQ_OK);
	CHECK_INT_EQ(cq_classifier_read(buf, size, &r, &err), CQ_OK);
	CHECK(r.kind == CQ_CLASSIFIER_TREES && r.n_trees == 3 && r.depth == 2);
	for (int i = 0; i < 4; i++)
		CHECK(cq_classifier_prob(&r, &xs[i]) == cq_classifier_prob(&c, &xs[i]));
	cq_classifier_free(&r);
	for (size_t i = 0; i < size; i++)
		for (int bit = 0; bit < 8; bit++)
		{
			cq_code		rc;

			buf[i] ^= (unsigned char) (1 << bit);
			rc = cq_classifier_read(buf, size, &r, &err);
			CHECK(rc == CQ_EFORMAT || rc == CQ_ECORRUPT);
			if (rc == CQ_OK)
				cq_classifier_free(&r);
			buf[i] ^= (unsigned char) (1 << bit);
		}
	for (size_t len = 0; len < size; len++)
		CHECK_INT_EQ(cq_classifier_read(buf, len, &r, &err), CQ_EFORMAT);
	/* a node naming a feature the classifier lacks, checksum fixed */
	cq_le_put_u32(buf + 88, 5);
	cq_le_put_u32(buf + size - 4, cq_crc32(0, buf, size - 4));
	CHECK_INT_EQ(cq_classifier_read(buf, size, &r, &err), CQ_EFORMAT);
	CHECK(strstr(err.msg, "feature 5") != NULL);
	cq_classifier_free(&c);
}

TEST(curate_trees_refuse_bad_options)
{
	cq_feature_set fs = one_feature();
	double		x[4] = {-1, 1, -1, 1};
	unsigned char y[4] = {0, 1, 0, 1},
				holdout[4] = {0, 0, 1, 1};
	cq_train_options o = tree_options(10, 7);
	cq_classifier c;
	cq_error	err;

	CHECK_INT_EQ(cq_classifier_train(&fs, x, y, 4, holdout, &o, &c, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "depth") != NULL);
	o = tree_options(10, 3);
	o.bins = 300;
	CHECK_INT_EQ(cq_classifier_train(&fs, x, y, 4, holdout, &o, &c, &err), CQ_EINVAL);
}
