/*
 * lexicon_train() options: validation at submission (and again in the
 * worker), the resolved JSON stored with the job and the lexicon, and the
 * mapping onto the core's fast_align options.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_collation.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/formatting.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "pg/lexicon_catalog.h"

#define VALID_KEYS "model, iterations, p0, tension, optimize_tension, " \
	"variational_bayes, alpha, favor_diagonal, symmetrize, bpe, lowercase, replace"

static void
defaults(LexOptions *o)
{
	memset(o, 0, sizeof(*o));
	o->ibm1 = false;
	o->iterations = 5;
	o->p0 = 0.08;
	o->tension = 4.0;
	o->optimize_tension = true;
	o->variational_bayes = false;
	o->alpha = 0.01;
	o->favor_diagonal = true;
	o->symmetrize = CQ_SYM_GROW_DIAG_FINAL_AND;
	o->bpe = pstrdup(CORPQ_WHITESPACE);
	o->lowercase = false;
	o->replace = false;
}

static void
bad_value(const char *key, const char *expected)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for lexicon option \"%s\"", key),
			 errdetail("Expected %s.", expected)));
}

static bool
get_bool(const char *key, JsonbValue *v)
{
	if (v->type != jbvBool)
		bad_value(key, "true or false");
	return v->val.boolean;
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

static char *
get_string(const char *key, JsonbValue *v, const char *expected)
{
	if (v->type != jbvString)
		bad_value(key, expected);
	return pnstrdup(v->val.string.val, v->val.string.len);
}

static void
set_option(LexOptions *o, const char *key, JsonbValue *v)
{
	char	   *s;

	if (strcmp(key, "model") == 0)
	{
		s = get_string(key, v, "\"fast_align\" or \"ibm1\"");
		if (strcmp(s, "fast_align") != 0 && strcmp(s, "ibm1") != 0)
			bad_value(key, "\"fast_align\" or \"ibm1\"");
		o->ibm1 = strcmp(s, "ibm1") == 0;
	}
	else if (strcmp(key, "iterations") == 0)
	{
		double		d = get_number(key, v, 1, 1000, false, "an integer from 1 to 1000");

		if (d != floor(d))
			bad_value(key, "an integer from 1 to 1000");
		o->iterations = (int) d;
	}
	else if (strcmp(key, "p0") == 0)
	{
		o->p0 = get_number(key, v, 0, 1, false, "a number in [0, 1)");
		if (o->p0 >= 1)
			bad_value(key, "a number in [0, 1)");
	}
	else if (strcmp(key, "tension") == 0)
		o->tension = get_number(key, v, 0, 1e6, true, "a positive number");
	else if (strcmp(key, "alpha") == 0)
		o->alpha = get_number(key, v, 0, 1e6, true, "a positive number");
	else if (strcmp(key, "optimize_tension") == 0)
		o->optimize_tension = get_bool(key, v);
	else if (strcmp(key, "variational_bayes") == 0)
		o->variational_bayes = get_bool(key, v);
	else if (strcmp(key, "favor_diagonal") == 0)
		o->favor_diagonal = get_bool(key, v);
	else if (strcmp(key, "lowercase") == 0)
		o->lowercase = get_bool(key, v);
	else if (strcmp(key, "replace") == 0)
		o->replace = get_bool(key, v);
	else if (strcmp(key, "symmetrize") == 0)
	{
		const char *expected = "\"grow-diag-final-and\", \"intersect\" or \"union\"";

		s = get_string(key, v, expected);
		if (strcmp(s, "grow-diag-final-and") == 0)
			o->symmetrize = CQ_SYM_GROW_DIAG_FINAL_AND;
		else if (strcmp(s, "intersect") == 0)
			o->symmetrize = CQ_SYM_INTERSECT;
		else if (strcmp(s, "union") == 0)
			o->symmetrize = CQ_SYM_UNION;
		else
			bad_value(key, expected);
	}
	else if (strcmp(key, "bpe") == 0)
	{
		o->bpe = get_string(key, v, "the name of a BPE model, or \"whitespace\"");
		if (o->bpe[0] == '\0')
			bad_value(key, "the name of a BPE model, or \"whitespace\"");
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown lexicon option \"%s\"", key),
				 errhint("Valid options are: " VALID_KEYS ".")));
}

void
lexicon_options_parse(Jsonb *options, LexOptions *o)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *key = NULL;

	defaults(o);
	if (options == NULL)
		return;
	if (!JB_ROOT_IS_OBJECT(options) || JB_ROOT_IS_SCALAR(options))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lexicon options must be a JSON object"),
				 errhint("Valid options are: " VALID_KEYS ".")));
	it = JsonbIteratorInit(&options->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			key = pnstrdup(v.val.string.val, v.val.string.len);
		else if (tok == WJB_VALUE)
			set_option(o, key, &v);
	}
	/* Model 1 is fast_align's trainer with a uniform alignment prior. */
	if (o->ibm1)
	{
		o->favor_diagonal = false;
		o->optimize_tension = false;
	}
}

const char *
lexicon_sym_name(cq_sym_mode m)
{
	switch (m)
	{
		case CQ_SYM_INTERSECT:
			return "intersect";
		case CQ_SYM_UNION:
			return "union";
		case CQ_SYM_GROW_DIAG:
			return "grow-diag";
		case CQ_SYM_GROW_DIAG_FINAL:
			return "grow-diag-final";
		case CQ_SYM_GROW_DIAG_FINAL_AND:
			return "grow-diag-final-and";
	}
	return "grow-diag-final-and";
}

char *
lexicon_options_json(const LexOptions *o)
{
	StringInfoData b;

	initStringInfo(&b);
	/* float8out_internal: the shortest text that reads back exactly */
	appendStringInfo(&b, "{\"model\": \"%s\", \"iterations\": %d, \"p0\": %s, "
					 "\"tension\": %s, \"optimize_tension\": %s, "
					 "\"variational_bayes\": %s, \"alpha\": %s, "
					 "\"favor_diagonal\": %s, \"symmetrize\": \"%s\", \"bpe\": ",
					 o->ibm1 ? "ibm1" : "fast_align", o->iterations, float8out_internal(o->p0),
					 float8out_internal(o->tension), o->optimize_tension ? "true" : "false",
					 o->variational_bayes ? "true" : "false", float8out_internal(o->alpha),
					 o->favor_diagonal ? "true" : "false",
					 lexicon_sym_name(o->symmetrize));
	escape_json(&b, o->bpe);
	appendStringInfo(&b, ", \"lowercase\": %s, \"replace\": %s}",
					 o->lowercase ? "true" : "false", o->replace ? "true" : "false");
	return b.data;
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
