/*
 * corpq.classifier_train() options: one table (pg/base/options.h) plus the
 * "noise" object, whose keys are the noise labels (as synthetic_noise's
 * shares).  At submission the languages are checked against CLD2's table
 * and the models resolved and pinned (name@N of the version each names
 * now), so the job and the stored version use exactly those versions.  The
 * job parses the resolved JSON again.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"

#include "curate/features.h"
#include "filters/langid.h"
#include "pg/base/catalog.h"
#include "pg/base/options.h"
#include "curate/classifier.h"
#include "pg/classifier/classifier.h"
#include "pg/model/model.h"

#define OPT(field) CORPQ_OPT_FIELD(ClassifierOptions, field)
#define MODEL_ROW(k, field) \
	{.key = k, OPT(models.field), .type = CORPQ_OPT_STRING, .def_string = NULL, \
	 .valid = corpq_option_nonempty, .flags = CORPQ_OPT_UNSET}

static const char *const kind_names[] = {"trees", "logistic", NULL};
static const int kind_values[] = {CQ_CLASSIFIER_TREES, CQ_CLASSIFIER_LOGISTIC};

static const CorpqOption rows[] = {
	{.key = "src_lang", OPT(src_lang), .type = CORPQ_OPT_STRING, .def_string = NULL,
	.valid = corpq_option_nonempty, .flags = CORPQ_OPT_UNSET},
	{.key = "tgt_lang", OPT(tgt_lang), .type = CORPQ_OPT_STRING, .def_string = NULL,
	.valid = corpq_option_nonempty, .flags = CORPQ_OPT_UNSET},
	MODEL_ROW("encoder", encoder),
	MODEL_ROW("forward", forward),
	MODEL_ROW("backward", backward),
	MODEL_ROW("lexicon", lexicon),
	{.key = "other_language_query", OPT(other_language_query), .type = CORPQ_OPT_STRING,
	.def_string = NULL, .valid = corpq_option_nonempty, .flags = CORPQ_OPT_UNSET},
	{.key = "seed", OPT(seed), .type = CORPQ_OPT_INT64, .min = 0, .max = PG_INT64_MAX, .def = 1},
	{.key = "max_pairs", OPT(max_pairs), .type = CORPQ_OPT_INT,
	.min = CURATE_MIN_CLEAN_PAIRS, .max = 10000000, .def = 20000},
	{.key = "holdout", OPT(holdout), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_CLOSED, .lo = 0.05, .hi = 0.5, .def = 0.25},
	{.key = "classifier", OPT(kind), .type = CORPQ_OPT_ENUM, .names = kind_names,
	.values = kind_values, .def = CQ_CLASSIFIER_TREES},
	{.key = "max_seconds", OPT(max_seconds), .type = CORPQ_OPT_NUMBER,
	.range = CORPQ_RANGE_POSITIVE, .hi = 1e7,
	.flags = CORPQ_OPT_UNSET},
	CORPQ_JOB_THREADS_OPTION(ClassifierOptions, threads),
	{0}
};

static const CorpqOptionTable table = {"classifier", rows};

/* The "noise" object: one share per noise label. */
typedef struct Shares
{
	double		share[CQ_NOISE_NTYPES];
} Shares;

#define SHARE_ROW(t) \
	{.key = NULL, .type = CORPQ_OPT_NUMBER, \
	 .offset = offsetof(Shares, share) + (t) * sizeof(double), .size = sizeof(double), \
	 .range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 10}

static CorpqOption share_rows[CQ_NOISE_NTYPES];	/* the types, then the end row */
static const CorpqOptionTable share_table = {"noise", share_rows};

/* The share rows from the core's names and defaults, once per process. */
static void
init_share_rows(void)
{
	cq_noise_options d;

	if (share_rows[0].key != NULL)
		return;
	cq_noise_options_default(&d);
	for (int t = 1; t < CQ_NOISE_NTYPES; t++)
	{
		CorpqOption r = SHARE_ROW(t);

		r.key = cq_noise_name((cq_noise_type) t);
		r.def = d.share[t];
		share_rows[t - 1] = r;
	}
	memset(&share_rows[CQ_NOISE_NTYPES - 1], 0, sizeof(CorpqOption));
}

/* options without its "noise" key, and the noise object (or NULL). */
static Jsonb *
split_noise(Jsonb *options, Jsonb **noise)
{
	JsonbValue *v;

	*noise = NULL;
	if (options == NULL || !JB_ROOT_IS_OBJECT(options))
		return options;			/* corpq_options_parse says what is wrong */
	v = getKeyJsonValueFromContainer(&options->root, "noise", 5, NULL);
	if (v == NULL)
		return options;
	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("classifier option \"noise\" must be a JSON object"),
				 errhint("Give a share per noise label, as corpq.synthetic_noise's options: "
						 "{\"noise\": {\"untranslated\": 0.2, \"wrong_language\": 0}}.")));
	*noise = JsonbValueToJsonb(v);
	return DatumGetJsonbP(DirectFunctionCall2(jsonb_delete, JsonbPGetDatum(options),
											  CStringGetTextDatum("noise")));
}

static void
check_language(const char *code)
{
	if (code != NULL && cq_langid_lookup(code) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown language \"%s\"", code),
				 errhint("SELECT code, name FROM corpq.langid_languages() lists the languages.")));
}

/* The checks of several keys, and the models pinned (with pin). */
static void
resolve(ClassifierOptions *o, bool pin)
{
	check_language(o->src_lang);
	check_language(o->tgt_lang);
	if ((o->models.forward == NULL) != (o->models.backward == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("classifier options \"forward\" and \"backward\" go together"),
				 errhint("dual_xent needs a source-to-target and a target-to-source model: "
						 "give both, or neither.")));
	if (!pin)
		return;
	if (o->models.encoder)
		o->models.encoder = corpq_model_pin(o->models.encoder);
	if (o->models.forward)
	{
		o->models.forward = corpq_model_pin(o->models.forward);
		o->models.backward = corpq_model_pin(o->models.backward);
	}
	if (o->models.lexicon)
	{
		/* a lexicon is replaced in place: pinned as name@version, checked at use */
		bool		isnull;
		int32		version;

		if (strchr(o->models.lexicon, '@') != NULL ||
			!corpq_catalog_exists(&corpq_kind_lexicon, o->models.lexicon))
			corpq_undefined_name(&corpq_kind_lexicon, o->models.lexicon);
		SPI_connect();
		version = DatumGetInt32(corpq_catalog_value(&corpq_kind_lexicon, "c.version",
													o->models.lexicon, &isnull));
		SPI_finish();
		o->models.lexicon = psprintf("%s@%d", o->models.lexicon, version);
	}
}

static void
parse(Jsonb *options, ClassifierOptions *o, bool pin)
{
	Jsonb	   *noise;
	Shares		s;

	init_share_rows();
	memset(o, 0, sizeof(*o));
	options = split_noise(options, &noise);
	corpq_options_parse(&table, options, o);
	corpq_options_parse(&share_table, noise, &s);
	memcpy(o->share, s.share, sizeof(s.share));
	o->share[CQ_NOISE_CLEAN] = 0;
	resolve(o, pin);
}

void
classifier_options_parse(Jsonb *options, ClassifierOptions *o)
{
	parse(options, o, true);
}

void
classifier_options_parse_text(const char *json, ClassifierOptions *o)
{
	parse(DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(json))), o, false);
}

char *
classifier_options_json(const ClassifierOptions *o)
{
	char	   *main = corpq_options_json(&table, o);
	Shares		s;
	StringInfoData b;

	init_share_rows();
	memcpy(s.share, o->share, sizeof(s.share));
	initStringInfo(&b);
	/* main is "{...}": the noise object goes in before its closing brace */
	appendBinaryStringInfo(&b, main, strlen(main) - 1);
	appendStringInfo(&b, "%s\"noise\": %s}", strlen(main) > 2 ? ", " : "",
					 corpq_options_json(&share_table, &s));
	return b.data;
}

void
classifier_options_feature_set(const ClassifierOptions *o, cq_feature_set *fs)
{
	cq_feature_set_strings(fs);
	/* the langid filter's defaults (docs/filters.md) */
	fs->langid.hint = true;
	fs->langid.keep_unreliable = true;
	fs->langid.min_chars = 0;
	if (o->src_lang)
	{
		fs->src_lang = cq_langid_lookup(o->src_lang);
		fs->mask |= CQ_F_BIT(CQ_F_LANGID_SRC);
	}
	if (o->tgt_lang)
	{
		fs->tgt_lang = cq_langid_lookup(o->tgt_lang);
		fs->mask |= CQ_F_BIT(CQ_F_LANGID_TGT);
	}
	if (o->models.lexicon)
		fs->mask |= CQ_F_BIT(CQ_F_ALIGN_FWD) | CQ_F_BIT(CQ_F_ALIGN_BWD) |
			CQ_F_BIT(CQ_F_COVERAGE_FWD) | CQ_F_BIT(CQ_F_COVERAGE_BWD) |
			CQ_F_BIT(CQ_F_TAIL_SRC) | CQ_F_BIT(CQ_F_TAIL_TGT);
	if (o->models.encoder)
		fs->mask |= CQ_F_BIT(CQ_F_EMBEDDING_COSINE);
	if (o->models.forward)
		fs->mask |= CQ_F_BIT(CQ_F_DUAL_XENT);
}

static void
json_key(StringInfo b, const char *key, const char *value, bool *first)
{
	if (value == NULL)
		return;
	if (!*first)
		appendStringInfoString(b, ", ");
	*first = false;
	escape_json(b, key);
	appendStringInfoString(b, ": ");
	escape_json(b, value);
}

char *
curate_models_json(const CurateModels *m)
{
	StringInfoData b;
	bool		first = true;

	initStringInfo(&b);
	appendStringInfoChar(&b, '{');
	json_key(&b, "encoder", m->encoder, &first);
	json_key(&b, "forward", m->forward, &first);
	json_key(&b, "backward", m->backward, &first);
	json_key(&b, "lexicon", m->lexicon, &first);
	appendStringInfoChar(&b, '}');
	return b.data;
}

static char *
models_key(Jsonb *j, const char *key)
{
	JsonbValue *v = getKeyJsonValueFromContainer(&j->root, key, strlen(key), NULL);

	if (v == NULL || v->type != jbvString)
		return NULL;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

void
curate_models_parse(const char *json, CurateModels *m)
{
	Jsonb	   *j = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(json)));

	m->encoder = models_key(j, "encoder");
	m->forward = models_key(j, "forward");
	m->backward = models_key(j, "backward");
	m->lexicon = models_key(j, "lexicon");
}
