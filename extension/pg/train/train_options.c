/*
 * corpq.train() options: validation at submission (and again in the worker,
 * from the resolved JSON stored with the job), defaults, and the resolved
 * JSON itself.  What scales with the run's length (warm-up, checkpoint and
 * validation cadence) the job derives (train_schedule.h).
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "pg/base/base.h"
#include "pg/train/train.h"
#include "pg/train/train_sampler.h"

#define VALID_KEYS "steps, epochs, max_seconds, max_tokens, update_freq, lr, " \
	"warmup, warmup_init_lr, dropout, attention_dropout, activation_dropout, " \
	"label_smoothing, weight_decay, clip_norm, seed, checkpoint_every, " \
	"keep_checkpoints, validate_every, threads, strategy, tau, sampler_every, " \
	TRAIN_BALANCE_KEYS

/* Unset markers, resolved after all keys are read. */
#define UNSET (-1)

static void
bad_value(const char *key, const char *expected)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for training option \"%s\"", key),
			 errdetail("Expected %s.", expected)));
}

static double
get_number(const char *key, JsonbValue *v, double lo, double hi, bool lo_open,
		   const char *expected)
{
	double		d;

	if (v->type != jbvNumeric)
		bad_value(key, expected);
	d = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric)));
	if (!isfinite(d) || d < lo || d > hi || (lo_open && d == lo))
		bad_value(key, expected);
	return d;
}

static int64
get_int(const char *key, JsonbValue *v, int64 lo, int64 hi)
{
	char	   *expected = psprintf("an integer from " INT64_FORMAT " to " INT64_FORMAT, lo, hi);
	double		d = get_number(key, v, (double) lo, (double) hi, false, expected);

	if (d != floor(d))
		bad_value(key, expected);
	return (int64) d;
}

static void
defaults(TrainOptions *o)
{
	memset(o, 0, sizeof(*o));
	o->steps = UNSET;
	o->max_tokens = 4096;
	o->update_freq = 1;
	o->lr = UNSET;				/* the job's: 1 / sqrt(4000 d_model) */
	o->warmup_init_lr = 1e-7;
	o->warmup = UNSET;
	o->dropout = o->attention_dropout = o->activation_dropout = UNSET;
	o->label_smoothing = 0.1;
	o->weight_decay = 1e-4;
	o->clip_norm = 0;
	o->seed = 0;
	o->checkpoint_every = UNSET;
	o->keep_checkpoints = 3;
	o->validate_every = UNSET;
	o->threads = corpq_threads;
	o->strategy = pstrdup("proportional");
	o->tau = UNSET;
	o->sampler_every = UNSET;	/* 100; 1000 for multiuat and multidds */
	train_balance_defaults(o);
}

static void
set_option(TrainOptions *o, const char *key, JsonbValue *v)
{
	if (strcmp(key, "steps") == 0)
		o->steps = get_int(key, v, 0, PG_INT32_MAX);
	else if (strcmp(key, "epochs") == 0)
		o->epochs = get_number(key, v, 0, 1e6, false, "a number from 0 to 1000000");
	else if (strcmp(key, "max_seconds") == 0)
		o->max_seconds = get_number(key, v, 0, 1e8, false, "a number of seconds from 0 to 1e8");
	else if (strcmp(key, "max_tokens") == 0)
		o->max_tokens = (int) get_int(key, v, 16, 1 << 20);
	else if (strcmp(key, "update_freq") == 0)
		o->update_freq = (int) get_int(key, v, 1, 1024);
	else if (strcmp(key, "lr") == 0)
		o->lr = get_number(key, v, 0, 10, true, "a number in (0, 10]");
	else if (strcmp(key, "warmup_init_lr") == 0)
		o->warmup_init_lr = get_number(key, v, 0, 10, false, "a number in [0, 10]");
	else if (strcmp(key, "warmup") == 0)
		o->warmup = (int) get_int(key, v, 0, PG_INT32_MAX);
	else if (strcmp(key, "dropout") == 0)
		o->dropout = get_number(key, v, 0, 0.99, false, "a number in [0, 0.99]");
	else if (strcmp(key, "attention_dropout") == 0)
		o->attention_dropout = get_number(key, v, 0, 0.99, false, "a number in [0, 0.99]");
	else if (strcmp(key, "activation_dropout") == 0)
		o->activation_dropout = get_number(key, v, 0, 0.99, false, "a number in [0, 0.99]");
	else if (strcmp(key, "label_smoothing") == 0)
		o->label_smoothing = get_number(key, v, 0, 0.99, false, "a number in [0, 0.99]");
	else if (strcmp(key, "weight_decay") == 0)
		o->weight_decay = get_number(key, v, 0, 1, false, "a number in [0, 1]");
	else if (strcmp(key, "clip_norm") == 0)
		o->clip_norm = get_number(key, v, 0, 1e6, false, "0 (off) or a positive number");
	else if (strcmp(key, "seed") == 0)
		o->seed = get_int(key, v, 0, PG_INT64_MAX / 2);
	else if (strcmp(key, "checkpoint_every") == 0)
		o->checkpoint_every = (int) get_int(key, v, 1, PG_INT32_MAX);
	else if (strcmp(key, "keep_checkpoints") == 0)
		o->keep_checkpoints = (int) get_int(key, v, 1, 1000);
	else if (strcmp(key, "validate_every") == 0)
		o->validate_every = (int) get_int(key, v, 1, PG_INT32_MAX);
	else if (strcmp(key, "threads") == 0)
		o->threads = (int) get_int(key, v, 1, 256);
	else if (strcmp(key, "tau") == 0)
		o->tau = get_number(key, v, DBL_MIN, 1e6, false, "a normal positive number up to 1e6");
	else if (strcmp(key, "sampler_every") == 0)
		o->sampler_every = (int) get_int(key, v, 1, PG_INT32_MAX);
	else if (strcmp(key, "strategy") == 0)
	{
		if (v->type != jbvString)
			bad_value(key, train_strategy_names());
		o->strategy = pnstrdup(v->val.string.val, v->val.string.len);
		if (train_strategy_find(o->strategy) == NULL)
			bad_value(key, train_strategy_names());
	}
	else if (train_balance_option(o, key, v, bad_value))
		;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown training option \"%s\"", key),
				 errhint("Valid options are: " VALID_KEYS ".")));
}

/* Budget-scaled defaults, once every key is known. */
static void
resolve(TrainOptions *o)
{
	if (o->steps == UNSET)
		o->steps = (o->epochs > 0 || o->max_seconds > 0) ? 0 : 1000;
	if (o->steps == 0 && o->epochs == 0 && o->max_seconds == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("training needs a budget"),
				 errhint("Set at least one of steps, epochs and max_seconds above 0.")));
	/*
	 * warmup, checkpoint_every and validate_every stay unset: the job derives
	 * them from the updates it expects (train_schedule.h)
	 */
	if (strcmp(o->strategy, "temperature") == 0 && o->tau == UNSET)
		o->tau = 5.0;
	if (strcmp(o->strategy, "temperature") != 0 && o->tau != UNSET)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("training option \"tau\" needs strategy \"temperature\""),
				 errhint("Pass '{\"strategy\": \"temperature\", \"tau\": %g}'.", o->tau)));
	train_balance_resolve(o);
}

void
train_options_parse(Jsonb *options, TrainOptions *o)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *key = NULL;

	defaults(o);
	if (options != NULL)
	{
		if (!JB_ROOT_IS_OBJECT(options) || JB_ROOT_IS_SCALAR(options))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("training options must be a JSON object"),
					 errhint("Valid options are: " VALID_KEYS ".")));
		it = JsonbIteratorInit(&options->root);
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			if (tok == WJB_KEY)
				key = pnstrdup(v.val.string.val, v.val.string.len);
			else if (tok == WJB_VALUE && v.type != jbvNull)
				set_option(o, key, &v);
			else if (tok == WJB_VALUE)
				bad_value(key, "a value, not null");
		}
	}
	resolve(o);
}

char *
train_options_json(const TrainOptions *o)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfo(&b, "{\"steps\": " INT64_FORMAT ", \"epochs\": %.17g, \"max_seconds\": %.17g"
					 ", \"max_tokens\": %d, \"update_freq\": %d"
					 ", \"warmup_init_lr\": %.17g, \"label_smoothing\": %.17g"
					 ", \"weight_decay\": %.17g, \"clip_norm\": %.17g, \"seed\": " INT64_FORMAT
					 ", \"keep_checkpoints\": %d, \"threads\": %d, \"sampler_every\": %d",
					 o->steps, o->epochs, o->max_seconds, o->max_tokens, o->update_freq,
					 o->warmup_init_lr, o->label_smoothing, o->weight_decay,
					 o->clip_norm, o->seed, o->keep_checkpoints, o->threads, o->sampler_every);
	if (o->lr > 0)
		appendStringInfo(&b, ", \"lr\": %.17g", o->lr);
	if (o->warmup >= 0)
		appendStringInfo(&b, ", \"warmup\": %d", o->warmup);
	if (o->checkpoint_every > 0)
		appendStringInfo(&b, ", \"checkpoint_every\": %d", o->checkpoint_every);
	if (o->validate_every > 0)
		appendStringInfo(&b, ", \"validate_every\": %d", o->validate_every);
	if (o->dropout >= 0)
		appendStringInfo(&b, ", \"dropout\": %.17g", o->dropout);
	if (o->attention_dropout >= 0)
		appendStringInfo(&b, ", \"attention_dropout\": %.17g", o->attention_dropout);
	if (o->activation_dropout >= 0)
		appendStringInfo(&b, ", \"activation_dropout\": %.17g", o->activation_dropout);
	if (o->tau > 0)
		appendStringInfo(&b, ", \"tau\": %.17g", o->tau);
	train_balance_json(o, &b);
	appendStringInfoString(&b, ", \"strategy\": ");
	escape_json(&b, o->strategy);
	appendStringInfoChar(&b, '}');
	return b.data;
}
