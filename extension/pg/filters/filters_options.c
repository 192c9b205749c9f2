/*
 * The option tables of filters/ (filters.h): each filter kind's args and
 * threshold, one table of the shared parser per kind, and the kinds.
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "pg/base/options.h"
#include "pg/filters/filters.h"
#include "pg/model/model.h"

static const char *const unit_names[] = {"word", "char", NULL};

#define ARG(field) CORPQ_OPT_FIELD(FilterArgs, field)
#define SIDE_ROWS(what) \
	{.key = "src", ARG(src), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET, \
	 .valid = corpq_option_nonempty, .expected = what}, \
	{.key = "tgt", ARG(tgt), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET, \
	 .valid = corpq_option_nonempty, .expected = what}

/* Thresholds: OpusFilter's defaults, bounded to where the filter can decide. */
static const CorpqOption length_ratio_rows[] = {
	{.key = "unit", ARG(unit), .type = CORPQ_OPT_ENUM, .names = unit_names, .def = CQ_UNIT_WORD},
	/* the ratio is >= 1 (or 0 for two empty sides) */
	{.key = "threshold", ARG(threshold), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_CLOSED, .lo = 1, .hi = 1e6, .def = 3},
	{0}
};
static const CorpqOption char_script_rows[] = {
	SIDE_ROWS("a Unicode script name such as \"Latin\""),
	{.key = "threshold", ARG(threshold), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 1, .def = 1},
	{0}
};
/*
 * Not OpusFilter's defaults (spaces counted, 0.75), which reject a tenth of
 * clean Bible verses and a quarter of software messages: letters among the
 * non-space characters, at a threshold measured on the shared corpora
 * (docs/filters.md).
 */
static const CorpqOption alpha_ratio_rows[] = {
	{.key = "exclude_whitespace", ARG(exclude_whitespace), .type = CORPQ_OPT_BOOL, .def = true},
	{.key = "threshold", ARG(threshold), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 1, .def = 0.5},
	{0}
};
static const CorpqOption terminal_punct_rows[] = {
	/* the score is -ln(1 + penalty) <= 0 */
	{.key = "threshold", ARG(threshold), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_CLOSED, .lo = -1000, .hi = 0, .def = -2},
	{0}
};
static const CorpqOption numerals_rows[] = {
	{.key = "threshold", ARG(threshold), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 1, .def = 0.5},
	{0}
};
static const CorpqOption repetition_rows[] = {
	{.key = "min_length", ARG(min_length), .type = CORPQ_OPT_INT, .min = 1, .max = 1000, .def = 3},
	{.key = "max_length", ARG(max_length), .type = CORPQ_OPT_INT, .min = 0, .max = 1000, .def = 100},
	/* repetitions of a string after its first occurrence */
	{.key = "threshold", ARG(ithreshold), .type = CORPQ_OPT_INT, .min = 1, .max = 1000, .def = 2},
	{0}
};
/*
 * keep_same_tags: not OpusFilter's rule, which rejects every tag; a pair
 * whose sides carry the same tags (localisation strings keep their markup
 * in translation) passes, markup on one side or different markup does not.
 */
static const CorpqOption html_tags_rows[] = {
	{.key = "keep_same_tags", ARG(keep_same_tags), .type = CORPQ_OPT_BOOL, .def = false},
	{0}
};
/*
 * Cld2Filter judges every answer; these defaults (measured in
 * docs/filters.md) give CLD2 the expected language as its hint and leave
 * alone the sides it cannot judge reliably, i.e. too short ones.
 */
static const CorpqOption langid_rows[] = {
	SIDE_ROWS("a language code such as \"en\""),
	{.key = "hint", ARG(hint), .type = CORPQ_OPT_BOOL, .def = true},
	{.key = "keep_unreliable", ARG(keep_unreliable), .type = CORPQ_OPT_BOOL, .def = true},
	{.key = "min_chars", ARG(min_chars), .type = CORPQ_OPT_INT, .min = 0, .max = 100000, .def = 0},
	/* keeps a confidence > threshold, so 1 would reject everything */
	{.key = "threshold", ARG(threshold), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_OPEN_HI, .lo = 0, .hi = 1, .def = 0},
	{0}
};

/*
 * The score is in (0, 1] and its scale depends on the models and the data
 * (no default would mean the same for two pairs of models): the threshold
 * must be given.  on_too_long: a pair longer than a model accepts has no
 * score, and the filter rejects it ("null"), or it is an ERROR ("error").
 */
static const CorpqOption dual_xent_rows[] = {
	{.key = "forward", ARG(forward), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	 .valid = corpq_option_nonempty, .expected = "a model (src -> tgt) name or name@N"},
	{.key = "backward", ARG(backward), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	 .valid = corpq_option_nonempty, .expected = "a model (tgt -> src) name or name@N"},
	{.key = "on_too_long", ARG(on_too_long), .type = CORPQ_OPT_ENUM, .names = corpq_too_long_names,
	 .def = CORPQ_TOO_LONG_NULL},
	{.key = "threshold", ARG(threshold), .type = CORPQ_OPT_NUMBER, .flags = CORPQ_OPT_UNSET,
	.range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 1},
	{0}
};

/*
 * The cosine of the two sides' vectors from one encoder model, in [-1, 1];
 * where a pair of translations lies depends on the model (an untrained one
 * puts every pair near 1) and the languages: the threshold must be given.
 * on_too_long: as dual_xent's.  reject_copies, on by default: an untranslated
 * copy scores above real translations (measured in docs/filters.md), so a
 * threshold alone keeps exactly the copies, and a real translation is
 * almost never a copy.
 */
static const CorpqOption embedding_cosine_rows[] = {
	{.key = "model", ARG(model), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	 .valid = corpq_option_nonempty, .expected = "an encoder model name or name@N"},
	{.key = "on_too_long", ARG(on_too_long), .type = CORPQ_OPT_ENUM, .names = corpq_too_long_names,
	 .def = CORPQ_TOO_LONG_NULL},
	{.key = "reject_copies", ARG(reject_copies), .type = CORPQ_OPT_BOOL, .def = true},
	{.key = "threshold", ARG(threshold), .type = CORPQ_OPT_NUMBER, .flags = CORPQ_OPT_UNSET,
	.range = CORPQ_RANGE_CLOSED, .lo = -1, .hi = 1},
	{0}
};

/*
 * corpq.pair_quality(): a probability calibrated on the classifier's
 * held-out pairs, so 0.5 means the same for every classifier (Bicleaner's
 * threshold); 0 and 1 would keep or reject everything.  A pair with no
 * probability (a model feature NULL) is rejected.
 */
static const CorpqOption classifier_rows[] = {
	{.key = "classifier", ARG(classifier), .type = CORPQ_OPT_STRING, .flags = CORPQ_OPT_UNSET,
	 .valid = corpq_option_nonempty, .expected = "a classifier name or name@N"},
	{.key = "threshold", ARG(threshold), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_OPEN, .lo = 0, .hi = 1, .def = 0.5},
	{0}
};

static const FilterKind kinds[] = {
	{"length_ratio", CQ_FILTER_LENGTH_RATIO, {"length_ratio filter", length_ratio_rows}},
	{"char_script_ratio", CQ_FILTER_CHAR_SCRIPT, {"char_script_ratio filter", char_script_rows}},
	{"alpha_ratio", CQ_FILTER_ALPHA_RATIO, {"alpha_ratio filter", alpha_ratio_rows}},
	{"terminal_punct", CQ_FILTER_TERMINAL_PUNCT, {"terminal_punct filter", terminal_punct_rows}},
	{"numerals_match", CQ_FILTER_NUMERALS, {"numerals_match filter", numerals_rows}},
	{"repetition", CQ_FILTER_REPETITION, {"repetition filter", repetition_rows}},
	{"html_tags", CQ_FILTER_HTML_TAGS, {"html_tags filter", html_tags_rows}},
	{"langid", CQ_FILTER_LANGID, {"langid filter", langid_rows}},
	{"dual_xent", 0, {"dual_xent filter", dual_xent_rows}, .model = FILTER_MODEL_DUAL_XENT},
	{"embedding_cosine", 0, {"embedding_cosine filter", embedding_cosine_rows},
	.model = FILTER_MODEL_EMBEDDING_COSINE},
	{"classifier", 0, {"classifier filter", classifier_rows}, .model = FILTER_MODEL_CLASSIFIER},
};

char *
filter_kind_names(void)
{
	StringInfoData b;

	initStringInfo(&b);
	for (size_t i = 0; i < lengthof(kinds); i++)
		appendStringInfo(&b, "%s%s", i ? ", " : "", kinds[i].name);
	return b.data;
}

const FilterKind *
filter_kind_find(const char *name)
{
	for (size_t i = 0; i < lengthof(kinds); i++)
		if (strcmp(kinds[i].name, name) == 0)
			return &kinds[i];
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown filter \"%s\"", name),
			 errhint("Valid filters are: %s.", filter_kind_names())));
	pg_unreachable();
}

#undef ARG
