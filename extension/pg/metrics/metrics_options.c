/*
 * The jsonb options of the metrics, as tables for the shared option parser
 * (base/options.h): BLEU's, chrF's, and paired_bootstrap's (a "metric" key
 * plus the chosen metric's options).
 */
#include "postgres.h"

#include "pg/base/options.h"
#include "pg/metrics/metrics.h"

StaticAssertDecl(sizeof(cq_tokenizer) == sizeof(int), "an ENUM option is stored as an int");
StaticAssertDecl(sizeof(cq_bleu_smooth) == sizeof(int), "an ENUM option is stored as an int");
StaticAssertDecl(sizeof(MetricKind) == sizeof(int), "an ENUM option is stored as an int");

/* in the order of the core's enums, so the index is the value */
static const char *const tokenizer_names[] = {"13a", "intl", "char", "none", NULL};
static const char *const smooth_names[] = {"none", "floor", "add-k", "exp", NULL};
static const char *const metric_names[] = {"bleu", "chrf", NULL};

/*
 * The rows of each metric, for a struct type T whose BLEU (chrF) options
 * are at P, e.g. "bleu." in paired_bootstrap's struct.  smooth_value is
 * unset until given: its default depends on the method (resolved below).
 */
#define BLEU_ROWS(T, P, EFF) \
	{.key = "tokenize", CORPQ_OPT_FIELD(T, P tokenize), .type = CORPQ_OPT_ENUM, \
	 .names = tokenizer_names, .def = CQ_TOK_13A}, \
	{.key = "lowercase", CORPQ_OPT_FIELD(T, P lowercase), .type = CORPQ_OPT_BOOL}, \
	{.key = "smooth", CORPQ_OPT_FIELD(T, P smooth), .type = CORPQ_OPT_ENUM, \
	 .names = smooth_names, .def = CQ_SMOOTH_EXP}, \
	{.key = "smooth_value", CORPQ_OPT_FIELD(T, P smooth_value), .type = CORPQ_OPT_NUMBER, \
	 .range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 1e6, .flags = CORPQ_OPT_UNSET}, \
	{.key = "effective_order", CORPQ_OPT_FIELD(T, P effective_order), .type = CORPQ_OPT_BOOL, \
	 .def = (EFF)}

#define CHRF_ROWS(T, P) \
	{.key = "char_order", CORPQ_OPT_FIELD(T, P char_order), .type = CORPQ_OPT_INT, \
	 .min = 1, .max = CQ_CHRF_MAX_CHAR_ORDER, .def = 6}, \
	{.key = "word_order", CORPQ_OPT_FIELD(T, P word_order), .type = CORPQ_OPT_INT, \
	 .min = 0, .max = CQ_CHRF_MAX_WORD_ORDER, .def = 0}, \
	{.key = "beta", CORPQ_OPT_FIELD(T, P beta), .type = CORPQ_OPT_NUMBER, \
	 .range = CORPQ_RANGE_POSITIVE, .hi = 1000, .def = 2}, \
	{.key = "whitespace", CORPQ_OPT_FIELD(T, P whitespace), .type = CORPQ_OPT_BOOL}, \
	{.key = "eps_smoothing", CORPQ_OPT_FIELD(T, P eps_smoothing), .type = CORPQ_OPT_BOOL}

static const CorpqOption bleu_rows[] = {BLEU_ROWS(cq_bleu_options,, false), {0}};
static const CorpqOption sentence_bleu_rows[] = {BLEU_ROWS(cq_bleu_options,, true), {0}};
static const CorpqOption chrf_rows[] = {
	CHRF_ROWS(cq_chrf_options,),
	{.key = "lowercase", CORPQ_OPT_FIELD(cq_chrf_options, lowercase), .type = CORPQ_OPT_BOOL},
	{0}
};
static const CorpqOption bootstrap_rows[] = {
	{.key = "metric", CORPQ_OPT_FIELD(MetricOptions, kind), .type = CORPQ_OPT_ENUM,
	.names = metric_names, .def = METRIC_BLEU},
	BLEU_ROWS(MetricOptions, bleu., false),
	CHRF_ROWS(MetricOptions, chrf.),
	{0}
};

static const CorpqOptionTable bleu_table = {"BLEU", bleu_rows};
static const CorpqOptionTable sentence_bleu_table = {"BLEU", sentence_bleu_rows};
static const CorpqOptionTable chrf_table = {"chrF", chrf_rows};
static const CorpqOptionTable bootstrap_table = {"paired_bootstrap", bootstrap_rows};

/* sacreBLEU takes a smoothing value for floor and add-k only (it ignores it
 * for the others; corpq says so rather than ignore it). */
static void
resolve_smooth_value(cq_bleu_options *b)
{
	if (CORPQ_OPT_IS_UNSET(b->smooth_value))
		b->smooth_value = cq_bleu_smooth_default(b->smooth);
	else if (b->smooth != CQ_SMOOTH_FLOOR && b->smooth != CQ_SMOOTH_ADD_K)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("BLEU option \"smooth_value\" applies only to smooth \"floor\" and \"add-k\""),
				 errhint("Leave smooth_value out, or choose smooth \"floor\" or \"add-k\".")));
}

void
metrics_options_parse(MetricKind kind, bool sentence, Jsonb *options, MetricOptions *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	cq_bleu_options_init(&o->bleu);
	cq_chrf_options_init(&o->chrf);
	if (kind == METRIC_BLEU)
	{
		corpq_options_parse(sentence ? &sentence_bleu_table : &bleu_table, options, &o->bleu);
		resolve_smooth_value(&o->bleu);
	}
	else
		corpq_options_parse(&chrf_table, options, &o->chrf);
}

/* ERROR if options has a key that only the other metric takes. */
static void
reject_foreign_keys(Jsonb *options, const CorpqOption *rows, const char *metric)
{
	if (options == NULL || !JB_ROOT_IS_OBJECT(options))
		return;
	for (const CorpqOption *row = rows; row->key; row++)
	{
		if (strcmp(row->key, "lowercase") == 0)
			continue;			/* both metrics take it */
		if (getKeyJsonValueFromContainer(&options->root, row->key, strlen(row->key), NULL))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("paired_bootstrap option \"%s\" does not apply to metric \"%s\"",
							row->key, metric)));
	}
}

void
metrics_bootstrap_options_parse(Jsonb *options, MetricOptions *o)
{
	static const CorpqOption only_bleu[] = {BLEU_ROWS(cq_bleu_options,, false), {0}};
	static const CorpqOption only_chrf[] = {CHRF_ROWS(cq_chrf_options,), {0}};

	memset(o, 0, sizeof(*o));
	cq_bleu_options_init(&o->bleu);
	cq_chrf_options_init(&o->chrf);
	corpq_options_parse(&bootstrap_table, options, o);
	if (o->kind == METRIC_BLEU)
	{
		reject_foreign_keys(options, only_chrf, "bleu");
		resolve_smooth_value(&o->bleu);
	}
	else
	{
		reject_foreign_keys(options, only_bleu, "chrf");
		o->chrf.lowercase = o->bleu.lowercase;
	}
}
