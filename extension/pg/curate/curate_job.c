/*
 * corpq.curate(corpus, target, options): submission in the caller's
 * backend, and the "curate" job, a row job (pg/jobs/row_job.h); the design
 * is in curate_job.h, the user's view in docs/curation.md.
 *
 * The steps, cheap first, and the reasons each writes:
 *   1. a NULL side (null:src, null:tgt), a side without a word (empty:src,
 *      empty:tgt: text_length 0); the rule filters of the spec
 *      (rule:<label>); language ID of each side given a language
 *      (langid:src, langid:tgt: the langid filter's rule, side by side);
 *      a copy (copy: the sides equal after dedup_key's near normalisation,
 *      and not empty after it; option copies).  Every failed one is named.
 *      With a classifier the defaults are what it does not see: html_tags
 *      (keep_same_tags: markup on one side, or different on the two) as
 *      the only rule, no copy check, exact duplicates only.
 *   2. among the pairs step 1 kept: exact duplicates (duplicate_of:<id>),
 *      then near ones (near_duplicate_of:<id>), the smallest id of a group
 *      kept and named.
 *   3. with a classifier, corpq.pair_quality on the pairs left:
 *      classifier:<p> below the threshold.
 * Steps 1 and 2 are one query over the whole corpus, built here and run by
 * the row job (its result held across the job's transactions); step 3 runs
 * chunk by chunk in the worker.
 *
 * With a clean query instead of a classifier, the job trains first (see
 * train_what_it_needs): a lexicon, an encoder when the budget allows
 * (encoder_phase), then a classifier, each stored in its own transaction by
 * its own kind's code, found again by a restarted job.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/value.h"
#include "portability/instr_time.h"
#include "parser/parse_func.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "pg/base/catalog.h"
#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/base/corpus_query.h"
#include "pg/base/options.h"
#include "pg/classifier/classifier.h"
#include "pg/curate/curate_job.h"
#include "pg/filters/filters.h"
#include "pg/jobs/row_job.h"
#include "pg/lexicon/lexicon.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(corpq_curate);

/* ---- the query the job reads, and the target ---- */

/*
 * The rows of the query curate() builds: the pair, the reasons of step 1
 * (as a text[] literal, NULL for a NULL side), and the first id of the pair's exact and near
 * duplicate groups among the pairs step 1 keeps (NULL when it did not, or
 * when the step is off).
 */
static const CorpqColumn query_columns[] = {
	{"id", CORPQ_COLUMN_INTEGER}, {"src", CORPQ_COLUMN_TEXT}, {"tgt", CORPQ_COLUMN_TEXT},
	{"reasons", CORPQ_COLUMN_TEXT},	/* a text[] literal: the row jobs read text */
	{"exact_first", CORPQ_COLUMN_INTEGER}, {"near_first", CORPQ_COLUMN_INTEGER}
};

enum
{
	Q_ID = 1, Q_SRC, Q_TGT, Q_REASONS, Q_EXACT, Q_NEAR
};

static const CorpqQuerySpec query_spec = {
	.what = "corpus", .columns = query_columns, .min_columns = 6, .max_columns = 6,
	.example = "(built by corpq.curate from the corpus table)", .need_rows = false
};

static double curate_seconds(void *arg);
static void setup(CorpqRowJob *rj, void *arg);

/* What the result counts: per decision, then per reason kind (pairs with one). */
static const char *const counters[] = {
	"kept", "dropped", "null_side", "empty", "rule", "langid", "copy", "duplicate",
	"near_duplicate", "classifier", NULL
};

enum
{
	COUNT_KEPT, COUNT_DROPPED, COUNT_NULL, COUNT_EMPTY, COUNT_RULE, COUNT_LANGID, COUNT_COPY,
	COUNT_DUPLICATE, COUNT_NEAR_DUPLICATE, COUNT_CLASSIFIER, N_COUNTS
};

static const CorpqRowJobKind kind = {
	.kind = "curate", .source = &query_spec, .target_example = "my_curation",
	.query_arg = "corpus", .counters = counters, .seconds = curate_seconds, .setup = setup,
	.phase = "curating", .unit = "pairs", .done = "curated"
};

/* corpq.reason_list, the domain over text[] the reasons travel as (row_job.h). */
static Oid
reason_list_type(void)
{
	Oid			nsp = corpq_schema_oid();
	Oid			type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
									   CStringGetDatum("reason_list"), ObjectIdGetDatum(nsp));

	if (!OidIsValid(type))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("type corpq.reason_list does not exist"),
				 errhint("The catalog is older than the library: ALTER EXTENSION corpq UPDATE.")));
	return type;
}

#define N_TARGET_COLUMNS 4

/* id bigint, decision text, probability double precision, reasons text[] */
static void
target_columns(CorpqRowJobColumn *c)
{
	memset(c, 0, sizeof(CorpqRowJobColumn) * N_TARGET_COLUMNS);
	c[0].name = "id";
	c[0].type = INT8OID;
	c[0].type_name = "bigint";
	c[1].name = "decision";
	c[1].type = TEXTOID;
	c[1].type_name = "text";
	c[2].name = "probability";
	c[2].type = FLOAT8OID;
	c[2].type_name = "double precision";
	c[3].name = "reasons";
	c[3].type = reason_list_type();
	c[3].type_name = "text[]";
}

/* ---- submission ---- */

/*
 * Split the options into "filters" (a spec, or NULL when not given) and the
 * rest, which the option table parses.  Options that are not an object go
 * to the parser whole, which says what it expects.
 */
static Jsonb *
take_filters(Jsonb *options, Jsonb **filters)
{
	JsonbValue	k;
	JsonbValue *v;

	*filters = NULL;
	if (options == NULL || !JB_ROOT_IS_OBJECT(options))
		return options;
	k.type = jbvString;
	k.val.string.val = "filters";
	k.val.string.len = strlen("filters");
	v = findJsonbValueFromContainer(&options->root, JB_FOBJECT, &k);
	if (v == NULL)
		return options;
	*filters = JsonbValueToJsonb(v);
	return DatumGetJsonbP(DirectFunctionCall2(jsonb_delete, JsonbPGetDatum(options),
											  CStringGetTextDatum("filters")));
}

/* Whether the options (an object, or NULL) have the key. */
static bool
option_given(Jsonb *options, const char *key)
{
	JsonbValue	k;

	if (options == NULL || !JB_ROOT_IS_OBJECT(options))
		return false;
	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	return findJsonbValueFromContainer(&options->root, JB_FOBJECT, &k) != NULL;
}

/* corpq.filter_defaults(): the default spec. */
static Jsonb *
default_filters(void)
{
	char	   *text;

	SPI_connect();
	if (SPI_execute("SELECT corpq.filter_defaults()::pg_catalog.text", true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read corpq.filter_defaults()");
	text = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	text = MemoryContextStrdup(TopTransactionContext, text);
	SPI_finish();
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
}

/*
 * A spec checked (every ERROR of the filter paths: unknown names, args,
 * languages, thresholds out of range) and written out with every default and
 * its model names pinned to their latest version, as filter_predicate writes
 * it: the query of the job means the same filters whenever it runs.
 */
static char *
pinned_spec(Jsonb *spec, int *n)
{
	FilterList *list = filter_list_parse(spec, FILTER_MODELS_LATEST);
	Jsonb	   *pinned = filter_list_jsonb(list);

	*n = list->n;
	return JsonbToCString(NULL, &pinned->root, VARSIZE(pinned));
}

/* The langid filter on one side given its language, labelled langid:<side>. */
static char *
langid_spec(const char *lang, const char *side)
{
	StringInfoData b;
	int			n;

	initStringInfo(&b);
	appendStringInfoString(&b, "[{\"name\": \"langid\", \"args\": {\"src\": ");
	escape_json(&b, lang);
	appendStringInfoString(&b, ", \"tgt\": ");
	escape_json(&b, lang);
	appendStringInfo(&b, "}, \"label\": \"langid:%s\"}]", side);
	return pinned_spec(DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(b.data))), &n);
}

/*
 * The corpus's column col (option option: the role "id"/"src"/"tgt" it
 * plays), quoted; ERROR unless it exists and has an integer (id) or text type.
 */
static char *
corpus_column(Oid corpus, const char *corpus_name, const char *col, const char *option,
			  const char *role, bool integer)
{
	AttrNumber	att = get_attnum(corpus, col);
	Oid			type;
	bool		fits;

	if (att <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of corpus %s does not exist", col, corpus_name),
				 errhint("Name the corpus's %s column with the option \"%s\".", role, option)));
	type = getBaseType(get_atttype(corpus, att));
	fits = integer ? (type == INT8OID || type == INT4OID || type == INT2OID)
		: (type == TEXTOID || type == VARCHAROID);
	if (!fits)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of corpus %s has type %s, the %s column must be %s",
						col, corpus_name, format_type_be(get_atttype(corpus, att)), role,
						integer ? "an integer (bigint, integer or smallint)" : "text or varchar"),
				 errhint("Name another column with the option \"%s\".", option)));
	return (char *) quote_identifier(col);
}

/* The corpus as a qualified, quoted name; ERROR when the oid names no relation. */
static char *
corpus_name(Oid corpus)
{
	char	   *name = get_rel_name(corpus);

	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("corpus relation with oid %u does not exist", corpus)));
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(corpus)), name);
}

/*
 * The query of steps 1 and 2 (see the file's comment), in id order (then
 * the sides: rows of one id in a fixed order), so that a resumed job reads
 * the rows it read.
 */
static char *
build_query(const char *corpus, const char *id, const char *src, const char *tgt,
			const char *rules, const char *lang_src, const char *lang_tgt, int dedup,
			bool copies)
{
	StringInfoData b;
	const char *ok = "pg_catalog.cardinality(s.reasons) OPERATOR(pg_catalog.=) 0";

	initStringInfo(&b);
	appendStringInfoString(&b, "SELECT s.id, s.src, s.tgt, s.reasons::pg_catalog.text");
	if (dedup >= CURATE_DEDUP_EXACT)
		appendStringInfo(&b, ",\n  CASE WHEN %s THEN pg_catalog.min(s.id) OVER "
						 "(PARTITION BY %s, corpq.dedup_key(s.src, s.tgt, 'exact')) END", ok, ok);
	else
		appendStringInfoString(&b, ",\n  NULL::pg_catalog.int8");
	if (dedup >= CURATE_DEDUP_NEAR)
		appendStringInfo(&b, ",\n  CASE WHEN %s THEN pg_catalog.min(s.id) OVER "
						 "(PARTITION BY %s, corpq.dedup_key(s.src, s.tgt, 'near')) END", ok, ok);
	else
		appendStringInfoString(&b, ",\n  NULL::pg_catalog.int8");
	appendStringInfo(&b, "\nFROM (SELECT c.%s::pg_catalog.int8 AS id, c.%s::pg_catalog.text AS src, "
					 "c.%s::pg_catalog.text AS tgt,\n"
					 "  CASE WHEN c.%s IS NULL OR c.%s IS NULL THEN NULL ELSE '{}'::pg_catalog.text[]",
					 id, src, tgt, src, tgt);
	/* a side without a word (the rules keep a pair of two such sides) */
	appendStringInfo(&b, "\n    OPERATOR(pg_catalog.||) CASE WHEN corpq.text_length(c.%s) OPERATOR(pg_catalog.=) 0 "
					 "THEN ARRAY['empty:src']::pg_catalog.text[] ELSE '{}'::pg_catalog.text[] END"
					 "\n    OPERATOR(pg_catalog.||) CASE WHEN corpq.text_length(c.%s) OPERATOR(pg_catalog.=) 0 "
					 "THEN ARRAY['empty:tgt']::pg_catalog.text[] ELSE '{}'::pg_catalog.text[] END",
					 src, tgt);
	if (rules)
		appendStringInfo(&b, "\n    OPERATOR(pg_catalog.||) ARRAY(SELECT 'rule:' OPERATOR(pg_catalog.||) u.r "
						 "FROM pg_catalog.unnest(corpq.filter_rejects(c.%s, c.%s, %s::pg_catalog.jsonb)) "
						 "WITH ORDINALITY AS u (r, k) ORDER BY u.k)",
						 src, tgt, quote_literal_cstr(rules));
	if (lang_src)
		appendStringInfo(&b, "\n    OPERATOR(pg_catalog.||) corpq.filter_rejects(c.%s, c.%s, %s::pg_catalog.jsonb)",
						 src, src, quote_literal_cstr(lang_src));
	if (lang_tgt)
		appendStringInfo(&b, "\n    OPERATOR(pg_catalog.||) corpq.filter_rejects(c.%s, c.%s, %s::pg_catalog.jsonb)",
						 tgt, tgt, quote_literal_cstr(lang_tgt));
	/* a copy: corpq's one definition (cq_dedup_is_copy(), filters/dedup.h) */
	if (copies)
		appendStringInfo(&b, "\n    OPERATOR(pg_catalog.||) CASE WHEN corpq.is_copy(c.%s, c.%s) "
					 "THEN ARRAY['copy']::pg_catalog.text[] ELSE '{}'::pg_catalog.text[] END",
					 src, tgt);
	appendStringInfo(&b, " END AS reasons\n  FROM %s AS c) AS s\n"
					 "ORDER BY s.id, s.src, s.tgt", corpus);
	return b.data;
}

/* ---- training: what curate() trains from a clean query ---- */

/*
 * The clean pairs are split in two by a hash of the source: one half
 * trains the lexicon, the other the classifier.  A lexicon knows the pairs
 * it was trained on better than new ones, so a classifier whose clean pairs
 * it saw learns lexicon scores that new clean pairs do not reach (measured:
 * docs/curation.md).
 */
#define CURATE_HALF_LEXICON 0
#define CURATE_HALF_CLASSIFIER 1

static char *
training_query(const char *clean_query, int half)
{
	return psprintf("SELECT q.src, q.tgt FROM (%s\n) AS q (src, tgt) "
					"WHERE (pg_catalog.hashtext(q.src::pg_catalog.text) OPERATOR(pg_catalog.&) 1) "
					"OPERATOR(pg_catalog.=) %d", corpq_query_bare(clean_query), half);
}

static void
classifier_half_context(void *arg)
{
	errcontext("the half of curate()'s clean_query that trains the classifier "
			   "(the other half, by a hash of the source, trains the lexicon)");
}

/*
 * At submission, with the option clean_query: the checks classifier_train
 * and lexicon_train make (by their own code: the languages, the clean
 * query's shape and size, the writers of the names), the names the job will
 * store under (curate_job.h), and the classifier's options as the job's
 * arguments keep them.
 */
static char *
check_training(const CurateOptions *o, const char *target_rel, char **lexicon,
			   char **classifier)
{
	ClassifierOptions co;
	StringInfoData b;

	if (o->src_lang == NULL || o->tgt_lang == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the curate option \"clean_query\" needs \"src_lang\" and \"tgt_lang\""),
				 errhint("curate() trains its classifier with the two languages: give both codes (corpq.langid_languages()).")));
	corpq_require_utf8();
	/* the classifier's options: the languages, checked by classifier_train's parser */
	initStringInfo(&b);
	appendStringInfoString(&b, "{\"src_lang\": ");
	escape_json(&b, o->src_lang);
	appendStringInfoString(&b, ", \"tgt_lang\": ");
	escape_json(&b, o->tgt_lang);
	/* the caller's encoder: pinned by the parser, a feature of the classifier */
	if (o->encoder)
	{
		appendStringInfoString(&b, ", \"encoder\": ");
		escape_json(&b, o->encoder);
	}
	appendStringInfoChar(&b, '}');
	classifier_options_parse(DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(b.data))),
							 &co);
	lexicon_check_corpus_query(o->clean_query);
	{
		ErrorContextCallback cb = {.previous = error_context_stack,
		.callback = classifier_half_context};

		error_context_stack = &cb;
		classifier_check_clean_query(training_query(o->clean_query, CURATE_HALF_CLASSIFIER), &co);
		error_context_stack = cb.previous;
	}

	*lexicon = psprintf("%s%s", target_rel, CURATE_LEXICON_SUFFIX);
	*classifier = psprintf("%s%s", target_rel, CURATE_CLASSIFIER_SUFFIX);
	classifier_check_name(*classifier);
	(void) corpq_catalog_check_writer(&corpq_kind_lexicon, *lexicon, "replace",
									  "curate() names the lexicon it trains after the target table: "
									  "curate into another table, or ask the lexicon's owner to drop it.");
	(void) corpq_catalog_check_writer(&corpq_kind_classifier, *classifier, "add a version to",
									  "curate() names the classifier it trains after the target table: "
									  "curate into another table, or ask the classifier's owner to drop it.");
	return classifier_options_json(&co);
}

/*
 * At submission, with the option clean_query: whether the job trains an
 * encoder, with what budget, and why (the job's arguments "train_encoder",
 * the name or null, "encoder_seconds" and "encoder_reason").  The names it
 * would write ("<target>_enc": a BPE model, a vocabulary, a model) must be
 * free: an encoder of the caller's is given with the option "encoder", not
 * replaced.
 */
static void
plan_encoder(const CurateOptions *o, const char *target_rel, StringInfo more)
{
	char	   *name = NULL;
	char	   *reason;
	double		seconds = 0;

	if (o->encoder)
		reason = pstrdup("the option \"encoder\" gave the classifier's encoder");
	else if (!o->train_encoder)
		reason = pstrdup("the option \"train_encoder\" is false");
	else if (!CORPQ_OPT_IS_UNSET(o->encoder_seconds))
	{
		seconds = o->encoder_seconds;
		reason = psprintf("the option \"encoder_seconds\" gave it %g of max_seconds' %g s",
						  seconds, o->max_seconds);
	}
	else if (CORPQ_OPT_IS_UNSET(o->max_seconds))
		reason = psprintf("no max_seconds: curate() trains an encoder only within a budget of at least %g s",
						  CURATE_ENCODER_MIN_BUDGET);
	else if (o->max_seconds < CURATE_ENCODER_MIN_BUDGET)
		reason = psprintf("max_seconds %g is below %g s: an encoder gets %g%% of the budget, and was "
						  "measured to help the classifier with %g s of training",
						  o->max_seconds, CURATE_ENCODER_MIN_BUDGET, 100 * CURATE_ENCODER_SHARE,
						  CURATE_ENCODER_MIN_BUDGET * CURATE_ENCODER_SHARE);
	else
	{
		seconds = o->max_seconds * CURATE_ENCODER_SHARE;
		reason = psprintf("max_seconds %g is at least %g s: the encoder gets %g%% of it",
						  o->max_seconds, CURATE_ENCODER_MIN_BUDGET, 100 * CURATE_ENCODER_SHARE);
	}
	if (seconds > 0)
	{
		static const char *const hint =
		"curate() names the encoder it trains, its vocabulary and BPE model after the target table "
		"(\"%s\"): drop them, give the encoder with the option \"encoder\", "
		"set \"train_encoder\" to false, or curate into another table.";
		const CorpqCatalogKind *kinds[3] = {&corpq_kind_bpe, &corpq_kind_vocabulary, &corpq_kind_model};
		const char *what[3] = {"BPE model", "vocabulary", "model"};

		name = psprintf("%s%s", target_rel, CURATE_ENCODER_SUFFIX);
		for (int k = 0; k < 3; k++)
			if (corpq_catalog_check_writer(kinds[k], name, "replace", psprintf(hint, name)))
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_OBJECT),
						 errmsg("%s \"%s\" already exists", what[k], name),
						 errdetail("curate() would train an encoder named \"%s\" (%s), and does not replace one.",
								   name, reason),
						 errhint(hint, name)));
	}
	appendStringInfoString(more, ", \"train_encoder\": ");
	if (name)
		escape_json(more, name);
	else
		appendStringInfoString(more, "null");
	appendStringInfo(more, ", \"encoder_seconds\": %s, \"encoder_reason\": ",
					 name ? corpq_json_number_text(seconds) : "null");
	escape_json(more, reason);
}

/* What the job trained (or found from its run before a restart). */
typedef struct Trained
{
	char	   *lexicon;		/* "name@version" */
	char	   *classifier;		/* "name@version" */
	bool		lexicon_reused;
	bool		classifier_reused;
	double		lexicon_seconds;	/* this run's; 0 when reused */
	double		classifier_seconds;
	double		budget;			/* the classifier's max_seconds, or unset */
	char	   *encoder;		/* "name@version", or NULL: none */
	char	   *encoder_json;	/* the summary's "encoder" (a JSON object), or NULL */
	char	   *encoder_reason;
	char	   *summary;		/* the result's "training" member */
} Trained;

/*
 * In a transaction: the version of what this job stored under name (sql
 * selects it, $1 the name, $2 the job), or 0.
 */
static int32
stored_by_job(CorpqJob *job, const char *sql, const char *name)
{
	Oid			t[2] = {TEXTOID, INT8OID};
	Datum		a[2] = {CStringGetTextDatum(name), Int64GetDatum(job->id)};
	bool		isnull;

	/* not read-only: a lexicon written in this transaction is seen */
	if (corpq_sql_as_caller(sql, 2, t, a, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the catalog of \"%s\"", name);
	if (SPI_processed == 0)
		return 0;
	return DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

static const char *const lexicon_of_job =
"SELECT version FROM corpq.lexicons "
"WHERE name OPERATOR(pg_catalog.=) $1 AND job OPERATOR(pg_catalog.=) $2";
static const char *const classifier_of_job =
"SELECT v.version FROM corpq.classifier_versions v JOIN corpq.classifier_catalog c "
"ON c.id OPERATOR(pg_catalog.=) v.model "
"WHERE c.name OPERATOR(pg_catalog.=) $1 AND v.job OPERATOR(pg_catalog.=) $2 "
"ORDER BY v.version DESC LIMIT 1";

/* In a transaction: the result's summary of what was trained, read from the catalog. */
static char *
training_summary(CorpqJob *job, const Trained *t, const char *lexicon, const char *classifier)
{
	static const char *const sql =
	"SELECT pg_catalog.jsonb_build_object("
	"'lexicon', pg_catalog.jsonb_build_object('name', $3, 'reused', $5, 'seconds', $7, "
	"  'pairs', l.stats -> 'pairs', 'src_vocab', l.stats -> 'src_vocab', "
	"  'tgt_vocab', l.stats -> 'tgt_vocab', 'training_seconds', l.stats -> 'seconds'), "
	"'classifier', pg_catalog.jsonb_build_object('name', $4, 'reused', $6, 'seconds', $8, "
	"  'kind', v.kind, 'features', v.features, 'max_seconds', $9, "
	"  'pairs_used', v.report -> 'pairs_used', "
	"  'max_seconds_reached', v.report -> 'max_seconds_reached', "
	"  'heldout', v.report -> 'heldout'), "
	"'encoder', $11::pg_catalog.jsonb, 'encoder_reason', $12)::pg_catalog.text "
	"FROM corpq.lexicons l, corpq.classifier_versions v JOIN corpq.classifier_catalog c "
	"ON c.id OPERATOR(pg_catalog.=) v.model "
	"WHERE l.name OPERATOR(pg_catalog.=) $1 AND l.job OPERATOR(pg_catalog.=) $10 "
	"AND c.name OPERATOR(pg_catalog.=) $2 AND v.job OPERATOR(pg_catalog.=) $10 "
	"AND v.version OPERATOR(pg_catalog.=) pg_catalog.split_part($4, '@', 2)::pg_catalog.int4";
	Oid			ty[12] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, BOOLOID, BOOLOID, FLOAT8OID,
	FLOAT8OID, FLOAT8OID, INT8OID, TEXTOID, TEXTOID};
	Datum		a[12];
	char		nulls[12];

	memset(nulls, ' ', sizeof(nulls));
	a[0] = CStringGetTextDatum(lexicon);
	a[1] = CStringGetTextDatum(classifier);
	a[2] = CStringGetTextDatum(t->lexicon);
	a[3] = CStringGetTextDatum(t->classifier);
	a[4] = BoolGetDatum(t->lexicon_reused);
	a[5] = BoolGetDatum(t->classifier_reused);
	a[6] = Float8GetDatum(t->lexicon_seconds);
	a[7] = Float8GetDatum(t->classifier_seconds);
	a[8] = Float8GetDatum(t->budget);
	if (CORPQ_OPT_IS_UNSET(t->budget))
		nulls[8] = 'n';
	a[9] = Int64GetDatum(job->id);
	a[10] = t->encoder_json ? CStringGetTextDatum(t->encoder_json) : (Datum) 0;
	if (t->encoder_json == NULL)
		nulls[10] = 'n';
	a[11] = CStringGetTextDatum(t->encoder_reason);
	if (corpq_sql_as_caller(sql, 12, ty, a, nulls, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read what the curate job trained");
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

static double
seconds_since(TimestampTz t)
{
	return (double) (GetCurrentTimestamp() - t) / USECS_PER_SEC;
}

/*
 * In a transaction: the id of model name when this job created it (it did
 * not exist at submission: a model of that name created since the job was
 * submitted, by its owner, with no version but its first and checkpoints),
 * 0 when there is none; ERROR when another took the name.
 */
static int64
encoder_of_job(CorpqJob *job, const char *name)
{
	static const char *const sql =
	"SELECT m.id, m.created OPERATOR(pg_catalog.>=) j.created "
	"AND m.owner OPERATOR(pg_catalog.=) j.owner "
	"AND NOT EXISTS (SELECT FROM corpq.model_versions v WHERE v.model OPERATOR(pg_catalog.=) m.id "
	"  AND v.version OPERATOR(pg_catalog.>) 1 AND v.source OPERATOR(pg_catalog.<>) 'checkpoint') "
	"FROM corpq.model_catalog m, corpq.jobs j "
	"WHERE m.name OPERATOR(pg_catalog.=) $1 AND j.id OPERATOR(pg_catalog.=) $2";
	Oid			t[2] = {TEXTOID, INT8OID};
	Datum		a[2] = {CStringGetTextDatum(name), Int64GetDatum(job->id)};
	bool		isnull;
	int64		id;

	if (corpq_sql_as_caller(sql, 2, t, a, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the catalog of model \"%s\"", name);
	if (SPI_processed == 0)
		return 0;
	id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("model \"%s\" was created by another than curate job " INT64_FORMAT, name, job->id),
				 errdetail("The name was free when the job was submitted; the job trains its encoder under it."),
				 errhint("Drop the model and run curate() again, or curate into another table.")));
	return id;
}

/*
 * In a transaction: the BPE model, the vocabulary and the model of the
 * encoder, all named name, created in it (docs/embeddings.md's recipe) from
 * the encoder's half of the clean pairs; returns the model's id.
 */
static int64
encoder_create(CorpqJob *job, const char *name, const char *pairs)
{
	char	   *sides = psprintf("SELECT s.x FROM (%s) AS h, LATERAL (VALUES (h.src), (h.tgt)) AS s (x)",
								 pairs);
	/* one statement each: each sees what the one before wrote */
	const char *sql[3] = {
		psprintf("SELECT corpq.bpe_learn($1, $2, %d)", CURATE_ENCODER_MERGES),
		"SELECT corpq.vocab_build($1, $2, $1)",
		"SELECT corpq.model_create($1, $3::pg_catalog.jsonb, $1, $1, 1)"
	};
	Oid			t[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		a[3] = {CStringGetTextDatum(name), CStringGetTextDatum(sides),
	CStringGetTextDatum(CURATE_ENCODER_CONFIG)};

	/*
	 * SPI directly, not corpq_sql_as_caller: the clean query inside is the
	 * user's, run with the search_path recorded at submission
	 * (base/internal_sql.h, rule 6); every name here is qualified.
	 */
	for (int k = 0; k < 3; k++)
		if (SPI_execute_with_args(sql[k], 3, t, a, NULL, false, 1) != SPI_OK_SELECT ||
			SPI_processed != 1)
			elog(ERROR, "could not create the encoder \"%s\"", name);
	return encoder_of_job(job, name);
}

/* In a transaction: the summary's "encoder" object. */
static char *
encoder_summary(const char *pinned, const char *vocab, bool reused, double seconds,
				double budget, const char *train_result)
{
	static const char *const sql =
	"SELECT pg_catalog.jsonb_build_object('name', $1, 'trained', true, 'reused', $3, "
	"'seconds', $4, 'max_seconds', $5, 'preset', $6::pg_catalog.jsonb OPERATOR(pg_catalog.->) 'preset', "
	"'vocab', $2, 'vocab_size', (SELECT size FROM corpq.vocabularies WHERE name OPERATOR(pg_catalog.=) $2), "
	"'steps', r OPERATOR(pg_catalog.->) 'steps', 'trained_pairs', r OPERATOR(pg_catalog.->) 'trained_pairs', "
	"'pairs', r OPERATOR(pg_catalog.->) 'pairs', "
	"'training_seconds', r OPERATOR(pg_catalog.->) 'training_seconds')::pg_catalog.text "
	"FROM (SELECT $7::pg_catalog.jsonb AS r) AS t";
	Oid			t[7] = {TEXTOID, TEXTOID, BOOLOID, FLOAT8OID, FLOAT8OID, TEXTOID, TEXTOID};
	Datum		a[7] = {CStringGetTextDatum(pinned), CStringGetTextDatum(vocab), BoolGetDatum(reused),
		Float8GetDatum(seconds), Float8GetDatum(budget), CStringGetTextDatum(CURATE_ENCODER_CONFIG),
	CStringGetTextDatum(train_result)};

	if (corpq_sql_as_caller(sql, 7, t, a, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the encoder the curate job trained");
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * In the job, outside a transaction, after the lexicon: the encoder name
 * created (unless this job created it before a restart) and trained by
 * corpq.train()'s own loop on the lexicon's half of the clean pairs, its
 * checkpoints under this job's id: a job started again resumes from the last
 * one, and once its budget is spent makes no update (reused).
 */
static void
encoder_phase(CorpqJob *job, const char *name, double seconds, const CurateOptions *o,
			  Trained *t, MemoryContext cxt)
{
	TimestampTz phase = GetCurrentTimestamp();
	char	   *pairs = training_query(o->clean_query, CURATE_HALF_LEXICON);
	int64		id;
	int64		updates = 0;
	int32		version;
	char	   *result;
	double		budget;

	corpq_job_xact_begin(cxt);
	MemoryContextSwitchTo(cxt);
	id = encoder_of_job(job, name);
	corpq_job_xact_commit(cxt);
	if (id == 0)
	{
		corpq_job_progress(job, "building the encoder's vocabulary", 0, 0, "pairs", NULL, true);
		corpq_job_xact_begin(cxt);
		MemoryContextSwitchTo(cxt);
		id = encoder_create(job, name, pairs);
		corpq_job_xact_commit(cxt);
	}
	/*
	 * The same budget on every attempt (a resumed run compares it with the
	 * training seconds its checkpoint carries): the vocabulary's seconds
	 * count against the classifier's share, which is what is left.
	 */
	budget = seconds;
	result = curate_encoder_train(job, name, id, pairs, budget, cxt, &updates);

	corpq_job_xact_begin(cxt);
	MemoryContextSwitchTo(cxt);
	{
		static const char *const sql =
		"SELECT pg_catalog.max(version) FROM corpq.model_versions WHERE model OPERATOR(pg_catalog.=) $1";
		Oid			ty[1] = {INT8OID};
		Datum		a[1] = {Int64GetDatum(id)};
		bool		isnull;

		if (corpq_sql_as_caller(sql, 1, ty, a, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "could not read the versions of model \"%s\"", name);
		version = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	t->encoder = MemoryContextStrdup(cxt, psprintf("%s@%d", name, version));
	/* a fresh run makes at least one update: none is a finished run's resume */
	t->encoder_json = encoder_summary(t->encoder, name, updates == 0,
									  updates == 0 ? 0 : seconds_since(phase), budget, result);
	t->encoder_json = MemoryContextStrdup(cxt, t->encoder_json);
	corpq_job_xact_commit(cxt);
}

/*
 * In the job, outside a transaction, before the row job begins: the
 * lexicon, then the classifier, each trained by its own kind's code and
 * stored (with this job's id) in its own final transaction, unless this job
 * stored it before a restart; then the classifier, pinned, is the one
 * step 3 uses.  max_seconds: the lexicon is trained whole, the classifier's
 * feature phase gets what is left of the budget (at least one chunk).
 */
static void
train_what_it_needs(CorpqJob *job, CurateOptions *o, Trained *t, MemoryContext cxt)
{
	TimestampTz start = GetCurrentTimestamp();
	TimestampTz phase;
	char	   *lexicon,
			   *classifier,
			   *copts;
	int32		version;
	ClassifierOptions co;

	memset(t, 0, sizeof(Trained));
	corpq_job_xact_begin(cxt);
	MemoryContextSwitchTo(cxt);
	lexicon = corpq_job_arg(job, "train_lexicon");
	classifier = corpq_job_arg(job, "train_classifier");
	copts = corpq_job_arg(job, "classifier_options");
	/* last: an SPI call leaves SPI's context current */
	version = stored_by_job(job, lexicon_of_job, lexicon);
	corpq_job_xact_commit(cxt);

	/* the lexicon */
	phase = GetCurrentTimestamp();
	t->lexicon_reused = version > 0;
	if (!t->lexicon_reused)
	{
		LexOptions	lo;

		corpq_job_xact_begin(cxt);
		MemoryContextSwitchTo(cxt);
		lexicon_options_parse(NULL, &lo);
		corpq_job_xact_commit(cxt);
		/* curate()'s names: a lexicon of the caller's is replaced (checked at submission) */
		lo.replace = true;
		(void) lexicon_build(job, lexicon, training_query(o->clean_query, CURATE_HALF_LEXICON),
							 &lo, cxt);
		version = stored_by_job(job, lexicon_of_job, lexicon);
		corpq_job_xact_commit(cxt);
		if (version <= 0)
			elog(ERROR, "the lexicon \"%s\" just trained is not in the catalog", lexicon);
		t->lexicon_seconds = seconds_since(phase);
	}
	t->lexicon = psprintf("%s@%d", lexicon, version);

	/* the encoder, when the submission planned one */
	{
		char	   *enc = corpq_job_arg(job, "train_encoder");

		t->encoder_reason = corpq_job_arg(job, "encoder_reason");
		/* a job submitted by a library that trained no encoder */
		if (t->encoder_reason == NULL)
			t->encoder_reason = pstrdup("the job was submitted by a version of corpq that trained no encoder");
		if (enc)
			encoder_phase(job, enc, strtod(corpq_job_arg(job, "encoder_seconds"), NULL), o, t, cxt);
	}

	/* the classifier: the languages, that lexicon, and the encoder if any */
	corpq_job_xact_begin(cxt);
	MemoryContextSwitchTo(cxt);
	classifier_options_parse_text(copts, &co);
	/* the caller's encoder (option "encoder"), pinned at submission */
	if (t->encoder == NULL && co.models.encoder)
	{
		StringInfoData b;

		initStringInfo(&b);
		appendStringInfoString(&b, "{\"name\": ");
		escape_json(&b, co.models.encoder);
		appendStringInfoString(&b, ", \"trained\": false}");
		t->encoder_json = b.data;
		t->encoder_reason = psprintf("%s (%s)", t->encoder_reason, co.models.encoder);
	}
	/* last: an SPI call leaves SPI's context current */
	version = stored_by_job(job, classifier_of_job, classifier);
	corpq_job_xact_commit(cxt);
	phase = GetCurrentTimestamp();
	t->budget = CORPQ_OPT_UNSET_NUMBER;
	t->classifier_reused = version > 0;
	if (!t->classifier_reused)
	{
		co.models.lexicon = t->lexicon;
		if (t->encoder)
			co.models.encoder = t->encoder;
		if (!CORPQ_OPT_IS_UNSET(o->max_seconds))
			co.max_seconds = t->budget = Max(o->max_seconds - seconds_since(start), 1.0);
		(void) classifier_build(job, classifier,
								training_query(o->clean_query, CURATE_HALF_CLASSIFIER),
								&co, cxt, &version);
		corpq_job_xact_commit(cxt);
		t->classifier_seconds = seconds_since(phase);
	}
	t->classifier = psprintf("%s@%d", classifier, version);

	corpq_job_xact_begin(cxt);
	t->summary = training_summary(job, t, lexicon, classifier);
	MemoryContextSwitchTo(cxt);
	t->summary = pstrdup(t->summary);
	corpq_job_xact_commit(cxt);

	o->classifier = t->classifier;
	if (CORPQ_OPT_IS_UNSET(o->threshold))
		o->threshold = CURATE_DEFAULT_THRESHOLD;
}

/* ---- step 3: the classifier ---- */

/*
 * corpq.pair_quality(classifier text, src text, tgt text): the classifier's
 * own function, called through fmgr so that a written probability is the
 * one the user's SQL call returns, bit for bit.
 */
static Oid
pair_quality_function(void)
{
	Oid			args[3] = {TEXTOID, TEXTOID, TEXTOID};
	List	   *name = list_make2(makeString("corpq"), makeString("pair_quality"));

	return LookupFuncName(name, 3, args, false);
}

typedef struct Classifier
{
	FmgrInfo	fn;
	Datum		name;			/* text */
} Classifier;

/* In the job's setup: the function, for the job's life (cxt). */
static Classifier *
classifier_open(const char *name, MemoryContext cxt)
{
	Classifier *c = MemoryContextAllocZero(cxt, sizeof(Classifier));
	MemoryContext old = MemoryContextSwitchTo(cxt);

	fmgr_info_cxt(pair_quality_function(), &c->fn, cxt);
	c->name = PointerGetDatum(cstring_to_text(name));
	MemoryContextSwitchTo(old);
	return c;
}

/* The probability that the pair is clean; false when the classifier gives NULL. */
static bool
classifier_probability(Classifier *c, const char *src, int slen, const char *tgt, int tlen,
					   double *p)
{
	LOCAL_FCINFO(fcinfo, 3);
	Datum		d;

	InitFunctionCallInfoData(*fcinfo, &c->fn, 3, DEFAULT_COLLATION_OID, NULL, NULL);
	fcinfo->args[0].value = c->name;
	fcinfo->args[0].isnull = false;
	fcinfo->args[1].value = PointerGetDatum(cstring_to_text_with_len(src, slen));
	fcinfo->args[1].isnull = false;
	fcinfo->args[2].value = PointerGetDatum(cstring_to_text_with_len(tgt, tlen));
	fcinfo->args[2].isnull = false;
	d = FunctionCallInvoke(fcinfo);
	if (fcinfo->isnull)
		return false;
	*p = DatumGetFloat8(d);
	return true;
}

/* ---- the SQL function ---- */

Datum
corpq_curate(PG_FUNCTION_ARGS)
{
	CorpqRowJobCall call = {0};
	CorpqRowJobSubmit sub = {0};
	CurateOptions o;
	CorpqRowJobColumn columns[N_TARGET_COLUMNS];
	Jsonb	   *filters;
	Jsonb	   *rest;
	Oid			corpus;
	char	   *cname;
	char	   *rules;
	int			n_rules;
	char	   *lang_src = NULL;
	char	   *lang_tgt = NULL;
	bool		with_classifier;
	StringInfoData more;

	corpq_require_arg(fcinfo, 0, "corpus");
	corpq_require_arg(fcinfo, 1, "target");
	corpus = PG_GETARG_OID(0);
	call.target = PG_GETARG_OID(1);
	call.options = PG_NARGS() > 2 && !PG_ARGISNULL(2) ? PG_GETARG_JSONB_P(2) : NULL;

	rest = take_filters(call.options, &filters);
	corpq_options_parse(&corpq_curate_options, rest, &o);
	if (o.classifier == NULL && o.clean_query == NULL && !CORPQ_OPT_IS_UNSET(o.threshold))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the curate option \"threshold\" is given without a classifier"),
				 errhint("The threshold applies to the probability of the option \"classifier\" (or of the classifier trained from \"clean_query\"): give both, or neither.")));
	if (o.classifier && o.clean_query)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the curate options \"classifier\" and \"clean_query\" are both given"),
				 errhint("Give a classifier to use, or a clean query to train one from, not both.")));
	if (o.clean_query == NULL && !CORPQ_OPT_IS_UNSET(o.max_seconds))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the curate option \"max_seconds\" is given without \"clean_query\""),
				 errhint("max_seconds bounds the training curate() does from a clean query.")));
	if ((o.classifier || o.clean_query) && CORPQ_OPT_IS_UNSET(o.threshold))
		o.threshold = CURATE_DEFAULT_THRESHOLD;
	if (o.clean_query == NULL && (o.encoder || !CORPQ_OPT_IS_UNSET(o.encoder_seconds)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the curate option \"%s\" is given without \"clean_query\"",
						o.encoder ? "encoder" : "encoder_seconds"),
				 errhint("The encoder is a feature of the classifier curate() trains from a clean query; "
						 "a classifier of yours has its encoder already (classifier_train's option \"encoder\").")));
	if (!CORPQ_OPT_IS_UNSET(o.encoder_seconds) && (o.encoder || !o.train_encoder))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the curate option \"encoder_seconds\" is given with %s",
						o.encoder ? "\"encoder\"" : "\"train_encoder\": false"),
				 errhint("encoder_seconds is the budget of the encoder curate() trains: give it only when curate() trains one.")));
	if (!CORPQ_OPT_IS_UNSET(o.encoder_seconds) &&
		(CORPQ_OPT_IS_UNSET(o.max_seconds) || o.encoder_seconds >= o.max_seconds))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the curate option \"encoder_seconds\" must be less than \"max_seconds\""),
				 errdetail(CORPQ_OPT_IS_UNSET(o.max_seconds) ? "max_seconds is not given."
						   : "encoder_seconds is %g, max_seconds %g.", o.encoder_seconds, o.max_seconds),
				 errhint("max_seconds bounds all of curate()'s training: the lexicon, the encoder and the classifier.")));

	/*
	 * The defaults in front of a classifier (given or trained): what it does
	 * not see -- markup (html_tags), empty sides, exact duplicates -- and
	 * not the rules, language ID, copies and near duplicates, whose signals
	 * it holds as features and which cost clean pairs (measured:
	 * docs/curation.md, "The cheap steps in front of a classifier").
	 */
	with_classifier = o.classifier != NULL || o.clean_query != NULL;
	if (CORPQ_OPT_IS_UNSET(o.dedup))
		o.dedup = with_classifier ? CURATE_DEDUP_EXACT : CURATE_DEDUP_NEAR;
	if (with_classifier && !option_given(rest, "copies"))
		o.copies = false;
	/* step 1's filters, checked and pinned */
	if (filters == NULL)
		filters = with_classifier
			? DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(CURATE_CLASSIFIER_FILTERS)))
			: default_filters();
	rules = pinned_spec(filters, &n_rules);
	/* language ID: asked for by the languages, unless they are the trained classifier's */
	if (o.src_lang && o.clean_query == NULL)
		lang_src = langid_spec(o.src_lang, "src");
	if (o.tgt_lang && o.clean_query == NULL)
		lang_tgt = langid_spec(o.tgt_lang, "tgt");

	/* the corpus and its columns */
	cname = corpus_name(corpus);
	{
		const char *id = corpus_column(corpus, cname, o.id_column, "id_column", "id", true);
		const char *src = corpus_column(corpus, cname, o.src_column, "src_column", "source", false);
		const char *tgt = corpus_column(corpus, cname, o.tgt_column, "tgt_column", "target", false);

		call.query = build_query(cname, id, src, tgt, n_rules > 0 ? rules : NULL,
								 lang_src, lang_tgt, o.dedup, o.copies);
	}
	/* pinned now: a version trained while the job runs changes nothing */
	if (o.classifier)
		o.classifier = classifier_pin(o.classifier);

	target_columns(columns);
	initStringInfo(&more);
	appendStringInfoString(&more, "\"corpus\": ");
	escape_json(&more, cname);
	appendStringInfo(&more, ", \"corpus_oid\": %u, \"filters\": %s", corpus, rules);
	if (o.clean_query)
	{
		char	   *lexicon,
				   *classifier;
		char	   *target_rel = get_rel_name(call.target);
		char	   *copts;

		if (target_rel == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("target relation with oid %u does not exist", call.target)));
		copts = check_training(&o, target_rel, &lexicon, &classifier);
		appendStringInfoString(&more, ", \"train_lexicon\": ");
		escape_json(&more, lexicon);
		appendStringInfoString(&more, ", \"train_classifier\": ");
		escape_json(&more, classifier);
		appendStringInfo(&more, ", \"classifier_options\": %s", copts);
		plan_encoder(&o, target_rel, &more);
	}
	/* the job's "model" (corpq.job_timeline's target): the classifier, if any */
	sub.model = o.classifier;
	sub.more_args = more.data;
	sub.columns = columns;
	sub.n_columns = N_TARGET_COLUMNS;
	sub.skip_existing = o.skip_existing;
	sub.options_json = corpq_options_json(&corpq_curate_options, &o);
	sub.threads = o.threads;
	sub.foreign_target = o.foreign_target;
	{
		int64		id = corpq_row_job_submit(&kind, &call, &sub);

		/* skip_existing, no row missing: no job (row_job.h) */
		if (id == 0)
			PG_RETURN_NULL();
		PG_RETURN_INT64(id);
	}
}

/* ---- the job ---- */

/* One row of a block, copied out of the fetch. */
typedef struct BlockRow
{
	int64		id;
	uint64		mark;
	char	   *src;			/* NULL: a NULL side */
	int			slen;
	char	   *tgt;
	int			tlen;
	char	  **reasons;		/* step 1's, or NULL for a NULL side */
	int			n_reasons;
	bool		has_exact;
	int64		exact_first;
	bool		has_near;
	int64		near_first;
} BlockRow;

#define CURATE_BLOCK_ROWS 256

typedef struct CurateRun
{
	CorpqJob   *job;
	CurateOptions o;
	CorpqRowJob *rj;
	Classifier *classifier;		/* NULL: no classifier step */
	MemoryContext block_cxt;
	BlockRow	rows[CURATE_BLOCK_ROWS];
	int			n;
	double		classifier_seconds;
	Trained    *trained;		/* NULL: nothing trained (no clean query) */
} CurateRun;

static double
curate_seconds(void *arg)
{
	return corpq_row_job_compute_seconds(((CurateRun *) arg)->rj);
}

static void
read_rows(void *arg, const CorpqBatch *b, const uint64 *marks)
{
	CurateRun  *r = arg;
	MemoryContext old = MemoryContextSwitchTo(r->block_cxt);

	for (uint64 i = 0; i < b->n; i++)
	{
		BlockRow   *row = &r->rows[r->n++];
		const char *s;
		int			len;
		Datum		d;

		memset(row, 0, sizeof(BlockRow));
		(void) corpq_batch_int64(b, i, Q_ID, &row->id); /* never NULL: the row job checked */
		row->mark = marks[i];
		if (corpq_batch_text(b, i, Q_SRC, &s, &len))
		{
			row->src = pnstrdup(s, len);
			row->slen = len;
		}
		if (corpq_batch_text(b, i, Q_TGT, &s, &len))
		{
			row->tgt = pnstrdup(s, len);
			row->tlen = len;
		}
		if (corpq_batch_text(b, i, Q_REASONS, &s, &len))
		{
			Datum	   *elems;
			bool	   *nulls;

			/* array_in caches in its flinfo: called through one */
			d = OidInputFunctionCall(F_ARRAY_IN, pnstrdup(s, len), TEXTOID, -1);
			deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
							  &elems, &nulls, &row->n_reasons);
			row->reasons = palloc(sizeof(char *) * Max(row->n_reasons, 1));
			for (int k = 0; k < row->n_reasons; k++)
				row->reasons[k] = nulls[k] ? pstrdup("") : TextDatumGetCString(elems[k]);
		}
		row->has_exact = corpq_batch_int64(b, i, Q_EXACT, &row->exact_first);
		row->has_near = corpq_batch_int64(b, i, Q_NEAR, &row->near_first);
	}
	MemoryContextSwitchTo(old);
}

/* The reason kind a step-1 reason counts under. */
static int
reason_kind(const char *reason)
{
	if (strncmp(reason, "langid:", 7) == 0)
		return COUNT_LANGID;
	if (strcmp(reason, "copy") == 0)
		return COUNT_COPY;
	if (strncmp(reason, "empty:", 6) == 0)
		return COUNT_EMPTY;
	return COUNT_RULE;
}

/*
 * The row's decision, probability and reasons, put into the target (a
 * chunk may commit): everything from the row alone.
 */
static void
decide(CurateRun *r, BlockRow *row)
{
	Datum		values[N_TARGET_COLUMNS];
	bool		nulls[N_TARGET_COLUMNS] = {false, false, true, false};
	int64		counts[N_COUNTS] = {0};
	const char **reasons = palloc(sizeof(char *) * (row->n_reasons + 2));
	int			n = 0;
	bool		keep = false;
	double		p = 0;
	MemoryContext old;

	if (row->src == NULL || row->tgt == NULL)
	{
		if (row->src == NULL)
			reasons[n++] = "null:src";
		if (row->tgt == NULL)
			reasons[n++] = "null:tgt";
		counts[COUNT_NULL] = 1;
	}
	else if (row->n_reasons > 0)
	{
		for (int k = 0; k < row->n_reasons; k++)
		{
			reasons[n++] = row->reasons[k];
			counts[reason_kind(row->reasons[k])] = 1;
		}
	}
	else if (row->has_exact && row->exact_first < row->id)
	{
		reasons[n++] = psprintf("duplicate_of:" INT64_FORMAT, row->exact_first);
		counts[COUNT_DUPLICATE] = 1;
	}
	else if (row->has_near && row->near_first < row->id)
	{
		reasons[n++] = psprintf("near_duplicate_of:" INT64_FORMAT, row->near_first);
		counts[COUNT_NEAR_DUPLICATE] = 1;
	}
	else if (r->classifier == NULL)
		keep = true;
	else
	{
		instr_time	t0,
					t1;

		INSTR_TIME_SET_CURRENT(t0);
		nulls[2] = !classifier_probability(r->classifier, row->src, row->slen,
										   row->tgt, row->tlen, &p);
		INSTR_TIME_SET_CURRENT(t1);
		INSTR_TIME_SUBTRACT(t1, t0);
		r->classifier_seconds += INSTR_TIME_GET_DOUBLE(t1);
		/* NULL (the classifier could not judge the pair): dropped, as a model filter does */
		keep = !nulls[2] && p >= r->o.threshold;
		if (!keep)
		{
			reasons[n++] = nulls[2] ? "classifier:null" : psprintf("classifier:%.3f", p);
			counts[COUNT_CLASSIFIER] = 1;
		}
	}
	counts[keep ? COUNT_KEPT : COUNT_DROPPED] = 1;

	old = MemoryContextSwitchTo(corpq_row_job_memory(r->rj));
	values[0] = Int64GetDatum(row->id);
	values[1] = CStringGetTextDatum(keep ? "keep" : "drop");
	values[2] = nulls[2] ? (Datum) 0 : Float8GetDatum(p);
	{
		Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));

		for (int k = 0; k < n; k++)
			elems[k] = CStringGetTextDatum(reasons[k]);
		values[3] = PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
	}
	MemoryContextSwitchTo(old);
	corpq_row_job_put(r->rj, values, nulls, row->mark, counts);
}

/* In the job's first transaction: the target's columns, the classifier. */
static void
setup(CorpqRowJob *rj, void *arg)
{
	CurateRun  *r = arg;
	CorpqRowJobColumn columns[N_TARGET_COLUMNS];

	target_columns(columns);
	corpq_row_job_columns(rj, columns, N_TARGET_COLUMNS);
	if (r->o.classifier)
		r->classifier = classifier_open(r->o.classifier, CurrentMemoryContext);
}

/* The result's own members: what ran, and what decided. */
static char *
kind_members(CurateRun *r)
{
	StringInfoData b;
	static const char *const dedup_names[] = {"none", "exact", "near"};

	initStringInfo(&b);
	appendStringInfoString(&b, "\"corpus\": ");
	escape_json(&b, corpq_job_arg(r->job, "corpus"));
	/* "classifier" is the counter of the pairs it dropped */
	appendStringInfoString(&b, ", \"classifier_name\": ");
	if (r->o.classifier)
	{
		escape_json(&b, r->o.classifier);
		appendStringInfoString(&b, ", \"threshold\": ");
		corpq_json_number(&b, r->o.threshold);
	}
	else
		appendStringInfoString(&b, "null, \"threshold\": null");
	appendStringInfo(&b, ", \"dedup\": \"%s\", \"steps\": ", dedup_names[r->o.dedup]);
	{
		StringInfoData s;

		initStringInfo(&s);
		appendStringInfoString(&s, "rule filters");
		if ((r->o.src_lang || r->o.tgt_lang) && r->o.clean_query == NULL)
			appendStringInfoString(&s, ", language ID");
		if (r->o.copies)
			appendStringInfoString(&s, ", copies");
		if (r->o.dedup == CURATE_DEDUP_EXACT)
			appendStringInfoString(&s, ", exact duplicates");
		else if (r->o.dedup == CURATE_DEDUP_NEAR)
			appendStringInfoString(&s, ", exact and near duplicates");
		if (r->o.classifier)
			appendStringInfoString(&s, ", the classifier");
		else
			appendStringInfoString(&s, "; no classifier: the decisions use these steps only");
		escape_json(&b, s.data);
	}
	appendStringInfo(&b, ", \"filters\": %s, \"classifier_seconds\": %.3f, \"skip_existing\": %s",
					 corpq_job_arg(r->job, "filters"), r->classifier_seconds,
					 r->o.skip_existing ? "true" : "false");
	appendStringInfo(&b, ", \"training\": %s", r->trained ? r->trained->summary : "null");
	return b.data;
}

static void
curate_job(CorpqJob *job)
{
	MemoryContext cxt = CurrentMemoryContext;
	CurateRun  *r = palloc0(sizeof(CurateRun));

	r->job = job;
	corpq_options_parse_text(&corpq_curate_options, corpq_job_arg(job, "options"), &r->o);
	r->block_cxt = AllocSetContextCreate(cxt, "corpq curate block", ALLOCSET_DEFAULT_SIZES);
	if (r->o.clean_query)
	{
		r->trained = palloc0(sizeof(Trained));
		train_what_it_needs(job, &r->o, r->trained, cxt);
	}
	r->rj = corpq_row_job_begin(job, &kind, r->o.chunk_rows, r->o.skip_existing, r);
	corpq_row_job_start(r->rj);

	/* block by block; a full chunk commits inside decide() */
	corpq_job_xact_begin(cxt);
	MemoryContextSwitchTo(cxt);
	while (corpq_row_job_fetch(r->rj, CURATE_BLOCK_ROWS, read_rows, r) > 0)
	{
		for (int i = 0; i < r->n; i++)
		{
			MemoryContext old = MemoryContextSwitchTo(r->block_cxt);

			decide(r, &r->rows[i]);
			MemoryContextSwitchTo(old);
			CHECK_FOR_INTERRUPTS();
		}
		r->n = 0;
		MemoryContextReset(r->block_cxt);
		corpq_row_job_progress(r->rj, false);
	}
	corpq_row_job_finish(r->rj, kind_members(r));
	corpq_job_xact_commit(cxt);
}

void
corpq_curate_job_init(void)
{
	corpq_job_register_kind("curate", curate_job, true);
}
