/*
 * The hooks multiuat and multidds share (train_scorer.h): the checks before
 * the first update, saving and loading the scorer with a checkpoint, the
 * sampling-history rows of each update, and the entry in the job's result.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"

#include "common/rng.h"
#include "pg/base/internal_sql.h"
#include "pg/model/model_session.h"
#include "pg/train/train_scorer.h"

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
	train_scorer_publish(s);
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
