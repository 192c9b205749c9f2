/*
 * The rule filters as SQL functions, one score per call (filters/rules.h
 * has the definitions).  All are IMMUTABLE: they depend on the text and
 * the Unicode tables of the linked ICU only.
 */
#include "postgres.h"

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "filters/dedup.h"
#include "filters/rules.h"
#include "pg/base/errors.h"
#include "pg/filters/filters.h"

PG_FUNCTION_INFO_V1(corpq_text_length);
PG_FUNCTION_INFO_V1(corpq_length_ratio);
PG_FUNCTION_INFO_V1(corpq_char_script_ratio);
PG_FUNCTION_INFO_V1(corpq_alpha_ratio);
PG_FUNCTION_INFO_V1(corpq_terminal_punct_score);
PG_FUNCTION_INFO_V1(corpq_numerals_match);
PG_FUNCTION_INFO_V1(corpq_repetition);
PG_FUNCTION_INFO_V1(corpq_html_tags);
PG_FUNCTION_INFO_V1(corpq_dedup_key);
PG_FUNCTION_INFO_V1(corpq_is_copy);

static const char *const unit_names[] = {"word", "char", NULL};
static const char *const mode_names[] = {"exact", "lowercase", "letters", "near", NULL};
static const char *const side_names[] = {"both", "src", "tgt", NULL};

/* The index of name in names, or ERROR listing them. */
static int
choose(const char *const *names, const char *what, text *given)
{
	char	   *g = text_to_cstring(given);
	StringInfoData valid;

	for (int i = 0; names[i]; i++)
		if (strcmp(names[i], g) == 0)
			return i;
	initStringInfo(&valid);
	for (int i = 0; names[i]; i++)
		appendStringInfo(&valid, "%s%s", i ? ", " : "", names[i]);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown %s \"%s\"", what, g),
			 errhint("Valid values are: %s.", valid.data)));
	pg_unreachable();
}

static void
arg_utext(FunctionCallInfo fcinfo, int i, cq_utext *u)
{
	filter_utext(PG_GETARG_TEXT_PP(i), u);
}

Datum
corpq_text_length(PG_FUNCTION_ARGS)
{
	cq_utext	a;
	int			unit = choose(unit_names, "length unit", PG_GETARG_TEXT_PP(1));

	arg_utext(fcinfo, 0, &a);
	PG_RETURN_INT32((int32) cq_text_length(&a, (cq_length_unit) unit));
}

Datum
corpq_length_ratio(PG_FUNCTION_ARGS)
{
	cq_utext	a,
				b;
	int			unit = choose(unit_names, "length unit", PG_GETARG_TEXT_PP(2));

	arg_utext(fcinfo, 0, &a);
	arg_utext(fcinfo, 1, &b);
	PG_RETURN_FLOAT8(cq_length_ratio(&a, &b, (cq_length_unit) unit));
}

Datum
corpq_char_script_ratio(PG_FUNCTION_ARGS)
{
	cq_utext	a;
	int			script = filter_script(text_to_cstring(PG_GETARG_TEXT_PP(1)));

	arg_utext(fcinfo, 0, &a);
	PG_RETURN_FLOAT8(cq_char_script_ratio(&a, script));
}

Datum
corpq_alpha_ratio(PG_FUNCTION_ARGS)
{
	cq_utext	a;

	arg_utext(fcinfo, 0, &a);
	PG_RETURN_FLOAT8(cq_alpha_ratio(&a, PG_GETARG_BOOL(1)));
}

Datum
corpq_terminal_punct_score(PG_FUNCTION_ARGS)
{
	cq_utext	a,
				b;

	arg_utext(fcinfo, 0, &a);
	arg_utext(fcinfo, 1, &b);
	PG_RETURN_FLOAT8(cq_terminal_punct_score(&a, &b));
}

Datum
corpq_numerals_match(PG_FUNCTION_ARGS)
{
	cq_utext	a,
				b;
	double		ratio;
	cq_error	err;

	arg_utext(fcinfo, 0, &a);
	arg_utext(fcinfo, 1, &b);
	if (cq_numerals_match(&a, &b, &ratio, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not compare numerals");
	PG_RETURN_FLOAT8(ratio);
}

static void
check_range(const char *what, int v, int lo, int hi)
{
	if (v < lo || v > hi)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be from %d to %d", what, lo, hi),
				 errdetail("It is %d.", v)));
}

Datum
corpq_repetition(PG_FUNCTION_ARGS)
{
	cq_utext	a;
	int			max_length = PG_GETARG_INT32(1),
				threshold = PG_GETARG_INT32(2),
				min_length = PG_GETARG_INT32(3),
				count;
	cq_error	err;

	/* the bounds of the repetition filter's spec */
	check_range("min_length", min_length, 1, 1000);
	check_range("max_length", max_length, min_length - 1, 1000);
	check_range("threshold", threshold, 1, 1000);
	arg_utext(fcinfo, 0, &a);
	if (cq_repetition(&a, min_length, max_length, threshold, &count, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not look for repetitions");
	PG_RETURN_INT32(count);
}

Datum
corpq_html_tags(PG_FUNCTION_ARGS)
{
	cq_utext	a;

	arg_utext(fcinfo, 0, &a);
	PG_RETURN_BOOL(cq_html_tags(&a));
}

Datum
corpq_dedup_key(PG_FUNCTION_ARGS)
{
	cq_utext	a,
				b;
	int			mode = choose(mode_names, "dedup mode", PG_GETARG_TEXT_PP(2));
	int			side = choose(side_names, "dedup side", PG_GETARG_TEXT_PP(3));
	int64_t		key;
	cq_error	err;

	arg_utext(fcinfo, 0, &a);
	arg_utext(fcinfo, 1, &b);
	if (cq_dedup_key(&a, &b, (cq_dedup_mode) mode, (cq_dedup_side) side, &key, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not compute the duplicate key");
	PG_RETURN_INT64(key);
}

/* cq_dedup_is_copy(): curate()'s copy step and reject_copies of embedding_cosine */
Datum
corpq_is_copy(PG_FUNCTION_ARGS)
{
	cq_utext	a,
				b;
	bool		copy;
	cq_error	err;

	arg_utext(fcinfo, 0, &a);
	arg_utext(fcinfo, 1, &b);
	if (cq_dedup_is_copy(&a, &b, &copy, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not compare the sides");
	PG_RETURN_BOOL(copy);
}
