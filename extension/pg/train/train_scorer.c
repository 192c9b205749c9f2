/*
 * The scorer of the multiuat and multidds strategies (train_scorer.h) and
 * their options.
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
#include "nn/uncertainty.h"
#include "pg/base/internal_sql.h"
#include "pg/model/model_score.h"
#include "pg/train/train_scorer.h"

#define UNSET (-1)
#define ADAM_B1 0.9
#define ADAM_B2 0.999
#define ADAM_EPS 1e-8
/* fitting the prior: Adam at this rate until p is this close */
#define FIT_LR 0.05
#define FIT_TOL 1e-9
#define FIT_MAX_STEPS 50000

/* ---- options ---- */

bool
train_strategy_is_balance(const char *name)
{
	return strcmp(name, "multiuat") == 0 || strcmp(name, "multidds") == 0;
}

void
train_balance_resolve(TrainOptions *o)
{
	bool		balance = train_strategy_is_balance(o->strategy);
	bool		uat = strcmp(o->strategy, "multiuat") == 0;
	const char *given = NULL;

	if (o->sampler_every == UNSET)
		o->sampler_every = balance ? 1000 : 100;
	if (!uat && o->measure)
		given = "measure";
	else if (!uat && o->passes != UNSET)
		given = "passes";
	else if (!balance && o->prior_tau != UNSET)
		given = "prior_tau";
	else if (!balance && o->scorer_lr != UNSET)
		given = "scorer_lr";
	else if (!balance && o->scorer_steps != UNSET)
		given = "scorer_steps";
	else if (!balance && o->dev_tokens != UNSET)
		given = "dev_tokens";
	else if (!balance && o->baseline)
		given = "baseline";
	if (given)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("training option \"%s\" needs strategy %s", given,
						uat || strcmp(given, "measure") == 0 || strcmp(given, "passes") == 0
						? "\"multiuat\"" : "\"multiuat\" or \"multidds\""),
				 errhint("Leave it out, or pass '{\"strategy\": \"multiuat\"}'.")));
	if (!balance)
		return;
	/* ENTEOS: the measure the paper carries through its analyses (Sec. 5) */
	if (uat && o->measure == NULL)
		o->measure = pstrdup("enteos");
	if (uat && o->passes == UNSET)
		o->passes = 10;
	if (o->prior_tau == UNSET)
		o->prior_tau = 1;
	if (o->scorer_lr == UNSET)
		o->scorer_lr = 1e-4;
	if (o->scorer_steps == UNSET)
		o->scorer_steps = 200;
	if (o->dev_tokens == UNSET)
		o->dev_tokens = 1024;
}

/* ---- the scorer ---- */

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
static int *
label_index(TrainScorer *sc, const TrainCorpus *c, int label, int *count)
{
	int		   *idx = MemoryContextAlloc(GetMemoryChunkContext(sc), sizeof(int) * Max(1, c->n_pairs));

	*count = 0;
	for (long k = 0; k < c->n_pairs; k++)
		if (c->label[k] == label)
			idx[(*count)++] = (int) k;
	return idx;
}

/* About dev_tokens padded tokens of consecutive pairs of idx from a drawn start. */
static int
pick_batch(TrainScorer *sc, const TrainCorpus *c, const int *idx, int count, uint64 key,
		   cq_pair **pairs)
{
	int			start,
				n = 0,
				longest = 0;

	start = (int) (key % (uint64) count);

	*pairs = palloc(sizeof(cq_pair) * count);
	while (n < count)
	{
		long		k = idx[(start + n) % count];
		int			l = Max(longest, Max(c->src_len[k], c->tgt_len[k]) + 1);

		if (n > 0 && l * (n + 1) > sc->o.dev_tokens)
			break;
		train_corpus_pair(c, k, &(*pairs)[n]);
		longest = l;
		n++;
	}
	return n;
}

int
train_scorer_dev_batch(TrainSampler *s, const TrainSamplerView *view, int i, cq_pair **pairs)
{
	TrainScorer *sc = s->priv;

	if (sc->dev_index == NULL)
	{
		sc->dev_index = MemoryContextAlloc(GetMemoryChunkContext(sc), sizeof(int *) * sc->n);
		sc->dev_count = MemoryContextAlloc(GetMemoryChunkContext(sc), sizeof(int) * sc->n);
		for (int c = 0; c < sc->n; c++)
			sc->dev_index[c] = label_index(sc, view->dev, view->dev_label[c], &sc->dev_count[c]);
	}
	return pick_batch(sc, view->dev, sc->dev_index[i], sc->dev_count[i],
					  cq_mix64(s->seed ^ cq_mix64((uint64) view->step * 1000003 + i)), pairs);
}

int
train_scorer_train_batch(TrainSampler *s, const TrainSamplerView *view, int i, cq_pair **pairs)
{
	TrainScorer *sc = s->priv;

	if (sc->train_index == NULL)
	{
		sc->train_index = MemoryContextAlloc(GetMemoryChunkContext(sc), sizeof(int *) * sc->n);
		sc->train_count = MemoryContextAlloc(GetMemoryChunkContext(sc), sizeof(int) * sc->n);
		for (int c = 0; c < sc->n; c++)
			sc->train_index[c] = label_index(sc, view->corpus, c, &sc->train_count[c]);
	}
	return pick_batch(sc, view->corpus, sc->train_index[i], sc->train_count[i],
					  cq_mix64(s->seed ^ cq_mix64((uint64) view->step * 1000033 + i + 7777)), pairs);
}

/* ---- the hooks both strategies share ---- */

void
train_scorer_check(TrainSampler *s, const TrainSamplerView *view)
{
	if (s->n < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("strategy \"%s\" needs at least two corpora, the corpus has one label \"%s\"",
						s->strategy->name, s->names[0]),
				 errhint("Return the corpus label as the corpus query's third column, or use strategy \"proportional\".")));
	if (view->dev == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("strategy \"%s\" needs dev pairs of every corpus, the dev query returned none",
						s->strategy->name)));
	for (int i = 0; i < s->n; i++)
	{
		if (view->dev_label[i] < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("strategy \"%s\" needs dev pairs of every corpus, corpus \"%s\" has none",
							s->strategy->name, s->names[i]),
					 errhint("Add dev rows labelled \"%s\" to the dev query.", s->names[i])));
		if (s->size[i] == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("corpus \"%s\" has no pair within max_tokens", s->names[i])));
	}
}

static void
append_array(StringInfo b, const char *key, const double *x, int n)
{
	appendStringInfo(b, ", \"%s\": [", key);
	for (int i = 0; i < n; i++)
		appendStringInfo(b, "%s%.17g", i ? ", " : "", x[i]);
	appendStringInfoChar(b, ']');
}

char *
train_scorer_save(TrainSampler *s)
{
	TrainScorer *sc = s->priv;
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfo(&b, "{\"t\": " INT64_FORMAT ", \"updates\": %d, \"seconds\": %.17g, \"base\": %.17g"
					 ", \"have_base\": %d",
					 sc->t, sc->updates, sc->seconds, sc->have_base ? sc->base : 0.0,
					 sc->have_base ? 1 : 0);
	append_array(&b, "psi", sc->psi, sc->n);
	append_array(&b, "m", sc->m, sc->n);
	append_array(&b, "v", sc->v, sc->n);
	appendStringInfoChar(&b, '}');
	return b.data;
}

/*
 * The number after "key": (and the i-th element of an array with i >= 0);
 * ERROR unless it is a finite number of at least min.
 */
static double
json_number(const char *json, const char *key, int i, double min)
{
	char	   *pat = psprintf("\"%s\": ", key);
	const char *p = strstr(json, pat);
	char	   *end;
	double		d;

	if (p == NULL)
		elog(ERROR, "the scorer state of a training checkpoint has no \"%s\"", key);
	p += strlen(pat);
	if (i >= 0)
	{
		p++;					/* '[' */
		for (int k = 0; k < i; k++)
		{
			p = strchr(p, ',');
			if (p == NULL)
				elog(ERROR, "the scorer state of a training checkpoint has too few \"%s\"", key);
			p++;
		}
	}
	d = strtod(p, &end);
	if (end == p || !isfinite(d) || d < min)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the scorer state of a training checkpoint has a bad \"%s\"", key),
				 errdetail("It must be a finite number of at least %g.", min)));
	return d;
}

void
train_scorer_load(TrainSampler *s, const char *json)
{
	TrainScorer *sc = s->priv;

	sc->t = (int64) json_number(json, "t", -1, 0);
	sc->updates = (int) json_number(json, "updates", -1, 0);
	sc->seconds = json_number(json, "seconds", -1, 0);
	sc->base = json_number(json, "base", -1, -HUGE_VAL);
	sc->have_base = json_number(json, "have_base", -1, 0) != 0;
	for (int i = 0; i < sc->n; i++)
	{
		sc->psi[i] = json_number(json, "psi", i, -HUGE_VAL);
		sc->m[i] = json_number(json, "m", i, -HUGE_VAL);
		sc->v[i] = json_number(json, "v", i, 0);
	}
	softmax(sc->psi, sc->n, s->prob);
	/* the prior row (step 0) committed before the first checkpoint */
	sc->pending = false;
}

void
train_scorer_log(TrainSampler *s, int64 job)
{
	TrainScorer *sc = s->priv;
	Oid			argtypes[7] = {INT8OID, INT8OID, TEXTOID, FLOAT8OID, FLOAT8OID, FLOAT8OID, INT8OID};
	Datum		v[7];
	char		nulls[7] = "       ";

	if (!sc->pending)
		return;
	v[0] = Int64GetDatum(job);
	v[1] = Int64GetDatum(sc->pend_step);
	v[6] = Int64GetDatum(sc->tokens_seen);
	for (int i = 0; i < sc->n; i++)
	{
		v[2] = CStringGetTextDatum(s->names[i]);
		v[3] = Float8GetDatum(s->prob[i]);
		v[4] = Float8GetDatum(sc->reward[i]);
		v[5] = Float8GetDatum(sc->dev_loss[i]);
		nulls[4] = isnan(sc->reward[i]) ? 'n' : ' ';
		nulls[5] = isnan(sc->dev_loss[i]) ? 'n' : ' ';
		/* a resumed run writes the rows after its checkpoint again */
		if (corpq_sql_as_owner("INSERT INTO corpq.train_sampling "
							   "(job, step, corpus, probability, reward, dev_loss, tokens_seen, at, owner) "
							   "SELECT $1, $2, $3, $4, $5, $6, $7, pg_catalog.clock_timestamp(), j.owner "
							   "FROM corpq.jobs j WHERE j.id OPERATOR(pg_catalog.=) $1 "
							   "ON CONFLICT (job, step, corpus) DO UPDATE "
							   "SET probability = EXCLUDED.probability, reward = EXCLUDED.reward, "
							   "dev_loss = EXCLUDED.dev_loss, tokens_seen = EXCLUDED.tokens_seen, "
							   "at = EXCLUDED.at",
							   7, argtypes, v, nulls, 0) != SPI_OK_INSERT || SPI_processed != 1)
			elog(ERROR, "could not insert into corpq.train_sampling");
	}
	sc->pending = false;
}

char *
train_scorer_result(TrainSampler *s, double training_seconds)
{
	TrainScorer *sc = s->priv;
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "{\"final\": {");
	for (int i = 0; i < s->n; i++)
	{
		if (i)
			appendStringInfoString(&b, ", ");
		escape_json(&b, s->names[i]);
		appendStringInfo(&b, ": %.17g", s->prob[i]);
	}
	appendStringInfo(&b, "}, \"updates\": %d, \"update_seconds\": %.3f, \"update_share\": %.6f}",
					 sc->updates, sc->seconds,
					 training_seconds > 0 ? sc->seconds / training_seconds : 0.0);
	return b.data;
}
