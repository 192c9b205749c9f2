/*
 * corpq.rejuvenate(): data rejuvenation (thesis ch. 5) as a pipeline job.
 * The stages are the SQL of docs/pipelines.md's "Data rejuvenation" section.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/json.h"

#include "pg/base/corpus_query.h"
#include "pg/base/errors.h"
#include "pg/base/options.h"
#include "pg/translate/translate.h"
#include "pg/model/model.h"
#include "pg/pipeline/pipeline.h"
#include "pg/pipeline/pipeline_gate.h"
#include "pg/pipeline/pipeline_synthetic.h"
#include "pg/pipeline/pipeline_kinds.h"
#include "pg/train/train.h"


static const CorpqColumn corpus_columns[] = {
	{"id", CORPQ_COLUMN_INTEGER}, {"src", CORPQ_COLUMN_TEXT}, {"tgt", CORPQ_COLUMN_TEXT}
};
static const CorpqQuerySpec corpus_spec = {
	"corpus", corpus_columns, 3, 3, "SELECT id, src, tgt FROM pairs", true
};

/* The pipeline's tables (created at submission, claimed by their stage). */
enum
{
	T_PAIRS, T_BINS, T_TRANSLATIONS, T_REJUVENATED
};
static const PipelineTable rejuv_tables[] = {
	{"pairs", "id pg_catalog.int8 PRIMARY KEY, src pg_catalog.text, tgt pg_catalog.text, "
	"prob pg_catalog.float8, inactive pg_catalog.bool"},
	{"bins", "bin pg_catalog.int4, pairs pg_catalog.int8, inactive pg_catalog.int8, "
	"min_prob pg_catalog.float8, max_prob pg_catalog.float8, mean_prob pg_catalog.float8"},
	{"translations", "id pg_catalog.int8, hyp pg_catalog.text, score pg_catalog.float8, finished pg_catalog.bool"},
	{"rejuvenated", "id pg_catalog.int8 PRIMARY KEY, src pg_catalog.text, tgt_old pg_catalog.text, "
	"tgt_new pg_catalog.text, " PIPELINE_SYNTHETIC_COLUMNS},
	{NULL}
};

PG_FUNCTION_INFO_V1(corpq_rejuvenate);

Datum
corpq_rejuvenate(PG_FUNCTION_ARGS)
{
	char	   *corpus,
			   *dev = NULL,
			   *schema;
	PipelineObjects obj;
	Jsonb	   *options = PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2);
	CorpqRejuvenateOptions o;
	const char *models[4];
	int			n_models = 0;
	char	   *args;

	corpq_require_arg(fcinfo, 0, "corpus");
	corpus = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!PG_ARGISNULL(1))
		dev = text_to_cstring(PG_GETARG_TEXT_PP(1));
	options = pipeline_take_objects(options, &obj);
	corpq_options_parse(&corpq_rejuvenate_options, options, &o);
	if (o.name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rejuvenate option \"name\" is required"),
				 errhint("The pipeline's tables and models are named after it.")));
	(void) corpq_query_check(corpus, &corpus_spec);
	if (dev)
		train_check_query(dev, "dev");
	if (o.identifier)
		pipeline_check_model(o.identifier);
	else
		models[n_models++] = "identifier";
	if (o.rejuvenator)
		pipeline_check_model(o.rejuvenator);
	else
		models[n_models++] = "rejuvenator";
	if (o.train_final)
		models[n_models++] = "final";
	models[n_models] = NULL;
	if (n_models > 0)
		pipeline_check_new_models("rejuvenate", &obj, o.src_vocab, o.tgt_vocab);
	else
	{
		if (o.src_vocab)
			pipeline_check_vocab(o.src_vocab);
		if (o.tgt_vocab)
			pipeline_check_vocab(o.tgt_vocab);
	}
	schema = pipeline_check_schema();
	args = pipeline_args(o.name, schema, corpq_options_json(&corpq_rejuvenate_options, &o), &obj,
						 "corpus", corpus, "dev", dev, NULL);
	PG_RETURN_INT64(pipeline_submit("rejuvenate", o.name, schema, args,
									rejuv_tables, models, o.threads));
}

/* ---- the job ---- */

typedef struct Rejuv
{
	CorpqRejuvenateOptions o;
	const char *corpus;			/* the user's query, columns renamed (id, src, tgt) */
	const char *dev;			/* SQL literal or NULL */
	const char *dev_query;		/* the same query as text, or NULL */
	const char *model;			/* model_create config, SQL literal */
	const char *train;			/* train() options, SQL literal */
	const char *translate;		/* translate_job() options, SQL literal */
	char	   *pairs,
			   *bins,
			   *translations,
			   *rejuvenated;	/* the tables, quoted */
	char	   *identifier,
			   *rejuvenator;	/* model names used */
} Rejuv;

/* name@latest of a model (in a transaction), as a JSON string. */
static char *
model_version_json(const char *model)
{
	char	   *v = pipeline_value(psprintf("SELECT name OPERATOR(pg_catalog.||) '@' OPERATOR(pg_catalog.||) latest_version "
											"FROM corpq.models WHERE name OPERATOR(pg_catalog.=) %s",
											quote_literal_cstr(model)));
	StringInfoData b;

	initStringInfo(&b);
	escape_json(&b, v ? v : model);
	return b.data;
}

/*
 * Create the pipeline's model unless it exists, and train it on query: a
 * train() sub-job.  Returns the output JSON.
 */
/* What a training stage measures on the dev set when its model is trained. */
typedef enum StageGate
{
	GATE_REJUVENATOR,			/* the rejuvenator against the identifier */
	GATE_FINAL					/* the final model against the identifier */
} StageGate;

static char *
gate_members(Rejuv *r, const char *model, StageGate g)
{
	if (g == GATE_REJUVENATOR)
		return pipeline_gate_check("rejuvenator", model, r->identifier, r->dev_query, r->o.beam,
								   (PipelineGate) r->o.gate);
	return pipeline_gate_final("final model", model, r->identifier, r->dev_query, r->o.beam);
}

static char *
train_stage(Pipeline *p, Rejuv *r, const char *model, const char *query, StageGate g)
{
	char	   *prepare,
			   *submit,
			   *out;
	int64		subjob;

	prepare = psprintf("SELECT corpq.model_create(%s, %s, %s, %s, %lld) "
					   "WHERE NOT EXISTS (SELECT FROM corpq.models WHERE name OPERATOR(pg_catalog.=) %s)",
					   quote_literal_cstr(model), r->model, quote_literal_cstr(r->o.src_vocab),
					   quote_literal_cstr(r->o.tgt_vocab), (long long) r->o.seed,
					   quote_literal_cstr(model));
	submit = psprintf("SELECT corpq.train(%s, %s, %s, %s)", quote_literal_cstr(model),
					  quote_literal_cstr(query), r->dev ? r->dev : "NULL", r->train);
	subjob = pipeline_subjob(p, NULL, prepare, submit);
	corpq_job_xact_begin(p->cxt);
	out = psprintf("{\"model\": %s, \"train_job\": " INT64_FORMAT ", %s}",
				   model_version_json(model), subjob, gate_members(r, model, g));
	pipeline_stage_done(p, out);
	corpq_job_xact_commit(p->cxt);
	return out;
}

/*
 * The condition under which a pair of the pairs table fits model: both sides
 * shorter than its max_positions (</s> takes the last position).  Training
 * skips the pairs that do not fit; identification leaves them unscored
 * rather than fail on one long pair of an imported model's corpus.
 */
static char *
fits_model(const char *model)
{
	return pipeline_value(psprintf("SELECT pg_catalog.format('pg_catalog.cardinality(corpq.vocab_encode(%%L, src)) "
								   "OPERATOR(pg_catalog.<) %%s AND pg_catalog.cardinality(corpq.vocab_encode(%%L, tgt)) "
								   "OPERATOR(pg_catalog.<) %%s', src_vocab, config->>'max_positions', tgt_vocab, "
								   "config->>'max_positions') FROM corpq.model_catalog WHERE name OPERATOR(pg_catalog.=) %s",
								   quote_literal_cstr(model)));
}

/* Stage 1: the identification model, then sent_prob of every pair that fits it. */
static void
stage_identify(Pipeline *p, void *arg)
{
	Rejuv	   *r = arg;
	int64		subjob = 0;
	char	   *last = "-9223372036854775808";
	long		n,
				done = 0;
	char	   *fits;

	if (r->o.identifier == NULL)
		subjob = pipeline_subjob(p, NULL,
								 psprintf("SELECT corpq.model_create(%s, %s, %s, %s, %lld) "
										  "WHERE NOT EXISTS (SELECT FROM corpq.models WHERE name OPERATOR(pg_catalog.=) %s)",
											 quote_literal_cstr(r->identifier), r->model,
											 quote_literal_cstr(r->o.src_vocab),
											 quote_literal_cstr(r->o.tgt_vocab), (long long) r->o.seed,
											 quote_literal_cstr(r->identifier)),
								 psprintf("SELECT corpq.train(%s, %s, %s, %s)",
										  quote_literal_cstr(r->identifier),
										  quote_literal_cstr(psprintf("SELECT src, tgt FROM (%s) c", r->corpus)),
										  r->dev ? r->dev : "NULL", r->train));
	corpq_job_xact_begin(p->cxt);
	pipeline_claim_table(p, r->pairs, rejuv_tables[T_PAIRS].columns);
	/* the user's query, with their search_path; nothing else in the statement resolves a name */
	pipeline_exec_user(psprintf("INSERT INTO %s (id, src, tgt) SELECT id, src, tgt FROM (%s) c",
								r->pairs, r->corpus));
	n = SPI_processed;
	fits = fits_model(r->identifier);
	/* in chunks, so progress shows; all in this stage's one transaction */
	while (done < n)
	{
		char	   *next = pipeline_value(psprintf("SELECT pg_catalog.max(id) FROM (SELECT id FROM %s "
												   "WHERE id OPERATOR(pg_catalog.>) '%s'::pg_catalog.int8 "
												   "ORDER BY id LIMIT %d) s",
												   r->pairs, last, r->o.score_rows));
		char	   *chunk;

		if (next == NULL)
			break;
		/* corpq.score reads it with this statement's fixed search_path */
		chunk = psprintf("SELECT id, src, tgt FROM %s WHERE id OPERATOR(pg_catalog.>) '%s'::pg_catalog.int8 "
						 "AND id OPERATOR(pg_catalog.<=) '%s'::pg_catalog.int8 AND %s", r->pairs, last, next, fits);
		pipeline_exec(psprintf("UPDATE %s p SET prob = s.score FROM corpq.score(%s, %s, 'sent_prob') s "
							   "WHERE p.id OPERATOR(pg_catalog.=) s.id", r->pairs, quote_literal_cstr(r->identifier),
							   quote_literal_cstr(chunk)));
		done = Min(n, done + r->o.score_rows);
		last = pstrdup(next);
		pipeline_progress(p, "scoring", done, n, "pairs");
	}
	pipeline_stage_done(p, psprintf("{\"identifier\": %s, \"train_job\": %s, \"pairs\": %s, \"rows\": %ld, "
									"\"unscored\": %s}",
									model_version_json(r->identifier),
									subjob ? psprintf(INT64_FORMAT, subjob) : "null",
									pipeline_value(psprintf("SELECT to_json(%s::text)", quote_literal_cstr(r->pairs))),
									n, pipeline_value(psprintf("SELECT pg_catalog.count(*) FROM %s WHERE prob IS NULL",
															   r->pairs))));
	corpq_job_xact_commit(p->cxt);
}

/*
 * Stage 2: the round(ratio * n) (at least 1) least probable pairs are
 * inactive.  The bins are the thesis's (after Wang et al.): 10 equal bins by
 * the rank of the probability, so bin 1 is the least probable 10% whatever
 * the probabilities' spread (equal-width bins of [0, 1] put most pairs of a
 * small model in the first).
 */
static void
stage_select(Pipeline *p, void *arg)
{
	Rejuv	   *r = arg;
	char	   *out;

	corpq_job_xact_begin(p->cxt);
	pipeline_check_table(p, r->pairs);
	pipeline_claim_table(p, r->bins, rejuv_tables[T_BINS].columns);
	/* unscored pairs (too long for the identifier) stay active: training skips what does not fit */
	pipeline_exec(psprintf("UPDATE %s SET inactive = false WHERE prob IS NULL", r->pairs));
	pipeline_exec(psprintf("UPDATE %s p SET inactive = s.rank <= s.k FROM ("
						   "SELECT id, row_number() OVER (ORDER BY prob, id) AS rank, "
						   "greatest(1, round(%.17g::float8 * count(*) OVER ())) AS k FROM %s WHERE prob IS NOT NULL) s "
						   "WHERE p.id = s.id", r->pairs, r->o.ratio, r->pairs));
	pipeline_exec(psprintf("INSERT INTO %s (bin, pairs, inactive, min_prob, max_prob, mean_prob) "
						   "SELECT bin, count(*) AS pairs, count(*) FILTER (WHERE inactive) AS inactive, "
						   "min(prob) AS min_prob, max(prob) AS max_prob, avg(prob) AS mean_prob "
						   "FROM (SELECT ntile(10) OVER (ORDER BY prob, id) AS bin, prob, inactive "
						   "FROM %s WHERE prob IS NOT NULL) b GROUP BY 1 ORDER BY 1",
						   r->bins, r->pairs));
	out = pipeline_value(psprintf("SELECT json_build_object('inactive', count(*) FILTER (WHERE inactive), "
								  "'active', count(*) FILTER (WHERE NOT inactive), "
								  "'threshold', max(prob) FILTER (WHERE inactive), 'bins', %s::text)::text FROM %s",
								  quote_literal_cstr(r->bins), r->pairs));
	pipeline_stage_done(p, out);
	corpq_job_xact_commit(p->cxt);
}

/* Stage 3: the rejuvenation model, trained on the active pairs. */
static void
stage_rejuvenator(Pipeline *p, void *arg)
{
	Rejuv	   *r = arg;

	if (r->o.rejuvenator)
	{
		corpq_job_xact_begin(p->cxt);
		pipeline_stage_done(p, psprintf("{\"model\": %s, \"given\": true, %s}",
										model_version_json(r->rejuvenator),
										gate_members(r, r->rejuvenator, GATE_REJUVENATOR)));
		corpq_job_xact_commit(p->cxt);
		return;
	}
	(void) train_stage(p, r, r->rejuvenator,
					   psprintf("SELECT src, tgt FROM %s WHERE NOT inactive ORDER BY id", r->pairs),
					   GATE_REJUVENATOR);
}

/*
 * Stage 4: forward-translate the inactive sources; the pipelines' filters
 * mark which translations the final model may learn from (an inactive pair
 * whose translation is dropped leaves the training data: its own target is
 * the one the identifier found least probable).
 */
static void
stage_translate(Pipeline *p, void *arg)
{
	Rejuv	   *r = arg;
	int64		subjob;

	subjob = pipeline_subjob(p, &rejuv_tables[T_TRANSLATIONS], NULL,
							 psprintf("SELECT corpq.translate_job(%s, %s, %s, %s::pg_catalog.jsonb "
									  "OPERATOR(pg_catalog.||) '{\"beam\": %d}')",
									  quote_literal_cstr(r->rejuvenator),
									  quote_literal_cstr(psprintf("SELECT id, src FROM %s WHERE inactive ORDER BY id",
																  r->pairs)),
									  quote_literal_cstr(r->translations), r->translate, r->o.beam));
	corpq_job_xact_begin(p->cxt);
	pipeline_check_table(p, r->translations);
	pipeline_claim_table(p, r->rejuvenated, rejuv_tables[T_REJUVENATED].columns);
	pipeline_exec(psprintf("INSERT INTO %s (id, src, tgt_old, tgt_new, score, finished, src_words, tgt_words, repeats) "
						   "SELECT p.id, p.src, p.tgt, t.hyp, t.score, t.finished, %s, %s, %s "
						   "FROM %s p JOIN %s t ON t.id OPERATOR(pg_catalog.=) p.id",
						   r->rejuvenated, pipeline_synthetic_words("p.src"), pipeline_synthetic_words("t.hyp"),
						   pipeline_synthetic_repeats(&r->o.synthetic, "t.hyp"),
						   r->pairs, r->translations));
	pipeline_synthetic_mark(&r->o.synthetic, r->rejuvenated);
	pipeline_stage_done(p, pipeline_value(psprintf("SELECT json_build_object('model', %s::json, "
												   "'translate_job', " INT64_FORMAT ", "
												   "'rejuvenated', %s::text, 'rows', count(*), %s)::text FROM %s",
												   quote_literal_cstr(model_version_json(r->rejuvenator)),
												   subjob, quote_literal_cstr(r->rejuvenated),
												   pipeline_synthetic_counts(&r->o.synthetic),
												   r->rejuvenated)));
	corpq_job_xact_commit(p->cxt);
}

/* Stage 5: the final model on active + kept rejuvenated pairs. */
static void
stage_final(Pipeline *p, void *arg)
{
	Rejuv	   *r = arg;

	if (!r->o.train_final)
	{
		corpq_job_xact_begin(p->cxt);
		pipeline_stage_done(p, "{\"skipped\": true}");
		corpq_job_xact_commit(p->cxt);
		return;
	}
	(void) train_stage(p, r, psprintf("%s_final", r->o.name),
					   psprintf("SELECT src, tgt FROM (SELECT id, src, tgt FROM %s WHERE NOT inactive "
								"UNION ALL SELECT id, src, tgt_new FROM %s WHERE kept) s ORDER BY id",
								r->pairs, r->rejuvenated), GATE_FINAL);
}

static const char *
literal_or_null(const char *s)
{
	return s ? quote_literal_cstr(s) : NULL;
}

void
rejuvenate_job(CorpqJob *job)
{
	Pipeline	p;
	Rejuv		r;

	pipeline_init(&p, job, 5);
	memset(&r, 0, sizeof(r));
	corpq_options_parse_text(&corpq_rejuvenate_options, corpq_job_arg(job, "options"), &r.o);
	r.corpus = psprintf("SELECT * FROM (%s) c0(id, src, tgt)", corpq_job_arg(job, "corpus"));
	r.dev = literal_or_null(corpq_job_arg(job, "dev"));
	r.dev_query = corpq_job_arg(job, "dev");
	r.model = quote_literal_cstr(corpq_job_arg(job, "model"));
	r.train = quote_literal_cstr(corpq_job_arg(job, "train"));
	r.translate = quote_literal_cstr(corpq_job_arg(job, "translate"));
	r.pairs = pipeline_table(&p, "pairs");
	r.bins = pipeline_table(&p, "bins");
	r.translations = pipeline_table(&p, "translations");
	r.rejuvenated = pipeline_table(&p, "rejuvenated");
	r.identifier = r.o.identifier ? r.o.identifier : psprintf("%s_identifier", r.o.name);
	r.rejuvenator = r.o.rejuvenator ? r.o.rejuvenator : psprintf("%s_rejuvenator", r.o.name);

	pipeline_stage(&p, 1, "identification", stage_identify, &r);
	pipeline_stage(&p, 2, "select", stage_select, &r);
	pipeline_stage(&p, 3, "rejuvenation model", stage_rejuvenator, &r);
	pipeline_stage(&p, 4, "forward translation", stage_translate, &r);
	pipeline_stage(&p, 5, "final model", stage_final, &r);
	pipeline_finish(&p);
}
