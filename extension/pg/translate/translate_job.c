/*
 * corpq.translate_job(model, query, target, options): submission in the
 * caller's backend, and the "translate" job, a row job (pg/jobs/row_job.h):
 * the query's rows (id, src) are decoded by the engine, which keeps its
 * batch full and hands the sentences back in the query's order, and go into
 * the target as (id, hyp, score[, finished]) in committed chunks, recorded
 * in corpq.row_job_chunks.  Decoding is deterministic per sentence
 * (sampling keyed by seed, row id and step), so a job resumed after a crash
 * writes what an uninterrupted run writes.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "pg/base/base.h"
#include "pg/base/corpus_query.h"
#include "pg/base/errors.h"
#include "pg/jobs/row_job.h"
#include "pg/translate/translate.h"

PG_FUNCTION_INFO_V1(corpq_translate_job);

static const CorpqColumn columns[] = {
	{"id", CORPQ_COLUMN_INTEGER}, {"src", CORPQ_COLUMN_TEXT}
};

static const CorpqQuerySpec source_spec = {
	.what = "source", .columns = columns, .min_columns = 2, .max_columns = 2,
	.example = "SELECT id, src FROM my_corpus ORDER BY id", .need_rows = false
};

/* The columns the job writes; finished only when the table has it. */
static const CorpqRowJobColumn target_columns[] = {
	{"id", INT8OID, "bigint"}, {"hyp", TEXTOID, "text"},
	{"score", FLOAT8OID, "double precision"}, {"finished", BOOLOID, "boolean"}
};

static void translate_job(CorpqJob *job);
static double decode_seconds(void *arg);
static void setup(CorpqRowJob *rj, void *arg);

static const char *const counters[] = {"translated", "tokens", NULL};

static const CorpqRowJobKind kind = {
	.kind = "translate", .source = &source_spec, .target_example = "my_translations",
	.query_arg = "query", .counters = counters, .seconds = decode_seconds, .setup = setup,
	.phase = "translating", .unit = "sentences", .done = "translated"
};

/*
 * Whether the target table has the optional column finished (a boolean:
 * false for a hypothesis cut at the length limit).  Tables made before the
 * column existed get the three columns as before.
 */
static bool
target_has_finished(Oid relid)
{
	AttrNumber	att = get_attnum(relid, "finished");

	if (att == InvalidAttrNumber)
		return false;
	if (getBaseType(get_atttype(relid, att)) != BOOLOID)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("column finished of the target table must be boolean"),
				 errhint("The job writes false there for a hypothesis cut at the length limit; "
						 "drop or rename the column, or make it boolean.")));
	return true;
}

/* ---- submission ---- */

/*
 * ERROR for options the job would refuse with the model (as the caller
 * named it, so that the message does): the engine checks them against the
 * model as the job's will.
 */
static void
check_options(const char *model, const CorpqTranslateOptions *o)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "corpq translate_job check",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	CorpqTranslateEngine *e = corpq_translate_engine_create(cxt, NULL, NULL);

	corpq_translate_engine_use(e, model, false, o, o->batch);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/* The target's optional column finished: a boolean if there (target_has_finished). */
static void
check_finished(Oid target, const char *target_name, void *arg)
{
	(void) target_has_finished(target);
}

Datum
corpq_translate_job(PG_FUNCTION_ARGS)
{
	CorpqRowJobCall call;
	CorpqRowJobSubmit sub = {0};
	CorpqTranslateOptions o;

	corpq_row_job_call(fcinfo, &kind, &call);
	corpq_translate_options_parse(CORPQ_TRANSLATE_JOB, call.options, &o);
	corpq_require_utf8();
	check_options(call.model, &o);
	/* the version of now: a version written while it runs, or before it resumes, changes nothing */
	sub.model = corpq_model_pin(call.model);
	sub.columns = target_columns;
	/* the columns the job will write: what an insert of them runs is checked chunk by chunk */
	sub.n_columns = target_has_finished(call.target) ? 4 : 3;
	sub.check_target = check_finished;
	sub.options_json = corpq_translate_options_json(CORPQ_TRANSLATE_JOB, &o);
	sub.threads = o.threads;
	sub.foreign_target = o.foreign_target;
	sub.version_column = o.version_column;
	{
		int64		id = corpq_row_job_submit(&kind, &call, &sub);

		/* skip_existing, no row missing: no job (row_job.h) */
		if (id == 0)
			PG_RETURN_NULL();
		PG_RETURN_INT64(id);
	}
}

/* ---- the job ---- */

/* Rows fetched from the query at once: a few batches. */
#define FETCH_ROWS(o) Max(64, 2 * (o)->batch)

typedef struct JobRun
{
	CorpqJob   *job;
	CorpqTranslateOptions o;
	char	   *spec;
	CorpqTranslateEngine *e;
	CorpqRowJob *rj;
	bool		has_finished;	/* the target table has the optional column */
} JobRun;

static double
decode_seconds(void *arg)
{
	return corpq_translate_stats(((JobRun *) arg)->e)->step_seconds;
}

/*
 * A sentence handed back by the engine, in the query's order: one more row
 * of the chunk, which commits when full (between decoding steps).
 */
static void
collect(void *arg, const CorpqTranslated *t)
{
	JobRun	   *r = arg;
	Datum		values[4] = {Int64GetDatum(t->id), 0, 0, 0};
	bool		nulls[4] = {false, true, true, true};
	int64		counts[2] = {!t->null_source, 0};

	if (t->n_hyps > 0)
	{
		MemoryContext old = MemoryContextSwitchTo(corpq_row_job_memory(r->rj));

		values[1] = PointerGetDatum(corpq_translate_text(r->e, &t->hyps[0]));
		MemoryContextSwitchTo(old);
		values[2] = Float8GetDatum(t->hyps[0].score);
		values[3] = BoolGetDatum(t->hyps[0].finished);
		nulls[1] = nulls[2] = nulls[3] = false;
		counts[1] = t->hyps[0].len + 1;
	}
	corpq_row_job_put(r->rj, values, nulls, t->mark, counts);
}

static void
add_rows(void *arg, const CorpqBatch *b, const uint64 *marks)
{
	JobRun	   *r = arg;

	for (uint64 i = 0; i < b->n; i++)
		corpq_translate_add_row(r->e, b, i, marks[i]);
}

static char *
kind_members(JobRun *r)
{
	const CorpqTranslateStats *st = corpq_translate_stats(r->e);
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "\"model\": ");
	escape_json(&b, r->spec);
	appendStringInfo(&b, ", \"decode_seconds\": %.3f, \"step_seconds\": %.3f"
					 ", \"rebuilds\": %d, \"skipped_too_long\": " INT64_FORMAT,
					 corpq_row_job_compute_seconds(r->rj), st->step_seconds,
					 st->rebuilds, st->skipped_too_long);
	return b.data;
}

/* In the job's first transaction: the target's columns, the engine. */
static void
setup(CorpqRowJob *rj, void *arg)
{
	JobRun	   *r = arg;

	r->has_finished = target_has_finished(corpq_row_job_target(rj));
	corpq_row_job_columns(rj, target_columns, r->has_finished ? 4 : 3);
	r->e = corpq_translate_engine_create(CurrentMemoryContext, collect, r);
	corpq_translate_engine_use(r->e, r->spec, true, &r->o, r->o.batch);
}

static void
translate_job(CorpqJob *job)
{
	MemoryContext cxt = CurrentMemoryContext;
	JobRun	   *r = palloc0(sizeof(JobRun));
	uint64		got;

	r->job = job;
	r->spec = corpq_job_arg(job, "model");
	corpq_translate_options_parse_text(CORPQ_TRANSLATE_JOB, corpq_job_arg(job, "options"), &r->o);
	r->rj = corpq_row_job_begin(job, &kind, r->o.chunk_rows, false, r);
	corpq_row_job_start(r->rj);

	/*
	 * Decoding runs inside transactions (a model evicted by what the query
	 * or a trigger on the target ran is loaded again through SPI); collect()
	 * commits one at each chunk.  The engine is called in the job's context,
	 * which outlives those commits.
	 */
	corpq_job_xact_begin(cxt);
	MemoryContextSwitchTo(cxt);
	do
	{
		got = corpq_row_job_fetch(r->rj, FETCH_ROWS(&r->o), add_rows, r);
		corpq_translate_run(r->e, got == 0);
		corpq_row_job_progress(r->rj, got == 0);
	} while (got > 0);

	/* the last rows and the result in the last transaction */
	corpq_row_job_finish(r->rj, kind_members(r));
	corpq_job_xact_commit(cxt);
}

void
corpq_translate_init(void)
{
	/* a row job (pg/jobs/row_job.h): it resumes after its last chunk */
	corpq_job_register_kind("translate", translate_job, true);
}
