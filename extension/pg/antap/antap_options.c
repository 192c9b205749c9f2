/*
 * corpq.antap_train() options: the architecture (models/ANTAP.md) and the
 * training, one table; checked at submission and again in the worker from
 * the resolved JSON stored with the job and the version.
 */
#include "postgres.h"

#include "pg/antap/antap.h"
#include "pg/base/errors.h"
#include "pg/base/options.h"
#include "pg/jobs/jobs.h"

#define ARCH(field) CORPQ_OPT_FIELD(AntapOptions, cfg.field), .type = CORPQ_OPT_INT
#define TRAIN(field) CORPQ_OPT_FIELD(AntapOptions, train.field), .type = CORPQ_OPT_INT

static const CorpqOption rows[] = {
	/* architecture: the pool grid must be positive (Sec. 3.2's fixed grid) */
	{.key = "pool_rows", ARCH(pool_rows), .min = 1, .max = CQ_ANTAP_MAX_POOL, .def = 32},
	{.key = "pool_cols", ARCH(pool_cols), .min = 1, .max = CQ_ANTAP_MAX_POOL, .def = 32},
	{.key = "seq_len", ARCH(seq_len), .min = 1, .max = CQ_ANTAP_MAX_DIM, .def = 16},
	{.key = "d_model", ARCH(d_model), .min = 1, .max = CQ_ANTAP_MAX_DIM, .def = 32},
	{.key = "heads", ARCH(heads), .min = 1, .max = 64, .def = 4},
	{.key = "ffn_dim", ARCH(ffn_dim), .min = 1, .max = 8192, .def = 64},
	{.key = "pred_factor", ARCH(pred_factor), .min = 2, .max = 1 << 14, .def = 4},
	/* training */
	{.key = "lr", CORPQ_OPT_FIELD(AntapOptions, lr), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_POSITIVE, .hi = 10, .def = 1e-3},
	{.key = "weight_decay", CORPQ_OPT_FIELD(AntapOptions, weight_decay), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 1, .def = 0.01},
	{.key = "beta1", CORPQ_OPT_FIELD(AntapOptions, beta1), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_OPEN_HI, .lo = 0, .hi = 1, .def = 0.9},
	{.key = "beta2", CORPQ_OPT_FIELD(AntapOptions, beta2), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_OPEN_HI, .lo = 0, .hi = 1, .def = 0.999},
	{.key = "eps", CORPQ_OPT_FIELD(AntapOptions, eps), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_POSITIVE, .hi = 1, .def = 1e-8},
	{.key = "batch_size", TRAIN(batch_size), .min = 1, .max = 4096, .def = 32},
	{.key = "max_epochs", TRAIN(max_epochs), .min = 1, .max = 100000, .def = 500},
	{.key = "patience", TRAIN(patience), .min = 1, .max = 100000, .def = 20},
	{.key = "seed", CORPQ_OPT_FIELD(AntapOptions, seed), .type = CORPQ_OPT_INT64,
	.min = 0, .max = PG_INT64_MAX, .def = 0},
	CORPQ_JOB_THREADS_OPTION(AntapOptions, threads),
	{0}
};

static const CorpqOptionTable table = {"ANTAP", rows};

/* The core's structs from the parsed fields, and the cross-key checks. */
static void
resolve(AntapOptions *o)
{
	cq_error	err = {0};

	o->train.lr = o->lr;
	o->train.adamw.beta1 = (float) o->beta1;
	o->train.adamw.beta2 = (float) o->beta2;
	o->train.adamw.eps = (float) o->eps;
	o->train.adamw.weight_decay = (float) o->weight_decay;
	o->train.seed = (uint64) o->seed;
	if (cq_antap_config_validate(&o->cfg, &err) != CQ_OK)
		corpq_core_error(&err, "See models/ANTAP.md for the bounds of the architecture.",
						 "invalid ANTAP architecture");
}

void
antap_options_parse(Jsonb *options, AntapOptions *o)
{
	memset(o, 0, sizeof(*o));
	corpq_options_parse(&table, options, o);
	resolve(o);
}

void
antap_options_parse_text(const char *json, AntapOptions *o)
{
	memset(o, 0, sizeof(*o));
	corpq_options_parse_text(&table, json, o);
	resolve(o);
}

char *
antap_options_json(const AntapOptions *o)
{
	return corpq_options_json(&table, o);
}
