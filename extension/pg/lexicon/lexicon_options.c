/*
 * lexicon_train() options: validation at submission (and again in the
 * worker), the resolved JSON stored with the job and the lexicon, and the
 * mapping onto the core's fast_align options.
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "utils/formatting.h"

#include "pg/base/options.h"
#include "pg/jobs/jobs.h"
#include "pg/lexicon/lexicon.h"

static const char *const model_names[] = {"fast_align", "ibm1", NULL};

/* the symmetrisations a user may ask for (the core has two more) */
static const char *const sym_names[] = {"grow-diag-final-and", "intersect", "union", NULL};
static const int sym_values[] = {CQ_SYM_GROW_DIAG_FINAL_AND, CQ_SYM_INTERSECT, CQ_SYM_UNION};

StaticAssertDecl(sizeof(cq_sym_mode) == sizeof(int), "an ENUM option is stored as an int");

static const CorpqOption rows[] = {
	{.key = "model", CORPQ_OPT_FIELD(LexOptions, model), .type = CORPQ_OPT_ENUM,
	.names = model_names, .def = LEX_MODEL_FAST_ALIGN},
	{.key = "iterations", CORPQ_OPT_FIELD(LexOptions, iterations), .type = CORPQ_OPT_INT,
	.min = 1, .max = 1000, .def = 5},
	{.key = "p0", CORPQ_OPT_FIELD(LexOptions, p0), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_OPEN_HI, .lo = 0, .hi = 1, .def = 0.08},
	/* the trainer refuses a larger tension (and a job would fail late) */
	{.key = "tension", CORPQ_OPT_FIELD(LexOptions, tension), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_POSITIVE, .hi = CQ_FA_MAX_TENSION, .def = 4.0},
	{.key = "optimize_tension", CORPQ_OPT_FIELD(LexOptions, optimize_tension),
	.type = CORPQ_OPT_BOOL, .def = true},
	{.key = "variational_bayes", CORPQ_OPT_FIELD(LexOptions, variational_bayes),
	.type = CORPQ_OPT_BOOL, .def = false},
	{.key = "alpha", CORPQ_OPT_FIELD(LexOptions, alpha), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_POSITIVE, .hi = 1e6, .def = 0.01},
	{.key = "favor_diagonal", CORPQ_OPT_FIELD(LexOptions, favor_diagonal),
	.type = CORPQ_OPT_BOOL, .def = true},
	{.key = "symmetrize", CORPQ_OPT_FIELD(LexOptions, symmetrize), .type = CORPQ_OPT_ENUM,
	.names = sym_names, .values = sym_values, .def = CQ_SYM_GROW_DIAG_FINAL_AND},
	{.key = "bpe", CORPQ_OPT_FIELD(LexOptions, bpe), .type = CORPQ_OPT_STRING,
		.def_string = CORPQ_WHITESPACE, .valid = corpq_option_nonempty,
	.expected = "the name of a BPE model, or \"whitespace\""},
	{.key = "lowercase", CORPQ_OPT_FIELD(LexOptions, lowercase), .type = CORPQ_OPT_BOOL},
	{.key = "replace", CORPQ_OPT_FIELD(LexOptions, replace), .type = CORPQ_OPT_BOOL},
	CORPQ_JOB_THREADS_OPTION(LexOptions, threads),
	{0}
};

static const CorpqOptionTable table = {"lexicon", rows};

void
lexicon_options_parse(Jsonb *options, LexOptions *o)
{
	corpq_options_parse(&table, options, o);
	/* Model 1 is fast_align's trainer with a uniform alignment prior. */
	if (o->model == LEX_MODEL_IBM1)
	{
		o->favor_diagonal = false;
		o->optimize_tension = false;
	}
}

char *
lexicon_options_json(const LexOptions *o)
{
	return corpq_options_json(&table, o);
}

void
lexicon_fa_options(const LexOptions *o, bool reverse, cq_fa_options *fo)
{
	cq_fa_options_default(fo);
	fo->init.tension = o->tension;
	fo->init.p0 = o->p0;
	fo->init.favor_diagonal = o->favor_diagonal;
	fo->init.use_null = true;
	fo->iterations = o->iterations;
	fo->optimize_tension = o->optimize_tension;
	fo->variational_bayes = o->variational_bayes;
	fo->alpha = o->alpha;
	fo->reverse = reverse;
}

const cq_tokens *
lexicon_tokenize(CorpqSegmenter *seg, bool lowercase, const char *text, int len)
{
	const cq_tokens *t;
	char	   *lower = NULL;

	if (lowercase && len > 0)
	{
		lower = str_tolower(text, len, DEFAULT_COLLATION_OID);
		text = lower;
		len = strlen(lower);
	}
	t = corpq_segment(seg, text, len);
	if (lower)
		pfree(lower);
	return t;
}
