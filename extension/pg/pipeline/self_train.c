/*
 * corpq.self_train(): UncSamp self-training (thesis ch. 6) as a pipeline
 * job, with random and word-rarity sampling as the baselines.  The stages
 * are the SQL of docs/pipelines.md's "UncSamp self-training" section.
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



static const CorpqColumn pair_columns[] = {
	{"src", CORPQ_COLUMN_TEXT}, {"tgt", CORPQ_COLUMN_TEXT}
};
static const CorpqQuerySpec parallel_spec = {
	"parallel", pair_columns, 2, 2, "SELECT src, tgt FROM pairs", true
};
static const CorpqColumn mono_columns[] = {
	{"id", CORPQ_COLUMN_INTEGER}, {"src", CORPQ_COLUMN_TEXT}
};
static const CorpqQuerySpec mono_spec = {
	"mono", mono_columns, 2, 2, "SELECT id, src FROM mono", true
};

/* The pipeline's tables (created at submission, claimed by their stage). */
enum
{
	T_SAMPLE, T_TRANSLATIONS, T_SYNTHETIC
};
static const PipelineTable st_tables[] = {
	{"sample", "id pg_catalog.int8 PRIMARY KEY, src pg_catalog.text, u pg_catalog.float8, key pg_catalog.float8"},
	{"translations", "id pg_catalog.int8, hyp pg_catalog.text, score pg_catalog.float8, finished pg_catalog.bool"},
	{"synthetic", "id pg_catalog.int8 PRIMARY KEY, src pg_catalog.text, tgt pg_catalog.text, u pg_catalog.float8, "
	PIPELINE_SYNTHETIC_COLUMNS},
	{NULL}
};
static const char *const st_models[] = {"student", NULL};

/* The teacher's vocabularies: the student's defaults. */
static void
teacher_vocabs(const char *teacher, CorpqSelfTrainOptions *o)
{
	SPI_connect();
	if (SPI_execute(psprintf("SELECT src_vocab, tgt_vocab FROM corpq.model_catalog WHERE name OPERATOR(pg_catalog.=) %s",
							 quote_literal_cstr(teacher)), true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.model_catalog");
	if (SPI_processed == 1)
	{
		char	   *s = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		char	   *t = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);

		if (o->src_vocab == NULL && s)
			o->src_vocab = SPI_palloc(strlen(s) + 1), strcpy(o->src_vocab, s);
		if (o->tgt_vocab == NULL && t)
			o->tgt_vocab = SPI_palloc(strlen(t) + 1), strcpy(o->tgt_vocab, t);
	}
	SPI_finish();
}

PG_FUNCTION_INFO_V1(corpq_self_train);

Datum
corpq_self_train(PG_FUNCTION_ARGS)
{
	char	   *teacher,
			   *lexicon,
			   *parallel,
			   *mono,
			   *schema;
	PipelineObjects obj;
	Jsonb	   *options = PG_ARGISNULL(4) ? NULL : PG_GETARG_JSONB_P(4);
	CorpqSelfTrainOptions o;
	char	   *args;

	corpq_require_arg(fcinfo, 0, "teacher");
	corpq_require_arg(fcinfo, 1, "lexicon");
	corpq_require_arg(fcinfo, 2, "parallel");
	corpq_require_arg(fcinfo, 3, "mono");
	teacher = text_to_cstring(PG_GETARG_TEXT_PP(0));
	lexicon = text_to_cstring(PG_GETARG_TEXT_PP(1));
	parallel = text_to_cstring(PG_GETARG_TEXT_PP(2));
	mono = text_to_cstring(PG_GETARG_TEXT_PP(3));
	options = pipeline_take_objects(options, &obj);
	corpq_options_parse(&corpq_self_train_options, options, &o);
	if (o.name == NULL || CORPQ_OPT_IS_UNSET(o.k))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("self_train options \"name\" and \"k\" are required"),
				 errhint("k is the number of monolingual sentences to translate.")));
	(void) corpq_query_check(parallel, &parallel_spec);
	(void) corpq_query_check(mono, &mono_spec);
	if (o.dev)
		train_check_query(o.dev, "dev");
	pipeline_check_model(teacher);
	pipeline_check_lexicon(lexicon);
	teacher_vocabs(teacher, &o);
	pipeline_check_new_models("self_train", &obj, o.src_vocab, o.tgt_vocab);
	schema = pipeline_check_schema();
	args = pipeline_args(o.name, schema, corpq_options_json(&corpq_self_train_options, &o), &obj,
						 "teacher", teacher, "lexicon", lexicon, "parallel", parallel,
						 "mono", mono, NULL);
	PG_RETURN_INT64(pipeline_submit("self_train", o.name, schema, args,
									st_tables, st_models, o.threads));
}

/* ---- the job ---- */

typedef struct SelfTrain
{
	CorpqSelfTrainOptions o;
	const char *teacher_name;	/* the teacher as given */
	const char *teacher;		/* SQL literals */
	const char *lexicon;
	const char *parallel;		/* the user's queries, columns renamed */
	const char *mono;
	const char *model;
	const char *train;
	const char *translate;
	char	   *sample,
			   *translations,
			   *synthetic;
	char	   *u_max;			/* stage 1's result */
} SelfTrain;

/* Stage 1: U_max, the r-th percentile of the parallel sources' uncertainty. */
static void
stage_umax(Pipeline *p, void *arg)
{
	SelfTrain  *s = arg;
	char	   *u;

	corpq_job_xact_begin(p->cxt);
	pipeline_progress(p, "uncertainty of the parallel sources", 0, 0, NULL);
	u = pipeline_value_user(psprintf("SELECT pg_catalog.percentile_cont(%.17g::pg_catalog.float8) WITHIN GROUP "
									 "(ORDER BY corpq.mono_uncertainty(%s, src)) FROM (%s) p",
									 s->o.r / 100, s->lexicon, s->parallel));
	if (u == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("no parallel source has an uncertainty")));
	pipeline_stage_done(p, psprintf("{\"u_max\": %s, \"r\": %s}", u, corpq_json_number_text(s->o.r)));
	corpq_job_xact_commit(p->cxt);
}

/* The sampling key of a mono row u (uncertainty), id, src. */
static char *
sampling_key(SelfTrain *s, const char *u_max)
{
	switch ((SelfTrainSampling) s->o.sampling)
	{
		case SAMPLING_UNCSAMP:
			return psprintf("corpq.uncsamp(u, %s::pg_catalog.float8, %.17g::pg_catalog.float8, id, %lld::pg_catalog.int8)",
							u_max, s->o.beta, (long long) s->o.seed);
		case SAMPLING_RANDOM:
			/* weight 1 for every row: a uniform sample */
			return psprintf("corpq.uncsamp(1::pg_catalog.float8, 1::pg_catalog.float8, 0::pg_catalog.float8, id, "
							"%lld::pg_catalog.int8)", (long long) s->o.seed);
		case SAMPLING_DWF:
			/* weight WR(x)^beta, no penalty: u_max above any rarity (at most ln of the token count) */
			return psprintf("corpq.uncsamp(corpq.word_rarity(%s, src), 1e300::pg_catalog.float8, "
							"%.17g::pg_catalog.float8, id, %lld::pg_catalog.int8)",
							s->lexicon, s->o.beta, (long long) s->o.seed);
	}
	return NULL;
}

/* Stage 2: draw k monolingual sentences. */
static void
stage_sample(Pipeline *p, void *arg)
{
	SelfTrain  *s = arg;
	char	   *u_max = pipeline_stage_output(p, 1);

	corpq_job_xact_begin(p->cxt);
	u_max = pipeline_value(psprintf("SELECT (%s::jsonb ->> 'u_max')", quote_literal_cstr(u_max)));
	pipeline_progress(p, "uncertainty of the monolingual sentences", 0, 0, NULL);
	pipeline_claim_table(p, s->sample, st_tables[T_SAMPLE].columns);
	/* the user's query with their search_path; every other name is qualified */
	pipeline_exec_user(psprintf("INSERT INTO %s (id, src, u, key) SELECT id, src, u, key FROM ("
								"SELECT id, src, u, %s AS key FROM ("
								"SELECT id, src, corpq.mono_uncertainty(%s, src) AS u FROM (%s) m "
								"WHERE src IS NOT NULL) m) m WHERE key OPERATOR(pg_catalog.>=) 0::pg_catalog.float8 "
								"ORDER BY key DESC, id LIMIT %lld",
								s->sample, sampling_key(s, u_max), s->lexicon, s->mono,
								(long long) s->o.k));
	pipeline_stage_done(p, pipeline_value(psprintf("SELECT json_build_object('sample', %s::text, "
												   "'rows', count(*), 'k', %lld, 'mean_u', avg(u))::text FROM %s",
												   quote_literal_cstr(s->sample), (long long) s->o.k,
												   s->sample)));
	corpq_job_xact_commit(p->cxt);
}

/*
 * Stage 3: the teacher translates the sample.  Monolingual text holds
 * sentences longer than the teacher takes; they get no translation (a NULL
 * row) and stage 4 drops them, rather than failing the pipeline.
 */
static void
stage_translate(Pipeline *p, void *arg)
{
	SelfTrain  *s = arg;
	int64		subjob;
	char	   *gate;

	/* the teacher's dev BLEU, before it translates (it is the baseline itself) */
	corpq_job_xact_begin(p->cxt);
	gate = MemoryContextStrdup(p->cxt, pipeline_gate_check("teacher", s->teacher_name, NULL, s->o.dev,
														   s->o.beam, (PipelineGate) s->o.gate));
	corpq_job_xact_commit(p->cxt);
	subjob = pipeline_subjob(p, &st_tables[T_TRANSLATIONS], NULL,
							 psprintf("SELECT corpq.translate_job(%s, %s, %s, %s::pg_catalog.jsonb "
									  "OPERATOR(pg_catalog.||) '{\"beam\": %d, \"skip_too_long\": true}')",
									  s->teacher,
									  quote_literal_cstr(psprintf("SELECT id, src FROM %s ORDER BY id", s->sample)),
									  quote_literal_cstr(s->translations), s->translate, s->o.beam));
	corpq_job_xact_begin(p->cxt);
	pipeline_stage_done(p, psprintf("{%s, %s}", gate,
									pipeline_value(psprintf("SELECT pg_catalog.btrim(json_build_object("
															"'translate_job', " INT64_FORMAT ", 'translations', "
															"%s::text, 'rows', count(*))::text, '{}') FROM %s",
															subjob, quote_literal_cstr(s->translations),
															s->translations))));
	corpq_job_xact_commit(p->cxt);
}

/* Stage 4: the synthetic pairs, marked kept or not by the pipelines' filters. */
static void
stage_filter(Pipeline *p, void *arg)
{
	SelfTrain  *s = arg;

	corpq_job_xact_begin(p->cxt);
	pipeline_check_table(p, s->sample);
	pipeline_check_table(p, s->translations);
	pipeline_claim_table(p, s->synthetic, st_tables[T_SYNTHETIC].columns);
	pipeline_exec(psprintf("INSERT INTO %s (id, src, tgt, u, score, finished, src_words, tgt_words, repeats) "
						   "SELECT s.id, s.src, t.hyp, s.u, t.score, t.finished, %s, %s, %s "
						   "FROM %s s JOIN %s t USING (id)",
						   s->synthetic, pipeline_synthetic_words("s.src"), pipeline_synthetic_words("t.hyp"),
						   pipeline_synthetic_repeats(&s->o.synthetic, "t.hyp"),
						   s->sample, s->translations));
	pipeline_synthetic_mark(&s->o.synthetic, s->synthetic);
	pipeline_stage_done(p, pipeline_value(psprintf("SELECT json_build_object('synthetic', %s::text, %s)::text "
												   "FROM %s", quote_literal_cstr(s->synthetic),
												   pipeline_synthetic_counts(&s->o.synthetic), s->synthetic)));
	corpq_job_xact_commit(p->cxt);
}

/* Stage 5: the student on parallel + kept synthetic pairs. */
static void
stage_student(Pipeline *p, void *arg)
{
	SelfTrain  *s = arg;
	char	   *student = psprintf("%s_student", s->o.name);
	char	   *query;
	int64		subjob;
	char	   *version;

	/* the synthetic sources tagged (tag and a space prepended) when asked */
	query = psprintf("SELECT src, tgt FROM (%s) p UNION ALL SELECT %s src, tgt FROM %s WHERE kept",
					 s->parallel,
					 s->o.tag_synthetic ? psprintf("%s::pg_catalog.text OPERATOR(pg_catalog.||)",
												   quote_literal_cstr(psprintf("%s ", s->o.tag))) : "",
					 s->synthetic);
	subjob = pipeline_subjob(p, NULL,
							 psprintf("SELECT corpq.model_create(%s, %s, %s, %s, %lld) "
									  "WHERE NOT EXISTS (SELECT FROM corpq.models WHERE name OPERATOR(pg_catalog.=) %s)",
									  quote_literal_cstr(student), s->model,
									  quote_literal_cstr(s->o.src_vocab), quote_literal_cstr(s->o.tgt_vocab),
									  (long long) s->o.seed, quote_literal_cstr(student)),
							 psprintf("SELECT corpq.train(%s, %s, %s, %s)", quote_literal_cstr(student),
									  quote_literal_cstr(query),
									  s->o.dev ? quote_literal_cstr(s->o.dev) : "NULL", s->train));
	corpq_job_xact_begin(p->cxt);
	version = pipeline_value(psprintf("SELECT pg_catalog.to_json(name OPERATOR(pg_catalog.||) '@' "
									  "OPERATOR(pg_catalog.||) latest_version)::pg_catalog.text FROM corpq.models "
									  "WHERE name OPERATOR(pg_catalog.=) %s", quote_literal_cstr(student)));
	pipeline_stage_done(p, psprintf("{\"model\": %s, \"train_job\": " INT64_FORMAT ", %s}",
									version ? version : "null", subjob,
									pipeline_gate_final("student", student, s->teacher_name, s->o.dev,
														s->o.beam)));
	corpq_job_xact_commit(p->cxt);
}

void
self_train_job(CorpqJob *job)
{
	Pipeline	p;
	SelfTrain	s;

	pipeline_init(&p, job, 5);
	memset(&s, 0, sizeof(s));
	corpq_options_parse_text(&corpq_self_train_options, corpq_job_arg(job, "options"), &s.o);
	s.teacher_name = corpq_job_arg(job, "teacher");
	s.teacher = quote_literal_cstr(s.teacher_name);
	s.lexicon = quote_literal_cstr(corpq_job_arg(job, "lexicon"));
	s.parallel = psprintf("SELECT * FROM (%s) p0(src, tgt)", corpq_job_arg(job, "parallel"));
	s.mono = psprintf("SELECT * FROM (%s) m0(id, src)", corpq_job_arg(job, "mono"));
	s.model = quote_literal_cstr(corpq_job_arg(job, "model"));
	s.train = quote_literal_cstr(corpq_job_arg(job, "train"));
	s.translate = quote_literal_cstr(corpq_job_arg(job, "translate"));
	s.sample = pipeline_table(&p, "sample");
	s.translations = pipeline_table(&p, "translations");
	s.synthetic = pipeline_table(&p, "synthetic");

	pipeline_stage(&p, 1, "U_max", stage_umax, &s);
	pipeline_stage(&p, 2, "sample", stage_sample, &s);
	pipeline_stage(&p, 3, "teacher translation", stage_translate, &s);
	pipeline_stage(&p, 4, "filter", stage_filter, &s);
	pipeline_stage(&p, 5, "student", stage_student, &s);
	pipeline_finish(&p);
}
