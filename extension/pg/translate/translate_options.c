/*
 * Options of the translation functions (translate.h): one table per
 * function, sharing the rows of the search, through base/options.h.
 * Defaults are fairseq's (nn/infer/translate.h); the bounds here are what a jsonb
 * value may be at all, the core checks the rest against the model.
 */
#include "postgres.h"

#include "pg/base/options.h"
#include "pg/jobs/jobs.h"
#include "pg/translate/translate.h"

StaticAssertDecl(sizeof(cq_search) == sizeof(int), "an ENUM option is stored as an int");

static const char *const search_names[] = {"beam", "sample", NULL};
static const int search_values[] = {CQ_SEARCH_BEAM, CQ_SEARCH_SAMPLE};

#define OPT(field) CORPQ_OPT_FIELD(CorpqTranslateOptions, field)

/* What every translation function accepts. */
#define SEARCH_ROWS \
	{.key = "search", OPT(core.search), .type = CORPQ_OPT_ENUM, \
	 .names = search_names, .values = search_values, .def = CQ_SEARCH_BEAM}, \
	{.key = "beam", OPT(core.beam), .type = CORPQ_OPT_INT, .min = 1, .max = 1000, .def = 5}, \
	{.key = "nbest", OPT(core.nbest), .type = CORPQ_OPT_INT, .min = 1, .max = 1000, .def = 1}, \
	{.key = "lenpen", OPT(core.lenpen), .type = CORPQ_OPT_NUMBER, \
	 .range = CORPQ_RANGE_CLOSED, .lo = -1000, .hi = 1000, .def = 1}, \
	{.key = "max_len_a", OPT(core.max_len_a), .type = CORPQ_OPT_NUMBER, \
	 .range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 1000, .def = 0}, \
	{.key = "max_len_b", OPT(core.max_len_b), .type = CORPQ_OPT_INT, \
	 .min = 0, .max = 1000000, .def = 200}, \
	{.key = "min_len", OPT(core.min_len), .type = CORPQ_OPT_INT, .min = 0, .max = 1000000, .def = 1}, \
	{.key = "no_repeat_ngram_size", OPT(core.no_repeat_ngram_size), .type = CORPQ_OPT_INT, \
	 .min = 0, .max = 1000, .def = 0}, \
	{.key = "unk_penalty", OPT(core.unk_penalty), .type = CORPQ_OPT_NUMBER, \
	 .range = CORPQ_RANGE_CLOSED, .lo = -1000, .hi = 1000, .def = 0}, \
	{.key = "temperature", OPT(core.temperature), .type = CORPQ_OPT_NUMBER, \
	 .range = CORPQ_RANGE_CLOSED, .lo = CQ_TEMPERATURE_MIN, .hi = CQ_TEMPERATURE_MAX, .def = 1}, \
	{.key = "topk", OPT(core.topk), .type = CORPQ_OPT_INT, .min = 0, .max = 1000000, .def = 0, \
	 .expected = "an integer from 0 (off) to the target vocabulary's size"}, \
	{.key = "topp", OPT(core.topp), .type = CORPQ_OPT_NUMBER, \
	 .range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 1, .def = 0, \
	 .expected = "a number in [0, 1], 0 = off"}, \
	{.key = "seed", OPT(core.seed), .type = CORPQ_OPT_INT64, .min = 0, .max = PG_INT64_MAX, .def = 0}

/* Sentences decoded together: the core's row limits bound batch x beam. */
#define BATCH_ROW \
	{.key = "batch", OPT(batch), .type = CORPQ_OPT_INT, .min = 1, .max = 1024, .def = 32}

/* one overlong sentence should not fail a query or, hours in, a job */
#define SKIP_ROW \
	{.key = "skip_too_long", OPT(skip_too_long), .type = CORPQ_OPT_BOOL}

/* "foreign_target" in the stored options only when given true */
static bool
echo_foreign_target(const void *options)
{
	return ((const CorpqTranslateOptions *) options)->foreign_target;
}

static const CorpqOption one_rows[] = {SEARCH_ROWS, SKIP_ROW, {0}};
static const CorpqOption rows_rows[] = {SEARCH_ROWS, BATCH_ROW, SKIP_ROW, {0}};
static const CorpqOption job_rows[] = {
	SEARCH_ROWS, BATCH_ROW,
	{.key = "chunk_rows", OPT(chunk_rows), .type = CORPQ_OPT_INT, .min = 1, .max = 10000000,
	.def = 1000},
	CORPQ_JOB_THREADS_OPTION(CorpqTranslateOptions, threads),
	SKIP_ROW,
	{.key = "foreign_target", OPT(foreign_target), .type = CORPQ_OPT_BOOL, .echo = echo_foreign_target},
	{.key = "version_column", OPT(version_column), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	.valid = corpq_option_nonempty, .expected = "the name of an integer column of the target"},
	{0}
};

static const CorpqOptionTable tables[] = {
	[CORPQ_TRANSLATE_ONE] = {"translation", one_rows},
	[CORPQ_TRANSLATE_ROWS] = {"translation", rows_rows},
	[CORPQ_TRANSLATE_JOB] = {"translation job", job_rows},
};

/* Fields a table leaves out get the values the engine then ignores. */
static void
fill(CorpqTranslateCall call, CorpqTranslateOptions *o)
{
	if (call == CORPQ_TRANSLATE_ONE)
		o->batch = 1;
	if (call != CORPQ_TRANSLATE_JOB)
	{
		o->chunk_rows = 0;
		o->threads = CORPQ_OPT_UNSET_INT;
	}
}

void
corpq_translate_options_parse(CorpqTranslateCall call, Jsonb *options, CorpqTranslateOptions *o)
{
	memset(o, 0, sizeof(*o));
	corpq_options_parse(&tables[call], options, o);
	fill(call, o);
}

void
corpq_translate_options_parse_text(CorpqTranslateCall call, const char *json,
								   CorpqTranslateOptions *o)
{
	memset(o, 0, sizeof(*o));
	corpq_options_parse_text(&tables[call], json, o);
	fill(call, o);
}

char *
corpq_translate_options_json(CorpqTranslateCall call, const CorpqTranslateOptions *o)
{
	return corpq_options_json(&tables[call], o);
}
