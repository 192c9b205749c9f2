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
#include "utils/jsonb.h"

#include "nn/infer/uncertainty.h"
#include "pg/base/options.h"
#include "pg/jobs/jobs.h"
#include "pg/score/score.h"
#include "pg/train/train.h"
#include "pg/train/train_sampler.h"


/* An uncertainty measure the core knows (multiuat). */
static bool
measure_known(const void *field)
{
	cq_uncertainty u;
	cq_error err = {0};

	return cq_uncertainty_from_name(*(char *const *) field, &u, &err) == CQ_OK;
}

/* The options of multiuat and multidds are echoed only with those strategies. */
static bool
balance_strategy(const void *options)
{
	return train_strategy_is_balance(train_strategies[((const TrainOptions *) options)->strategy_index].name);
}

#define INT_ROW(k, f, lo, hi) \
	.key = k, CORPQ_OPT_FIELD(TrainOptions, f), .type = CORPQ_OPT_INT, .min = lo, .max = hi
#define NUM_ROW(k, f, r, l, h) \
	.key = k, CORPQ_OPT_FIELD(TrainOptions, f), .type = CORPQ_OPT_NUMBER, .range = r, .lo = l, .hi = h

/*
 * Unset rows (NaN, -1, NULL) are resolved after parsing (resolve below,
 * train_balance_resolve) or by the job from the run's length
 * (train_schedule.h); the JSON leaves out what is still unset.
 */
static const CorpqOption rows[] = {
	{.key = "steps", CORPQ_OPT_FIELD(TrainOptions, steps), .type = CORPQ_OPT_INT64,
	.min = 0, .max = PG_INT32_MAX, .flags = CORPQ_OPT_UNSET},
	{NUM_ROW("epochs", epochs, CORPQ_RANGE_CLOSED, 0, 1e6),
	.expected = "a number from 0 to 1000000"},
	{NUM_ROW("max_seconds", max_seconds, CORPQ_RANGE_CLOSED, 0, 1e8),
	.expected = "a number of seconds from 0 to 1e8"},
	/* 2048; 4096 for an encoder model (train_options_resolve_model) */
	{INT_ROW("max_tokens", max_tokens, 16, 1 << 20), .flags = CORPQ_OPT_UNSET},
	{INT_ROW("update_freq", update_freq, 1, 1024), .def = 1},
	/* the job's: 1 / sqrt(4000 d_model) */
	{NUM_ROW("lr", lr, CORPQ_RANGE_OPEN_LO, 0, 10), .flags = CORPQ_OPT_UNSET},
	{INT_ROW("warmup", warmup, 0, PG_INT32_MAX), .flags = CORPQ_OPT_UNSET},
	{NUM_ROW("warmup_init_lr", warmup_init_lr, CORPQ_RANGE_CLOSED, 0, 10), .def = 1e-7},
	{NUM_ROW("dropout", dropout, CORPQ_RANGE_CLOSED, 0, 0.99), .flags = CORPQ_OPT_UNSET},
	{NUM_ROW("attention_dropout", attention_dropout, CORPQ_RANGE_CLOSED, 0, 0.99),
	.flags = CORPQ_OPT_UNSET},
	{NUM_ROW("activation_dropout", activation_dropout, CORPQ_RANGE_CLOSED, 0, 0.99),
	.flags = CORPQ_OPT_UNSET},
	{NUM_ROW("label_smoothing", label_smoothing, CORPQ_RANGE_CLOSED, 0, 0.99), .def = 0.1},
	/* encoder models' dual-encoder loss (LaBSE's margin; nn/train/dual_pass.h) */
	{NUM_ROW("margin", margin, CORPQ_RANGE_CLOSED, 0, 0.99), .def = 0.3},
	{NUM_ROW("scale", scale, CORPQ_RANGE_OPEN_LO, 0, 1000), .def = 20},
	{NUM_ROW("weight_decay", weight_decay, CORPQ_RANGE_CLOSED, 0, 1), .def = 1e-4},
	{NUM_ROW("clip_norm", clip_norm, CORPQ_RANGE_CLOSED, 0, 1e6),
	.expected = "0 (off) or a positive number"},
	{.key = "seed", CORPQ_OPT_FIELD(TrainOptions, seed), .type = CORPQ_OPT_INT64,
	.min = 0, .max = PG_INT64_MAX / 2},
	{INT_ROW("checkpoint_every", checkpoint_every, 1, PG_INT32_MAX), .flags = CORPQ_OPT_UNSET},
	{INT_ROW("keep_checkpoints", keep_checkpoints, 1, 1000), .def = 3},
	{INT_ROW("validate_every", validate_every, 1, PG_INT32_MAX), .flags = CORPQ_OPT_UNSET},
	CORPQ_JOB_THREADS_OPTION(TrainOptions, threads),
	{.key = "strategy", CORPQ_OPT_FIELD(TrainOptions, strategy_index), .type = CORPQ_OPT_ENUM,
		.names = &train_strategies[0].name, .names_stride = sizeof(TrainStrategy),
	.def = 0},
	{NUM_ROW("tau", tau, CORPQ_RANGE_POSITIVE, 0, 1e6), .flags = CORPQ_OPT_UNSET,
	.expected = "a normal positive number up to 1e6"},
	/* 100; 1000 for multiuat and multidds */
	{INT_ROW("sampler_every", sampler_every, 1, PG_INT32_MAX), .flags = CORPQ_OPT_UNSET},
	/* multiuat and multidds (train_scorer.h) */
	{.key = "measure", CORPQ_OPT_FIELD(TrainOptions, measure), .type = CORPQ_OPT_STRING,
		.valid = measure_known, .echo = balance_strategy, .flags = CORPQ_OPT_UNSET,
	.expected = "a measure name: pretp, exptp, vartp, comev, entsent, enteos, exptp_geo, vartp_log, comev_log"},
	{INT_ROW("passes", passes, 1, CORPQ_MAX_PASSES), .echo = balance_strategy,
	.flags = CORPQ_OPT_UNSET},
	{INT_ROW("update_every", sampler_every, 1, PG_INT32_MAX), .flags = CORPQ_OPT_ALIAS},
	{NUM_ROW("prior_tau", prior_tau, CORPQ_RANGE_POSITIVE, 0, 1e6), .echo = balance_strategy,
		.flags = CORPQ_OPT_UNSET,
	.expected = "a normal positive number up to 1e6 (1e6: uniform)"},
	{NUM_ROW("scorer_lr", scorer_lr, CORPQ_RANGE_OPEN_LO, 0, 10), .echo = balance_strategy,
	.flags = CORPQ_OPT_UNSET},
	{INT_ROW("scorer_steps", scorer_steps, 1, 100000), .echo = balance_strategy,
	.flags = CORPQ_OPT_UNSET},
	{INT_ROW("dev_tokens", dev_tokens, 16, 1 << 20), .echo = balance_strategy,
	.flags = CORPQ_OPT_UNSET},
	{.key = "baseline", CORPQ_OPT_FIELD(TrainOptions, baseline), .type = CORPQ_OPT_BOOL,
	.echo = balance_strategy},
	{0}
};

static const CorpqOptionTable table = {"training", rows};

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

	if (CORPQ_OPT_IS_UNSET(o->sampler_every))
		o->sampler_every = balance ? 1000 : 100;
	if (!uat && o->measure)
		given = "measure";
	else if (!uat && !CORPQ_OPT_IS_UNSET(o->passes))
		given = "passes";
	else if (!balance && !CORPQ_OPT_IS_UNSET(o->prior_tau))
		given = "prior_tau";
	else if (!balance && !CORPQ_OPT_IS_UNSET(o->scorer_lr))
		given = "scorer_lr";
	else if (!balance && !CORPQ_OPT_IS_UNSET(o->scorer_steps))
		given = "scorer_steps";
	else if (!balance && !CORPQ_OPT_IS_UNSET(o->dev_tokens))
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
	if (uat && CORPQ_OPT_IS_UNSET(o->passes))
		o->passes = 10;
	if (CORPQ_OPT_IS_UNSET(o->prior_tau))
		o->prior_tau = 1;
	if (CORPQ_OPT_IS_UNSET(o->scorer_lr))
		o->scorer_lr = 1e-4;
	if (CORPQ_OPT_IS_UNSET(o->scorer_steps))
		o->scorer_steps = 200;
	if (CORPQ_OPT_IS_UNSET(o->dev_tokens))
		o->dev_tokens = 1024;
}

/* Budget-scaled defaults, once every key is known. */
static void
resolve(TrainOptions *o)
{
	o->strategy = pstrdup(train_strategies[o->strategy_index].name);
	if (CORPQ_OPT_IS_UNSET(o->steps))
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
	if (strcmp(o->strategy, "temperature") == 0 && CORPQ_OPT_IS_UNSET(o->tau))
		o->tau = 5.0;
	if (strcmp(o->strategy, "temperature") != 0 && !CORPQ_OPT_IS_UNSET(o->tau))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("training option \"tau\" needs strategy \"temperature\""),
				 errhint("Pass '{\"strategy\": \"temperature\", \"tau\": %g}'.", o->tau)));
	train_balance_resolve(o);
}

/*
 * The defaults that depend on the model: an encoder model's batches are
 * twice a translation model's, since each pair's in-batch negatives are the
 * batch's other pairs (bench_embed_mining.sh, 300 s of small without
 * dropout: precision at 1 0.886 with 4096, 0.870 with 2048).
 */
void
train_options_resolve_model(TrainOptions *o, bool encoder)
{
	if (CORPQ_OPT_IS_UNSET(o->max_tokens))
		o->max_tokens = encoder ? 4096 : 2048;
}

void
train_options_parse(Jsonb *options, TrainOptions *o)
{
	corpq_options_parse(&table, options, o);
	resolve(o);
}

char *
train_options_json(const TrainOptions *o)
{
	return corpq_options_json(&table, o);
}
