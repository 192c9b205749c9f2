/*
 * Filter specs: parse the jsonb list, resolve names, write SQL predicates.
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"

#include "filters/langid.h"
#include "pg/base/errors.h"
#include "pg/base/options.h"
#include "pg/classifier/classifier.h"
#include "pg/model/model.h"
#include "pg/filters/filters.h"

#define SPEC_HINT "A filter is {\"name\": \"length_ratio\", \"args\": {\"unit\": \"word\"}, \"threshold\": 3, \"label\": \"...\"}; name is required, the rest optional."

static char *
script_names(void)
{
	StringInfoData b;
	bool		first = true;

	initStringInfo(&b);
	for (int i = 0; i < cq_script_count(); i++)
	{
		const char *name = cq_script_name(i);

		if (name)
		{
			appendStringInfo(&b, "%s%s", first ? "" : ", ", name);
			first = false;
		}
	}
	return b.data;
}

int
filter_script(const char *name)
{
	int			script = cq_script_from_name(name);

	if (script < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown script \"%s\"", name),
				 errhint("Valid scripts (Unicode names, long or short) are: %s.", script_names())));
	return script;
}

int
filter_language(const char *code)
{
	int			lang = cq_langid_lookup(code);

	if (lang < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown language \"%s\"", code),
				 errhint("SELECT code, name FROM corpq.langid_languages() lists the languages.")));
	return lang;
}

static char *
jsonb_string(const JsonbValue *v, const char *what, int index)
{
	if (v->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s of filter %d must be a JSON string", what, index + 1),
				 errhint(SPEC_HINT)));
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* args (an object, or NULL) with "threshold" added, as one jsonb object. */
static Jsonb *
merge_args(JsonbValue *args, JsonbValue *threshold, int index)
{
	JsonbParseState *st = NULL;
	JsonbValue *res;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	if (args)
	{
		JsonbIterator *it;
		JsonbValue	v;
		JsonbIteratorToken tok;

		if (args->type != jbvBinary || !JsonContainerIsObject(args->val.binary.data))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("args of filter %d must be a JSON object", index + 1),
					 errhint(SPEC_HINT)));
		it = JsonbIteratorInit(args->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			if (tok == WJB_KEY && v.val.string.len == 9 &&
				strncmp(v.val.string.val, "threshold", 9) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("threshold of filter %d is inside its args", index + 1),
						 errhint(SPEC_HINT)));
			if (tok == WJB_KEY || tok == WJB_VALUE)
				pushJsonbValue(&st, tok, &v);
		}
	}
	if (threshold)
	{
		JsonbValue	k;

		k.type = jbvString;
		k.val.string.val = "threshold";
		k.val.string.len = 9;
		pushJsonbValue(&st, WJB_KEY, &k);
		pushJsonbValue(&st, WJB_VALUE, threshold);
	}
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}

/* What the messages about a model filter kind say. */
typedef struct ModelKindText
{
	const char *example;		/* hint: a spec item of the kind */
	const char *scale;			/* detail: the score's range */
	const char *look;			/* hint: where to look for a threshold */
} ModelKindText;

static const ModelKindText model_texts[] = {
	[FILTER_MODEL_DUAL_XENT] = {
		"For example {\"name\": \"dual_xent\", \"args\": {\"forward\": \"en-es\", \"backward\": \"es-en\"}, \"threshold\": 0.2}.",
		"The score is in (0, 1]; where to cut depends on the models and the corpus.",
		"Look at the distribution of corpq.dual_xent_scores() over a sample first."
	},
	[FILTER_MODEL_EMBEDDING_COSINE] = {
		"For example {\"name\": \"embedding_cosine\", \"args\": {\"model\": \"enc\"}, \"threshold\": 0.5}.",
		"The score is a cosine in [-1, 1]; where to cut depends on the model and the corpus.",
		"Look at the distribution of corpq.embedding_cosine() over a sample first (corpq.score_histogram())."
	},
	[FILTER_MODEL_CLASSIFIER] = {
		"For example {\"name\": \"classifier\", \"args\": {\"classifier\": \"pq\"}, \"threshold\": 0.5}.",
		"The score is a probability in [0, 1].",
		"The default, 0.5, is the probability's middle."
	},
};

/*
 * ERROR unless a model filter's model spec is one the parser accepts (see
 * FilterModels): with FILTER_MODELS_PINNED only "name@N"; what: "forward model".
 */
static void
check_pinned(const char *spec, const char *what, const FilterKind *k, FilterModels models)
{
	int			name_len;
	int32		version;

	if (models == FILTER_MODELS_PINNED && !corpq_model_split_spec(spec, &name_len, &version))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s \"%s\" of the %s filter is not a pinned version", what, spec, k->name),
				 errdetail("filter_keeps, filter_rejects and filter_stats are IMMUTABLE, and the latest version of a name can change."),
				 errhint("Write \"%s@N\" for version N, or use filter_report() or filter_predicate(), which pin the latest version.",
						 spec)));
}

/* ERROR unless the filter's model args are given. */
static void
require_models(const FilterSpec *s, const FilterKind *k)
{
	const FilterArgs *a = &s->args;

	if (k->model == FILTER_MODEL_DUAL_XENT && (a->forward == NULL || a->backward == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s filter needs args forward and backward", k->name),
				 errhint("%s", model_texts[k->model].example)));
	if (k->model == FILTER_MODEL_EMBEDDING_COSINE && a->model == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s filter needs arg model", k->name),
				 errhint("%s", model_texts[k->model].example)));
	if (k->model == FILTER_MODEL_CLASSIFIER && a->classifier == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s filter needs arg classifier", k->name),
				 errhint("%s", model_texts[k->model].example)));
}

/* A model filter's args, checked, names pinned. */
static void
resolve_model(FilterSpec *s, const FilterKind *k, FilterModels models)
{
	FilterArgs *a = &s->args;

	require_models(s, k);
	if (CORPQ_OPT_IS_UNSET(a->threshold))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s filter needs a threshold", k->name),
				 errdetail("%s", model_texts[k->model].scale),
				 errhint("%s", model_texts[k->model].look)));
	if (k->model == FILTER_MODEL_EMBEDDING_COSINE)
	{
		check_pinned(a->model, "model", k, models);
		a->model = corpq_model_pin(a->model);
	}
	else if (k->model == FILTER_MODEL_CLASSIFIER)
	{
		/* an unknown name or version: ERROR here, before any row is read */
		check_pinned(a->classifier, "classifier", k, models);
		a->classifier = classifier_pin(a->classifier);
	}
	else
	{
		check_pinned(a->forward, "forward model", k, models);
		a->forward = corpq_model_pin(a->forward);
		check_pinned(a->backward, "backward model", k, models);
		a->backward = corpq_model_pin(a->backward);
	}
	s->model = true;
	s->model_kind = k->model;
}

/* The core filter from parsed args. */
static void
resolve(FilterSpec *s, const FilterKind *k, FilterModels models)
{
	FilterArgs *a = &s->args;
	cq_filter  *f = &s->filter;

	memset(f, 0, sizeof(*f));
	s->model = false;
	s->model_kind = FILTER_MODEL_NONE;
	s->dual_xent = NULL;
	s->embed_cosine = NULL;
	s->classifier = NULL;
	if (k->model)
	{
		resolve_model(s, k, models);
		return;
	}
	f->kind = k->kind;
	f->threshold = a->threshold;
	f->unit = (cq_length_unit) a->unit;
	f->exclude_whitespace = a->exclude_whitespace;
	f->keep_same_tags = a->keep_same_tags;
	f->min_length = a->min_length;
	f->max_length = a->max_length;
	if (k->kind == CQ_FILTER_REPETITION)
	{
		f->threshold = a->ithreshold;
		if (a->max_length < a->min_length - 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("repetition filter needs max_length >= min_length - 1"),
					 errdetail("min_length is %d, max_length %d.", a->min_length, a->max_length)));
	}
	if (k->kind == CQ_FILTER_CHAR_SCRIPT || k->kind == CQ_FILTER_LANGID)
	{
		if (a->src == NULL || a->tgt == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s filter needs args src and tgt", k->name),
					 errhint(k->kind == CQ_FILTER_LANGID ?
							 "For example {\"name\": \"langid\", \"args\": {\"src\": \"en\", \"tgt\": \"es\"}}." :
							 "For example {\"name\": \"char_script_ratio\", \"args\": {\"src\": \"Latin\", \"tgt\": \"Cyrillic\"}}.")));
		if (k->kind == CQ_FILTER_CHAR_SCRIPT)
		{
			f->src_script = filter_script(a->src);
			f->tgt_script = filter_script(a->tgt);
		}
		else
		{
			f->src_lang = filter_language(a->src);
			f->tgt_lang = filter_language(a->tgt);
			f->langid.hint = a->hint;
			f->langid.keep_unreliable = a->keep_unreliable;
			f->langid.min_chars = a->min_chars;
		}
	}
}

static void
parse_item(JsonbValue *item, int index, FilterSpec *s, FilterModels models)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *key = NULL;
	char	   *name = NULL;
	JsonbValue	args = {0},
				threshold = {0};
	bool		has_args = false,
				has_threshold = false;
	const FilterKind *k;

	if (item->type != jbvBinary || !JsonContainerIsObject(item->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("filter %d must be a JSON object", index + 1),
				 errhint(SPEC_HINT)));
	s->label = NULL;
	it = JsonbIteratorInit(item->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			key = pnstrdup(v.val.string.val, v.val.string.len);
		else if (tok != WJB_VALUE)
			continue;
		else if (strcmp(key, "name") == 0)
			name = jsonb_string(&v, "name", index);
		else if (strcmp(key, "label") == 0)
			s->label = jsonb_string(&v, "label", index);
		else if (strcmp(key, "args") == 0)
			args = v, has_args = true;
		else if (strcmp(key, "threshold") == 0)
			threshold = v, has_threshold = true;
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown key \"%s\" in filter %d", key, index + 1),
					 errhint(SPEC_HINT)));
	}
	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("filter %d has no name", index + 1),
				 errhint("Valid filters are: %s.", filter_kind_names())));
	k = filter_kind_find(name);
	s->name = k->name;
	if (s->label == NULL)
		s->label = pstrdup(k->name);
	corpq_options_parse(&k->options,
						merge_args(has_args ? &args : NULL, has_threshold ? &threshold : NULL, index),
						&s->args);
	resolve(s, k, models);
}

FilterList *
filter_list_parse(Jsonb *spec, FilterModels models)
{
	FilterList *list = palloc0(sizeof(FilterList));
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			n;

	if (!JB_ROOT_IS_ARRAY(spec) || JB_ROOT_IS_SCALAR(spec))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("filter spec must be a JSON array of filters"),
				 errhint(SPEC_HINT)));
	n = JB_ROOT_COUNT(spec);
	list->cxt = CurrentMemoryContext;
	list->items = palloc0(sizeof(FilterSpec) * Max(n, 1));
	it = JsonbIteratorInit(&spec->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM)
			continue;
		parse_item(&v, list->n, &list->items[list->n], models);
		for (int i = 0; i < list->n; i++)
			if (strcmp(list->items[i].label, list->items[list->n].label) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("filters %d and %d are both labelled \"%s\"",
								i + 1, list->n + 1, list->items[i].label),
						 errhint("Give one of them a \"label\".")));
		if (strcmp(list->items[list->n].label, FILTER_ALL_LABEL) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("filter label \"%s\" is reserved", FILTER_ALL_LABEL),
					 errdetail("Reports use it for the pairs rejected by any filter.")));
		if (list->items[list->n].model)
			list->n_models++;
		list->n++;
	}
	return list;
}

/* The rows of table t whose key is (or, with keep_threshold false, is not) "threshold". */
static CorpqOptionTable
threshold_rows(const CorpqOptionTable *t, bool threshold)
{
	int			n = 0;
	CorpqOption *rows;
	CorpqOptionTable out = *t;

	for (const CorpqOption *r = t->rows; r->key; r++)
		n++;
	rows = palloc0(sizeof(CorpqOption) * (n + 1));
	n = 0;
	for (const CorpqOption *r = t->rows; r->key; r++)
		if ((strcmp(r->key, "threshold") == 0) == threshold)
			rows[n++] = *r;
	out.rows = rows;
	return out;
}

/*
 * Filter s as one spec item with every default written out, e.g.
 * {"name": "length_ratio", "args": {"unit": "word"}, "threshold": 3}: what a
 * stored predicate means must not change when a default does.
 */
static char *
filter_item_json(const FilterSpec *s, bool with_label)
{
	const FilterKind *k = filter_kind_find(s->name);
	CorpqOptionTable args = threshold_rows(&k->options, false);
	CorpqOptionTable thr = threshold_rows(&k->options, true);
	char	   *t = corpq_options_json(&thr, &s->args);
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "{\"name\": ");
	escape_json(&b, s->name);
	appendStringInfo(&b, ", \"args\": %s", corpq_options_json(&args, &s->args));
	/* t is "{}" or {"threshold": x}: its member joins the item */
	if (strlen(t) > 2)
		appendStringInfo(&b, ", %.*s", (int) strlen(t) - 2, t + 1);
	if (with_label)
	{
		appendStringInfoString(&b, ", \"label\": ");
		escape_json(&b, s->label);
	}
	appendStringInfoChar(&b, '}');
	return b.data;
}

Jsonb *
filter_list_jsonb(const FilterList *list)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoChar(&b, '[');
	for (int i = 0; i < list->n; i++)
		appendStringInfo(&b, "%s%s", i ? ", " : "", filter_item_json(&list->items[i], true));
	appendStringInfoChar(&b, ']');
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(b.data)));
}

char *
filter_keep_sql(const FilterSpec *s, const char *src, const char *tgt)
{
	char	   *spec = psprintf("[%s]", filter_item_json(s, false));

	return psprintf("corpq.filter_keeps(%s, %s, %s)", src, tgt, quote_literal_cstr(spec));
}

void
filter_utext(text *t, cq_utext *u)
{
	cq_error	err;

	if (cq_utext_init(u, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not decode text");
}
