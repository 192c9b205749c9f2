/*
 * The scorer of the multiuat and multidds strategies (train_scorer.h): its
 * fitting to the prior and its REINFORCE updates by Adam.
 *
 * Why no baseline by default: the paper's Algorithm 1 and the public code
 * use loss = -sum_n R(n) log p_n over ALL corpora (not a sampled one).  Its
 * gradient in psi_j is p_j sum_n R(n) - R(j), whose fixed point is
 * p_n = R(n) / sum R: with positive rewards the scorer pulls the sampling
 * distribution towards the normalised rewards, slowly (200 steps of
 * lr 1e-4 move psi by at most 0.02 per update).  Subtracting a baseline b
 * from every reward adds b (1 - N p_j) to that gradient; with b = mean R
 * the fixed point is gone and psi drifts towards the corpora with
 * above-average reward for as long as they stay above average.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "common/rng.h"
#include "nn/infer/uncertainty.h"
#include "pg/base/internal_sql.h"
#include "pg/model/model_session.h"
#include "pg/train/train_scorer.h"

#define ADAM_B1 0.9
#define ADAM_B2 0.999
#define ADAM_EPS 1e-8
/* fitting the prior: Adam at this rate until p is this close */
#define FIT_LR 0.05
#define FIT_TOL 1e-9
#define FIT_MAX_STEPS 50000

static void
softmax(const double *psi, int n, double *p)
{
	double		max = -INFINITY,
				sum = 0;

	for (int i = 0; i < n; i++)
		max = Max(max, psi[i]);
	for (int i = 0; i < n; i++)
		sum += (p[i] = exp(psi[i] - max));
	for (int i = 0; i < n; i++)
		p[i] /= sum;
}

/* One Adam step (torch's defaults, bias-corrected) on gradient g. */
static void
adam_step(TrainScorer *sc, const double *g, double lr)
{
	double		c1,
				c2;

	sc->t++;
	c1 = 1 - pow(ADAM_B1, (double) sc->t);
	c2 = 1 - pow(ADAM_B2, (double) sc->t);
	for (int i = 0; i < sc->n; i++)
	{
		sc->m[i] = ADAM_B1 * sc->m[i] + (1 - ADAM_B1) * g[i];
		sc->v[i] = ADAM_B2 * sc->v[i] + (1 - ADAM_B2) * g[i] * g[i];
		sc->psi[i] -= lr * (sc->m[i] / c1) / (sqrt(sc->v[i] / c2) + ADAM_EPS);
	}
}

/* q = temperature_weights(size, tau), in log space as the static strategy. */
static void
prior(const long *size, int n, double tau, double *q)
{
	double		max = -INFINITY,
				sum = 0;

	for (int i = 0; i < n; i++)
		max = Max(max, log((double) Max(size[i], 1)));
	for (int i = 0; i < n; i++)
		sum += (q[i] = exp((log((double) Max(size[i], 1)) - max) / tau));
	for (int i = 0; i < n; i++)
		q[i] /= sum;
}

/*
 * psi := argmin cross-entropy(q, softmax(psi)) by Adam from psi = 0 (the
 * gradient is p - q); the moments are then reset for the REINFORCE updates.
 */
static void
fit_prior(TrainScorer *sc, const double *q)
{
	double	   *p = palloc(sizeof(double) * sc->n);
	double	   *g = palloc(sizeof(double) * sc->n);

	for (int step = 0; step < FIT_MAX_STEPS; step++)
	{
		double		gap = 0;

		softmax(sc->psi, sc->n, p);
		for (int i = 0; i < sc->n; i++)
		{
			g[i] = p[i] - q[i];
			gap = Max(gap, fabs(g[i]));
		}
		if (gap < FIT_TOL)
			break;
		adam_step(sc, g, FIT_LR);
	}
	memset(sc->m, 0, sizeof(double) * sc->n);
	memset(sc->v, 0, sizeof(double) * sc->n);
	sc->t = 0;
	pfree(p);
	pfree(g);
}

TrainScorer *
train_scorer_new(TrainSampler *s, const TrainOptions *o)
{
	TrainScorer *sc = palloc0(sizeof(TrainScorer));
	double	   *q = palloc(sizeof(double) * s->n);

	sc->n = s->n;
	sc->psi = palloc0(sizeof(double) * s->n);
	sc->m = palloc0(sizeof(double) * s->n);
	sc->v = palloc0(sizeof(double) * s->n);
	sc->reward = palloc(sizeof(double) * s->n);
	sc->dev_loss = palloc(sizeof(double) * s->n);
	sc->lr = o->scorer_lr;
	sc->steps = o->scorer_steps;
	sc->baseline = o->baseline;
	sc->o = *o;
	prior(s->size, s->n, o->prior_tau, q);
	fit_prior(sc, q);
	softmax(sc->psi, s->n, s->prob);
	/* the first history row: the distribution training starts with */
	sc->pending = true;
	sc->pend_step = 0;
	for (int i = 0; i < s->n; i++)
		sc->reward[i] = sc->dev_loss[i] = NAN;
	s->priv = sc;
	pfree(q);
	return sc;
}

void
train_scorer_reinforce(TrainSampler *s, int64 step, const double *reward,
					   const double *dev_loss, int64 tokens_seen, double seconds)
{
	TrainScorer *sc = s->priv;
	double	   *r = palloc(sizeof(double) * sc->n);
	double	   *p = palloc(sizeof(double) * sc->n);
	double	   *g = palloc(sizeof(double) * sc->n);
	double		mean = 0,
				sum = 0;

	for (int i = 0; i < sc->n; i++)
		mean += reward[i] / sc->n;
	for (int i = 0; i < sc->n; i++)
	{
		r[i] = reward[i] - (sc->baseline && sc->have_base ? sc->base : 0);
		sum += r[i];
	}
	if (sc->baseline)
	{
		sc->base = sc->have_base ? 0.9 * sc->base + 0.1 * mean : mean;
		sc->have_base = true;
	}
	/* d/dpsi_j of -sum_n r_n log p_n = p_j sum_n r_n - r_j */
	for (int k = 0; k < sc->steps; k++)
	{
		softmax(sc->psi, sc->n, p);
		for (int j = 0; j < sc->n; j++)
			g[j] = p[j] * sum - r[j];
		adam_step(sc, g, sc->lr);
	}
	softmax(sc->psi, sc->n, s->prob);
	sc->pending = true;
	sc->pend_step = step;
	memcpy(sc->reward, reward, sizeof(double) * sc->n);
	memcpy(sc->dev_loss, dev_loss, sizeof(double) * sc->n);
	sc->tokens_seen = tokens_seen;
	sc->seconds += seconds;
	sc->updates++;
	pfree(r);
	pfree(p);
	pfree(g);
}

/* Indices of c's pairs labelled label, in the scorer's context. */

void
train_scorer_publish(TrainSampler *s)
{
	TrainScorer *sc = s->priv;

	softmax(sc->psi, sc->n, s->prob);
}
