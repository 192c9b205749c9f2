/* The pair-quality classifier: training and use (classifier.h). */
#include "curate/classifier.h"

#include <math.h>
#include <string.h>

#include "common/mem.h"
#include "common/rng.h"
#include "curate/trees.h"

/* Below this a feature is constant on the training rows: left unscaled,
 * its standardised value is 0 there and the penalty keeps its weight 0. */
#define MIN_SCALE 1e-12
/* The counter word that names the split's stream. */
#define SPLIT_STREAM 0x53504c54u

void
cq_train_options_default(cq_train_options *o)
{
	o->l2 = 1e-4;
	o->max_iter = 100;
	o->tol = 1e-10;
	o->kind = CQ_CLASSIFIER_TREES;	/* measured ahead on every noise type */
	o->rounds = 200;
	o->depth = 3;
	o->learning_rate = 0.1;
	o->lambda = 1.0;
	o->bins = 64;
	o->min_hessian = 1.0;
}

static cq_code
check_options(const cq_train_options *o, cq_error *err)
{
	if (!(o->l2 >= 0 && isfinite(o->l2)) || o->max_iter < 1 || !(o->tol > 0))
		return cq_fail(err, CQ_EINVAL, "training options: l2 >= 0, max_iter >= 1, tol > 0");
	if (o->kind != CQ_CLASSIFIER_LOGISTIC && o->kind != CQ_CLASSIFIER_TREES)
		return cq_fail(err, CQ_EINVAL, "classifier kind %d is unknown", (int) o->kind);
	if (o->kind == CQ_CLASSIFIER_TREES &&
		(o->rounds < 1 || o->rounds > 100000 || o->depth < 1 || o->depth > 6 ||
		 !(o->learning_rate > 0 && o->learning_rate <= 1) || !(o->lambda >= 0) ||
		 !isfinite(o->lambda) || o->bins < 2 || o->bins > 256 || !(o->min_hessian >= 0)))
		return cq_fail(err, CQ_EINVAL, "tree options: rounds 1..100000, depth 1..6, "
					   "learning_rate in (0, 1], lambda >= 0, bins 2..256, min_hessian >= 0");
	return CQ_OK;
}

void
cq_holdout_split(uint64_t seed, const int64_t *groups, size_t n, double frac,
				 unsigned char *holdout)
{
	cq_philox_key key = cq_philox_key_from_seed(seed);

	for (size_t i = 0; i < n; i++)
	{
		uint64_t	g = groups ? (uint64_t) groups[i] : (uint64_t) i;
		cq_philox_ctr c = {{(uint32_t) g, (uint32_t) (g >> 32), SPLIT_STREAM, 0}};

		holdout[i] = cq_u32_to_unit(cq_philox4x32(c, key).c[0]) < frac;
	}
}

/* The training rows' design: the intercept, then the standardised features. */
typedef struct train_rows
{
	const double *x;
	const size_t *rows;
	const cq_classifier *c;
} train_rows;

static void
train_row(const void *ctx, size_t i, double *out)
{
	const train_rows *t = ctx;
	const double *x = t->x + t->rows[i] * (size_t) t->c->d;

	out[0] = 1.0;
	for (int j = 0; j < t->c->d; j++)
		out[j + 1] = (x[j] - t->c->mean[j]) / t->c->scale[j];
}

/* Platt's design: the intercept and the logit. */
static void
platt_row(const void *ctx, size_t i, double *out)
{
	out[0] = 1.0;
	out[1] = ((const double *) ctx)[i];
}

static void
standardise(cq_classifier *c, const double *x, const size_t *rows, size_t n)
{
	for (int j = 0; j < c->d; j++)
	{
		double		m = 0,
					v = 0;

		for (size_t i = 0; i < n; i++)
			m += x[rows[i] * c->d + j];
		m /= (double) n;
		for (size_t i = 0; i < n; i++)
		{
			double		e = x[rows[i] * c->d + j] - m;

			v += e * e;
		}
		v = sqrt(v / (double) n);
		c->mean[j] = m;
		c->scale[j] = v < MIN_SCALE ? 1.0 : v;
	}
}

static cq_code
check_data(const cq_feature_set *fs, const double *x, const unsigned char *y, size_t n,
		   const unsigned char *holdout, const cq_train_options *o, cq_error *err)
{
	size_t		count[2][2] = {{0}};	/* [held out][label] */
	int			d = cq_feature_count(fs);

	cq_code		rc = check_options(o, err);

	if (rc != CQ_OK)
		return rc;
	for (size_t i = 0; i < n; i++)
	{
		if (y[i] > 1)
			return cq_fail(err, CQ_EINVAL, "label of row %zu is %d, not 0 or 1", i, y[i]);
		for (int j = 0; j < d; j++)
			if (!isfinite(x[i * d + j]))
				return cq_fail(err, CQ_EINVAL, "feature %s of row %zu is not finite",
							   cq_feature_name(cq_feature_at(fs, j)), i);
		count[holdout[i] != 0][y[i]]++;
	}
	for (int h = 0; h < 2; h++)
		if (count[h][0] == 0 || count[h][1] == 0)
			return cq_fail(err, CQ_EINVAL, "the %s rows need clean and noisy pairs "
						   "(%zu clean, %zu noisy)", h ? "held-out" : "training",
						   count[h][1], count[h][0]);
	return CQ_OK;
}

cq_code
cq_classifier_alloc(const cq_feature_set *fs, cq_classifier *c, cq_error *err)
{
	memset(c, 0, sizeof(*c));
	c->fs = *fs;
	c->d = cq_feature_count(fs);
	c->mean = cq_alloc0(3 * (size_t) c->d * sizeof(double) + 1);
	if (!c->mean)
		return cq_fail(err, CQ_ENOMEM, "out of memory for a classifier");
	c->scale = c->mean + c->d;
	c->w = c->scale + c->d;
	c->kind = CQ_CLASSIFIER_LOGISTIC;
	return CQ_OK;
}

/* The rows of one side of the split, and their targets. */
static cq_code
side_rows(const unsigned char *y, size_t n, const unsigned char *holdout, int side,
		  size_t **rows, double **t, size_t *m, cq_error *err)
{
	*m = 0;
	*rows = cq_alloc((n + 1) * sizeof(size_t));
	*t = cq_alloc((n + 1) * sizeof(double));
	if (!*rows || !*t)
		return cq_fail(err, CQ_ENOMEM, "out of memory for %zu training rows", n);
	for (size_t i = 0; i < n; i++)
		if ((holdout[i] != 0) == side)
		{
			(*rows)[*m] = i;
			(*t)[(*m)++] = y[i];
		}
	return CQ_OK;
}

static cq_code
fit_weights(cq_classifier *c, const double *x, const size_t *rows, const double *t,
			size_t m, const cq_train_options *o, cq_error *err)
{
	train_rows	tr = {x, rows, c};
	double	   *theta = cq_alloc((c->d + 1) * sizeof(double));
	cq_code		rc;

	if (!theta)
		return cq_fail(err, CQ_ENOMEM, "out of memory for a classifier");
	standardise(c, x, rows, m);
	rc = cq_logistic_newton(train_row, &tr, m, c->d + 1, t, o->l2, o->max_iter, o->tol,
							theta, &c->iterations, err);
	c->bias = theta[0];
	memcpy(c->w, theta + 1, c->d * sizeof(double));
	cq_free(theta);
	return rc;
}

static cq_code
fit_platt(cq_classifier *c, const double *x, const size_t *rows, double *t, size_t m,
		  const cq_train_options *o, cq_error *err)
{
	double	   *s = cq_alloc((m + 1) * sizeof(double)),
				pos = 0,
				theta[2];
	int			iterations;
	cq_code		rc;

	if (!s)
		return cq_fail(err, CQ_ENOMEM, "out of memory for %zu held-out rows", m);
	for (size_t i = 0; i < m; i++)
	{
		s[i] = cq_classifier_logit(c, x + rows[i] * c->d);
		pos += t[i];
	}
	for (size_t i = 0; i < m; i++)
		t[i] = t[i] > 0.5 ? (pos + 1) / (pos + 2) : 1 / ((double) m - pos + 2);
	rc = cq_logistic_newton(platt_row, s, m, 2, t, 0.0, o->max_iter, o->tol, theta,
							&iterations, err);
	c->platt_b = theta[0];
	c->platt_a = theta[1];
	cq_free(s);
	return rc;
}

static cq_code
train_sides(const double *x, const unsigned char *y, size_t n, const unsigned char *holdout,
			const cq_train_options *o, cq_classifier *c, cq_error *err)
{
	size_t	   *rows = NULL;
	double	   *t = NULL;
	size_t		m;
	cq_code		rc = side_rows(y, n, holdout, 0, &rows, &t, &m, err);

	if (rc == CQ_OK && c->kind == CQ_CLASSIFIER_TREES)
		rc = cq_trees_fit(c, x, rows, t, m, o, err);
	else if (rc == CQ_OK)
		rc = fit_weights(c, x, rows, t, m, o, err);
	cq_free(rows);
	cq_free(t);
	if (rc != CQ_OK)
		return rc;
	rc = side_rows(y, n, holdout, 1, &rows, &t, &m, err);
	if (rc == CQ_OK)
		rc = fit_platt(c, x, rows, t, m, o, err);
	cq_free(rows);
	cq_free(t);
	return rc;
}

cq_code
cq_classifier_train(const cq_feature_set *fs, const double *x, const unsigned char *y,
					size_t n, const unsigned char *holdout, const cq_train_options *o,
					cq_classifier *c, cq_error *err)
{
	cq_code		rc;

	memset(c, 0, sizeof(*c));
	if ((rc = cq_feature_set_check(fs, err)) != CQ_OK ||
		(rc = check_data(fs, x, y, n, holdout, o, err)) != CQ_OK ||
		(rc = cq_classifier_alloc(fs, c, err)) != CQ_OK)
		return rc;
	if (o->kind == CQ_CLASSIFIER_TREES)
	{
		c->kind = CQ_CLASSIFIER_TREES;
		c->n_trees = o->rounds;
		c->depth = o->depth;
		rc = cq_trees_alloc(c, err);
	}
	if (rc == CQ_OK)
		rc = train_sides(x, y, n, holdout, o, c, err);
	if (rc != CQ_OK)
		cq_classifier_free(c);
	return rc;
}

double
cq_classifier_logit(const cq_classifier *c, const double *x)
{
	double		s = c->bias;

	if (c->kind == CQ_CLASSIFIER_TREES)
		return cq_trees_logit(c, x);
	for (int j = 0; j < c->d; j++)
		s += c->w[j] * ((x[j] - c->mean[j]) / c->scale[j]);
	return s;
}

double
cq_classifier_prob(const cq_classifier *c, const double *x)
{
	double		v = c->platt_a * cq_classifier_logit(c, x) + c->platt_b;

	return v >= 0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v));
}

void
cq_classifier_free(cq_classifier *c)
{
	cq_free(c->mean);
	cq_free(c->thr);
	memset(c, 0, sizeof(*c));
}
