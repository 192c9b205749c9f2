/*
 * The option tables of pipeline/ (pipeline_kinds.h): corpq.rejuvenate()'s
 * and corpq.self_train()'s options.  The train and translate objects of
 * both are checked by train/'s and translate/'s own parsers
 * (pipeline_take_objects).
 */
#include "postgres.h"

#include "pg/base/options.h"
#include "pg/jobs/jobs.h"
#include "pg/pipeline/pipeline.h"
#include "pg/pipeline/pipeline_gate.h"
#include "pg/pipeline/pipeline_kinds.h"
#include "pg/pipeline/pipeline_synthetic.h"

static const CorpqOption rejuv_rows[] = {
	{.key = "name", CORPQ_OPT_FIELD(CorpqRejuvenateOptions, name), .type = CORPQ_OPT_STRING,
	.valid = pipeline_name_valid, .expected = PIPELINE_NAME_EXPECTED, .flags = CORPQ_OPT_UNSET},
	{.key = "ratio", CORPQ_OPT_FIELD(CorpqRejuvenateOptions, ratio), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_OPEN, .lo = 0, .hi = 1, .def = 0.1},
	{.key = "identifier", CORPQ_OPT_FIELD(CorpqRejuvenateOptions, identifier), .type = CORPQ_OPT_STRING,
	.valid = corpq_option_nonempty, .flags = CORPQ_OPT_UNSET},
	{.key = "rejuvenator", CORPQ_OPT_FIELD(CorpqRejuvenateOptions, rejuvenator), .type = CORPQ_OPT_STRING,
	.valid = corpq_option_nonempty, .flags = CORPQ_OPT_UNSET},
	{.key = "train_final", CORPQ_OPT_FIELD(CorpqRejuvenateOptions, train_final), .type = CORPQ_OPT_BOOL,
	.def = 1},
	{.key = "beam", CORPQ_OPT_FIELD(CorpqRejuvenateOptions, beam), .type = CORPQ_OPT_INT,
	.min = 1, .max = 64, .def = 5},
	{.key = "seed", CORPQ_OPT_FIELD(CorpqRejuvenateOptions, seed), .type = CORPQ_OPT_INT64,
	.min = 0, .max = PG_INT64_MAX, .def = 1},
	{.key = "score_rows", CORPQ_OPT_FIELD(CorpqRejuvenateOptions, score_rows), .type = CORPQ_OPT_INT,
	.min = 1, .max = 1000000, .def = 2000},
	{.key = "src_vocab", CORPQ_OPT_FIELD(CorpqRejuvenateOptions, src_vocab), .type = CORPQ_OPT_STRING,
	.valid = corpq_option_nonempty, .flags = CORPQ_OPT_UNSET},
	{.key = "tgt_vocab", CORPQ_OPT_FIELD(CorpqRejuvenateOptions, tgt_vocab), .type = CORPQ_OPT_STRING,
	.valid = corpq_option_nonempty, .flags = CORPQ_OPT_UNSET},
	PIPELINE_SYNTHETIC_OPTIONS(CorpqRejuvenateOptions, synthetic),
	PIPELINE_GATE_OPTION(CorpqRejuvenateOptions, gate),
	CORPQ_JOB_THREADS_OPTION(CorpqRejuvenateOptions, threads),
	{.key = NULL}
};

const CorpqOptionTable corpq_rejuvenate_options = {"rejuvenate", rejuv_rows};

static const char *const sampling_names[] = {"uncsamp", "random", "dwf", NULL};

static const CorpqOption st_rows[] = {
	{.key = "name", CORPQ_OPT_FIELD(CorpqSelfTrainOptions, name), .type = CORPQ_OPT_STRING,
	.valid = pipeline_name_valid, .expected = PIPELINE_NAME_EXPECTED, .flags = CORPQ_OPT_UNSET},
	{.key = "k", CORPQ_OPT_FIELD(CorpqSelfTrainOptions, k), .type = CORPQ_OPT_INT64,
	.min = 1, .max = PG_INT64_MAX, .flags = CORPQ_OPT_UNSET},
	{.key = "sampling", CORPQ_OPT_FIELD(CorpqSelfTrainOptions, sampling), .type = CORPQ_OPT_ENUM,
	.names = sampling_names, .def = SAMPLING_UNCSAMP},
	{.key = "r", CORPQ_OPT_FIELD(CorpqSelfTrainOptions, r), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_OPEN_LO, .lo = 0, .hi = 100, .def = 90},
	{.key = "beta", CORPQ_OPT_FIELD(CorpqSelfTrainOptions, beta), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 100, .def = 2},
	{.key = "seed", CORPQ_OPT_FIELD(CorpqSelfTrainOptions, seed), .type = CORPQ_OPT_INT64,
	.min = 0, .max = PG_INT64_MAX, .def = 1},
	{.key = "beam", CORPQ_OPT_FIELD(CorpqSelfTrainOptions, beam), .type = CORPQ_OPT_INT,
	.min = 1, .max = 64, .def = 5},
	PIPELINE_SYNTHETIC_OPTIONS(CorpqSelfTrainOptions, synthetic),
	PIPELINE_GATE_OPTION(CorpqSelfTrainOptions, gate),
	{.key = "tag_synthetic", CORPQ_OPT_FIELD(CorpqSelfTrainOptions, tag_synthetic), .type = CORPQ_OPT_BOOL,
	.def = 0},
	{.key = "tag", CORPQ_OPT_FIELD(CorpqSelfTrainOptions, tag), .type = CORPQ_OPT_STRING,
	.valid = corpq_option_nonempty, .def_string = "<syn>"},
	{.key = "dev", CORPQ_OPT_FIELD(CorpqSelfTrainOptions, dev), .type = CORPQ_OPT_STRING,
	.valid = corpq_option_nonempty, .flags = CORPQ_OPT_UNSET},
	{.key = "src_vocab", CORPQ_OPT_FIELD(CorpqSelfTrainOptions, src_vocab), .type = CORPQ_OPT_STRING,
	.valid = corpq_option_nonempty, .flags = CORPQ_OPT_UNSET},
	{.key = "tgt_vocab", CORPQ_OPT_FIELD(CorpqSelfTrainOptions, tgt_vocab), .type = CORPQ_OPT_STRING,
	.valid = corpq_option_nonempty, .flags = CORPQ_OPT_UNSET},
	CORPQ_JOB_THREADS_OPTION(CorpqSelfTrainOptions, threads),
	{.key = NULL}
};

const CorpqOptionTable corpq_self_train_options = {"self_train", st_rows};
