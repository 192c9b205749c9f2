/*
 * Penalised logistic regression by Newton's method (classifier.h says why
 * Newton).  Every sum runs over the rows in index order, so a fit is a pure
 * function of its inputs.
 */
#include "curate/classifier.h"

#include <math.h>
#include <string.h>

#include "common/interrupt.h"
#include "common/mem.h"

#define MAX_HALVINGS 40
#define ARMIJO 1e-4

typedef struct fit
{
	cq_design_row row;
	const void *ctx;
	size_t		n;
	int			p;
	const double *t;
	double		l2;
	double	   *z;				/* one design row */
	double	   *g;				/* gradient, p */
	double	   *h;				/* Hessian, p x p (lower triangle used) */
	double	   *step;			/* p */
	double	   *trial;			/* p */
} fit;

/* log(1 + exp(v)) without overflow. */
static double
softplus(double v)
{
	return v > 0 ? v + log1p(exp(-v)) : log1p(exp(v));
}

static double
sigmoid(double v)
{
	return v >= 0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v));
}

static double
dot(const double *a, const double *b, int p)
{
	double		s = 0;

	for (int j = 0; j < p; j++)
		s += a[j] * b[j];
	return s;
}

static double
penalty(const fit *f, const double *theta)
{
	double		s = 0;

	for (int j = 1; j < f->p; j++)
		s += theta[j] * theta[j];
	return 0.5 * f->l2 * s;
}

/* Cross-entropy of a logit v against target t: -t log s(v) - (1-t) log(1-s(v)). */
static double
xent(double v, double t)
{
	return t * softplus(-v) + (1 - t) * softplus(v);
}

static double
objective(fit *f, const double *theta)
{
	double		s = 0;

	for (size_t i = 0; i < f->n; i++)
	{
		f->row(f->ctx, i, f->z);
		s += xent(dot(f->z, theta, f->p), f->t[i]);
	}
	return s / (double) f->n + penalty(f, theta);
}

/* Gradient and Hessian of the objective at theta. */
static void
derivatives(fit *f, const double *theta)
{
	int			p = f->p;

	memset(f->g, 0, p * sizeof(double));
	memset(f->h, 0, (size_t) p * p * sizeof(double));
	for (size_t i = 0; i < f->n; i++)
	{
		double		q,
					r;

		f->row(f->ctx, i, f->z);
		q = sigmoid(dot(f->z, theta, p));
		r = q * (1 - q);
		for (int j = 0; j < p; j++)
		{
			f->g[j] += (q - f->t[i]) * f->z[j];
			for (int k = 0; k <= j; k++)
				f->h[j * p + k] += r * f->z[j] * f->z[k];
		}
	}
	for (int j = 0; j < p; j++)
	{
		f->g[j] /= (double) f->n;
		for (int k = 0; k <= j; k++)
			f->h[j * p + k] /= (double) f->n;
		if (j > 0)
		{
			f->g[j] += f->l2 * theta[j];
			f->h[j * p + j] += f->l2;
		}
	}
}

/* Solve H x = g in place (x in f->step) by Cholesky on the lower triangle;
 * a tiny ridge relative to the diagonal keeps a saturated or singular
 * system (all rows separated, a constant feature without penalty)
 * solvable. */
static bool
solve(fit *f)
{
	int			p = f->p;
	double	   *a = f->h,
				trace = 0;

	for (int j = 0; j < p; j++)
		trace += a[j * p + j];
	for (int j = 0; j < p; j++)
		a[j * p + j] += 1e-12 * (trace > 0 ? trace : 1.0) / p;
	for (int j = 0; j < p; j++)
	{
		double		d = a[j * p + j];

		for (int k = 0; k < j; k++)
			d -= a[j * p + k] * a[j * p + k];
		if (!(d > 0))
			return false;
		a[j * p + j] = sqrt(d);
		for (int i = j + 1; i < p; i++)
		{
			double		s = a[i * p + j];

			for (int k = 0; k < j; k++)
				s -= a[i * p + k] * a[j * p + k];
			a[i * p + j] = s / a[j * p + j];
		}
	}
	for (int i = 0; i < p; i++)
	{
		double		s = f->g[i];

		for (int k = 0; k < i; k++)
			s -= a[i * p + k] * f->step[k];
		f->step[i] = s / a[i * p + i];
	}
	for (int i = p - 1; i >= 0; i--)
	{
		double		s = f->step[i];

		for (int k = i + 1; k < p; k++)
			s -= a[k * p + i] * f->step[k];
		f->step[i] = s / a[i * p + i];
	}
	return true;
}

/* theta -= lambda * step with the largest lambda in 1, 1/2, ... that
 * decreases the objective enough; returns the step's largest change. */
static double
line_search(fit *f, double *theta, double *obj)
{
	double		slope = dot(f->g, f->step, f->p),
				lambda = 1.0,
				moved = 0;

	for (int h = 0; h < MAX_HALVINGS; h++, lambda *= 0.5)
	{
		double		o;

		for (int j = 0; j < f->p; j++)
			f->trial[j] = theta[j] - lambda * f->step[j];
		o = objective(f, f->trial);
		if (o <= *obj - ARMIJO * lambda * slope)
		{
			for (int j = 0; j < f->p; j++)
			{
				double		c = fabs(f->trial[j] - theta[j]);

				moved = c > moved ? c : moved;
				theta[j] = f->trial[j];
			}
			*obj = o;
			return moved;
		}
	}
	return 0;					/* no decrease left at rounding level */
}

static cq_code
newton(fit *f, double *theta, int max_iter, double tol, int *iterations, cq_error *err)
{
	double		obj = objective(f, theta);

	for (*iterations = 0; *iterations < max_iter;)
	{
		cq_poll();				/* a pass over every row follows */
		derivatives(f, theta);
		if (!solve(f))
			return cq_fail(err, CQ_EINVAL, "the logistic regression's Hessian is not "
						   "positive definite (a feature with values that are not finite?)");
		(*iterations)++;
		if (line_search(f, theta, &obj) < tol)
			return CQ_OK;
	}
	return CQ_OK;				/* the iteration budget is the caller's choice */
}

cq_code
cq_logistic_newton(cq_design_row row, const void *ctx, size_t n, int p, const double *t,
				   double l2, int max_iter, double tol, double *theta, int *iterations,
				   cq_error *err)
{
	fit			f = {row, ctx, n, p, t, l2};
	double	   *buf;
	cq_code		rc;

	if (n == 0 || p < 1)
		return cq_fail(err, CQ_EINVAL, "a logistic regression needs rows and an intercept");
	buf = cq_alloc(((size_t) p * p + 4 * (size_t) p) * sizeof(double));
	if (!buf)
		return cq_fail(err, CQ_ENOMEM, "out of memory fitting a logistic regression");
	f.h = buf;
	f.z = f.h + (size_t) p * p;
	f.g = f.z + p;
	f.step = f.g + p;
	f.trial = f.step + p;
	memset(theta, 0, p * sizeof(double));
	rc = newton(&f, theta, max_iter, tol, iterations, err);
	cq_free(buf);
	return rc;
}
