/*
 * corpq.translate_job(model, query, target, options): submission in the
 * caller's backend, and the "translate" job.
 *
 * The job reads the query (id, src) through a cursor held across
 * transactions (its rows are materialised when the first transaction
 * commits, so a failing query fails before anything is written), decodes
 * with the engine, and commits chunks of chunk_rows rows: each chunk's
 * rows go into the user's target table (as the job's owner, with the
 * owner's rights) together with a corpq.translate_chunks row recording how
 * many query rows are done and a hash of them.  A cancel keeps the
 * committed chunks.  After a crash the job runs again (the kind is
 * restartable), reads the query again, checks that its first rows hash as
 * they did, and goes on after the last committed chunk: decoding is
 * deterministic per sentence (sampling keyed by seed, row id and step), so
 * the output is the one an uninterrupted run writes.
 */
#include "postgres.h"

#include <math.h>
#include <sys/resource.h>

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "pg/base/errors.h"
#include "pg/base/corpus_query.h"
#include "pg/base/internal_sql.h"
#include "pg/base/base.h"
#include "pg/jobs/jobs.h"
#include "pg/model/translate.h"

PG_FUNCTION_INFO_V1(corpq_translate_job);

static const CorpqColumn columns[] = {
	{"id", CORPQ_COLUMN_INTEGER}, {"src", CORPQ_COLUMN_TEXT}
};

static const CorpqQuerySpec source_spec = {
	.what = "source", .columns = columns, .min_columns = 2, .max_columns = 2,
	.example = "SELECT id, src FROM my_corpus ORDER BY id", .need_rows = false
};

/* The columns the job writes, and the types they must have. */
static const struct
{
	const char *name;
	Oid			type;
	const char *type_name;
}			target_columns[] = {
	{"id", INT8OID, "bigint"}, {"hyp", TEXTOID, "text"}, {"score", FLOAT8OID, "double precision"}
};

/* ---- the target table, at submission and in the worker ---- */

static void
wrong_target(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("target table %s must have the columns id bigint, hyp text, score double precision", name),
			 errhint("CREATE TABLE my_translations (id bigint, hyp text, score double precision).")));
}

/*
 * ERROR unless relid is a table with the columns the job writes and the
 * current user may insert into them; returns its qualified, quoted name.
 */
static char *
check_target(Oid relid)
{
	char		kind = get_rel_relkind(relid);
	char	   *name;
	bool		may_insert;

	if (kind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the target table (oid %u) does not exist", relid),
				 errdetail("It was dropped after the job was submitted.")));
	name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
	if (kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE &&
		kind != RELKIND_FOREIGN_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("target %s is not a table", name)));
	may_insert = pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) == ACLCHECK_OK;
	for (int i = 0; i < lengthof(target_columns); i++)
	{
		AttrNumber	att = get_attnum(relid, target_columns[i].name);

		if (att == InvalidAttrNumber ||
			getBaseType(get_atttype(relid, att)) != target_columns[i].type)
			wrong_target(name);
		if (!may_insert &&
			pg_attribute_aclcheck(relid, att, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to insert into %s", name),
					 errdetail("The job writes its rows with the rights of role \"%s\".",
							   GetUserNameFromId(GetUserId(), false))));
	}
	return name;
}

/*
 * Whether the target table has the optional column finished (a boolean:
 * false for a hypothesis cut at the length limit).  Tables made before the
 * column existed get the three columns as before.  After check_target.
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
 * The version the job will use ("name@N": a version written while it runs,
 * or before it resumes, does not change its output); ERROR for invalid
 * options, as the job would.
 */
static char *
pin_model(const char *model, const CorpqTranslateOptions *o)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "corpq translate_job check",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	CorpqTranslateEngine *e = corpq_translate_engine_create(cxt, NULL, NULL);
	CorpqScorer *s;
	char	   *spec;

	corpq_translate_engine_use(e, model, false, o, o->batch);
	s = corpq_translate_engine_scorer(e);
	MemoryContextSwitchTo(old);
	spec = psprintf("%s@%d", s->cur->ref.name, s->cur->ref.version);
	MemoryContextDelete(cxt);
	return spec;
}

Datum
corpq_translate_job(PG_FUNCTION_ARGS)
{
	CorpqTranslateOptions o;
	char	   *spec;
	char	   *query;
	Oid			target;
	char	   *target_name;
	StringInfoData args;

	corpq_require_arg(fcinfo, 0, "model");
	corpq_require_arg(fcinfo, 1, "query");
	corpq_require_arg(fcinfo, 2, "target_table");
	corpq_translate_options_parse(CORPQ_TRANSLATE_JOB, PG_ARGISNULL(3) ? NULL : PG_GETARG_JSONB_P(3), &o);
	corpq_require_utf8();
	query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	target = PG_GETARG_OID(2);
	spec = pin_model(text_to_cstring(PG_GETARG_TEXT_PP(0)), &o);
	(void) corpq_query_check(query, &source_spec);
	target_name = check_target(target);
	(void) target_has_finished(target);

	initStringInfo(&args);
	appendStringInfoString(&args, "{\"model\": ");
	escape_json(&args, spec);
	appendStringInfoString(&args, ", \"query\": ");
	escape_json(&args, query);
	appendStringInfo(&args, ", \"target\": %u, \"target_name\": ", target);
	escape_json(&args, target_name);
	appendStringInfo(&args, ", \"options\": %s}", corpq_translate_options_json(CORPQ_TRANSLATE_JOB, &o));
	PG_RETURN_INT64(corpq_job_submit("translate", args.data));
}

/* ---- the job ---- */

/* Rows fetched from the query at once: a few batches. */
#define FETCH_ROWS(o) Max(64, 2 * (o)->batch)

typedef struct JobRun
{
	CorpqJob   *job;
	MemoryContext cxt;
	CorpqTranslateOptions o;
	char	   *spec;
	char	   *query;
	Oid			target;
	char	   *insert_sql;		/* into the target, as the owner */
	CorpqTranslateEngine *e;
	CorpqHeldQuery held;
	uint64		hash;			/* of the query rows fetched so far */
	int64		total;			/* rows of the query */

	/* committed */
	int32		chunk;
	int64		rows_done;
	int64		translated_done;
	int64		tokens_done;
	uint64		hash_done;
	int64		resumed_from;	/* rows_done of the chunk resumed after, -1 none */

	/* the chunk being collected, in the query's order */
	MemoryContext chunk_cxt;
	int			n;
	int			cap;
	Datum	   *ids;
	Datum	   *hyps;
	bool	   *hyp_nulls;
	Datum	   *scores;
	Datum	   *finished;
	bool		has_finished;	/* the target table has the optional column */
	int64		chunk_translated;
	int64		chunk_tokens;
	uint64		chunk_hash;

	TimestampTz start;
	TimestampTz decode_start;
} JobRun;

static void write_chunk(JobRun *r);

/* A sentence handed back by the engine: one more row of the chunk. */
static void
collect(void *arg, const CorpqTranslated *t)
{
	JobRun	   *r = arg;
	MemoryContext old = MemoryContextSwitchTo(r->chunk_cxt);

	if (r->n == r->cap)
	{
		r->cap = r->cap ? 2 * r->cap : 256;
		r->ids = r->ids ? repalloc(r->ids, sizeof(Datum) * r->cap) : palloc(sizeof(Datum) * r->cap);
		r->hyps = r->hyps ? repalloc(r->hyps, sizeof(Datum) * r->cap) : palloc(sizeof(Datum) * r->cap);
		r->scores = r->scores ? repalloc(r->scores, sizeof(Datum) * r->cap) : palloc(sizeof(Datum) * r->cap);
		r->finished = r->finished ? repalloc(r->finished, sizeof(Datum) * r->cap) : palloc(sizeof(Datum) * r->cap);
		r->hyp_nulls = r->hyp_nulls ? repalloc(r->hyp_nulls, sizeof(bool) * r->cap)
			: palloc(sizeof(bool) * r->cap);
	}
	r->ids[r->n] = Int64GetDatum(t->id);
	r->hyp_nulls[r->n] = t->n_hyps == 0;
	if (t->n_hyps > 0)
	{
		r->hyps[r->n] = PointerGetDatum(corpq_translate_text(r->e, &t->hyps[0]));
		r->scores[r->n] = Float8GetDatum(t->hyps[0].score);
		r->finished[r->n] = BoolGetDatum(t->hyps[0].finished);
		r->chunk_tokens += t->hyps[0].len + 1;
	}
	r->chunk_translated += !t->null_source;
	r->chunk_hash = t->mark;
	r->n++;
	/* between decoding steps: commit the chunk, go on in a new transaction */
	if (r->n == r->o.chunk_rows)
	{
		write_chunk(r);
		corpq_job_xact_commit(r->cxt);
		corpq_job_xact_begin(r->cxt);
	}
	MemoryContextSwitchTo(old);
}

static void
add_rows(void *arg, const CorpqBatch *b)
{
	JobRun	   *r = arg;

	for (uint64 i = 0; i < b->n; i++)
		corpq_translate_add_row(r->e, b, i, &r->hash);
}

/* Rows skipped on resume: only hashed. */
static void
hash_rows(void *arg, const CorpqBatch *b)
{
	JobRun	   *r = arg;

	for (uint64 i = 0; i < b->n; i++)
		r->hash = corpq_translate_hash_row(r->hash, b, i);
}

static void
load_args(JobRun *r)
{
	r->spec = corpq_job_arg(r->job, "model");
	r->query = corpq_job_arg(r->job, "query");
	r->target = (Oid) strtoul(corpq_job_arg(r->job, "target"), NULL, 10);
	corpq_translate_options_parse_text(CORPQ_TRANSLATE_JOB, corpq_job_arg(r->job, "options"), &r->o);
}

/* The last committed chunk of this job, if any (a run after a restart). */
static void
read_checkpoint(JobRun *r)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(r->job->id)};
	bool		isnull;

	r->resumed_from = -1;
	if (corpq_sql_as_caller("SELECT chunk, rows_done, translated, tokens, rows_hash "
							"FROM corpq.translate_chunks WHERE job OPERATOR(pg_catalog.=) $1 "
							"ORDER BY chunk DESC LIMIT 1",
							1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.translate_chunks");
	if (SPI_processed == 0)
		return;
#define COL(i) SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, (i), &isnull)
	r->chunk = DatumGetInt32(COL(1));
	r->rows_done = DatumGetInt64(COL(2));
	r->translated_done = DatumGetInt64(COL(3));
	r->tokens_done = DatumGetInt64(COL(4));
	r->hash_done = (uint64) DatumGetInt64(COL(5));
#undef COL
	r->resumed_from = r->rows_done;
}

/* Skip the rows of the committed chunks, checking they are the same rows. */
static void
skip_done(JobRun *r)
{
	uint64		left = r->rows_done;

	if (r->rows_done > r->total)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the source query returned " INT64_FORMAT " rows, but " INT64_FORMAT
						" were already translated before the restart", r->total, r->rows_done),
				 errhint("A job resumes only over the same rows: keep the source table unchanged while the job runs.")));
	while (left > 0)
	{
		uint64		got = corpq_query_held_fetch(&r->held, (int) Min(left, 10000), hash_rows, r);

		Assert(got > 0);
		left -= got;
	}
	if (r->hash != r->hash_done)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the source query returned other rows than before the restart"),
				 errdetail("Its first " INT64_FORMAT " rows, already translated, differ from those of the first run.",
						   r->rows_done),
				 errhint("A job resumes only over the same rows in the same order: give the query an ORDER BY on a unique key.")));
}

static Datum
array_of(Datum *v, bool *nulls, int n, Oid type)
{
	int			dims[1] = {n};
	int			lbs[1] = {1};
	int16		typlen;
	bool		byval;
	char		align;

	get_typlenbyvalalign(type, &typlen, &byval, &align);
	return PointerGetDatum(construct_md_array(v, nulls, 1, dims, lbs, type, typlen, byval, align));
}

/*
 * In a transaction with SPI connected: the collected rows into the target
 * table (the owner's rights, the statement built from the table's catalog
 * name), and the chunk's row into corpq's catalog (as its owner).
 */
static void
write_chunk(JobRun *r)
{
	Oid			types[4] = {INT8ARRAYOID, TEXTARRAYOID, FLOAT8ARRAYOID, BOOLARRAYOID};
	Datum		rows[4];
	Oid			ctypes[7] = {INT8OID, INT4OID, INT8OID, INT8OID, INT8OID, INT8OID, FLOAT8OID};
	Datum		chunk[7];

	rows[0] = array_of(r->ids, NULL, r->n, INT8OID);
	rows[1] = array_of(r->hyps, r->hyp_nulls, r->n, TEXTOID);
	rows[2] = array_of(r->scores, r->hyp_nulls, r->n, FLOAT8OID);
	rows[3] = array_of(r->finished, r->hyp_nulls, r->n, BOOLOID);
	if (SPI_execute_with_args(r->insert_sql, r->has_finished ? 4 : 3, types, rows, NULL, false, 0)
		!= SPI_OK_INSERT)
		elog(ERROR, "could not insert into the target table");

	r->chunk++;
	r->rows_done += r->n;
	r->translated_done += r->chunk_translated;
	r->tokens_done += r->chunk_tokens;
	r->hash_done = r->chunk_hash;
	chunk[0] = Int64GetDatum(r->job->id);
	chunk[1] = Int32GetDatum(r->chunk);
	chunk[2] = Int64GetDatum(r->rows_done);
	chunk[3] = Int64GetDatum(r->translated_done);
	chunk[4] = Int64GetDatum(r->tokens_done);
	chunk[5] = Int64GetDatum((int64) r->hash_done);
	chunk[6] = Float8GetDatum(corpq_translate_stats(r->e)->step_seconds);
	if (corpq_sql_as_owner("INSERT INTO corpq.translate_chunks "
						   "(job, chunk, rows_done, translated, tokens, rows_hash, decode_seconds, owner) "
						   "SELECT $1, $2, $3, $4, $5, $6, $7, j.owner FROM corpq.jobs j "
						   "WHERE j.id OPERATOR(pg_catalog.=) $1",
						   7, ctypes, chunk, NULL, 0) != SPI_OK_INSERT || SPI_processed != 1)
		elog(ERROR, "could not insert into corpq.translate_chunks");

	MemoryContextReset(r->chunk_cxt);
	r->n = r->cap = 0;
	r->ids = r->hyps = r->scores = r->finished = NULL;
	r->hyp_nulls = NULL;
	r->chunk_translated = r->chunk_tokens = 0;
}

static char *
num(double x)
{
	return isfinite(x) ? psprintf("%.6g", x) : pstrdup("null");
}

static double
seconds_since(TimestampTz t)
{
	return (double) (GetCurrentTimestamp() - t) / USECS_PER_SEC;
}

static void
progress(JobRun *r, bool force)
{
	const CorpqTranslateStats *st = corpq_translate_stats(r->e);
	double		s = seconds_since(r->decode_start);
	double		rate = s > 0 ? st->sentences / s : 0;
	int64		done = r->rows_done + r->n;

	corpq_job_progress(r->job, "translating", (double) done, (double) r->total, "sentences",
					   psprintf("{\"sentences_per_s\": %s, \"tokens_per_s\": %s, \"chunks\": %d"
								", \"committed_rows\": " INT64_FORMAT ", \"eta_s\": %s}",
								num(rate), num(s > 0 ? st->tokens / s : 0), r->chunk, r->rows_done,
								num(rate > 0 ? (r->total - done) / rate : NAN)),
					   force);
}

/* CPU seconds of this worker process so far (the job is all it runs). */
static double
cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static char *
result_json(JobRun *r)
{
	const CorpqTranslateStats *st = corpq_translate_stats(r->e);
	double		total_s = seconds_since(r->start);
	double		decode_s = seconds_since(r->decode_start);
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "{\"model\": ");
	escape_json(&b, r->spec);
	appendStringInfoString(&b, ", \"target\": ");
	escape_json(&b, corpq_job_arg(r->job, "target_name"));
	appendStringInfo(&b, ", \"rows\": " INT64_FORMAT ", \"translated\": " INT64_FORMAT
					 ", \"tokens\": " INT64_FORMAT ", \"chunks\": %d, \"seconds\": %.3f"
					 ", \"cpu_seconds\": %.3f, \"decode_seconds\": %.3f, \"step_seconds\": %.3f"
					 ", \"sentences_per_s\": %s, \"tokens_per_s\": %s, \"attempts\": %d"
					 ", \"resumed_from_row\": %s, \"rebuilds\": %d, \"skipped_too_long\": " INT64_FORMAT "}",
					 r->rows_done, r->translated_done, r->tokens_done, r->chunk, total_s,
					 cpu_seconds(), decode_s, st->step_seconds, num(st->sentences / decode_s),
					 num(st->tokens / decode_s), r->job->attempts,
					 r->resumed_from >= 0 ? psprintf(INT64_FORMAT, r->resumed_from) : "null",
					 st->rebuilds, st->skipped_too_long);
	return b.data;
}

void
translate_job(CorpqJob *job)
{
	MemoryContext cxt = CurrentMemoryContext;
	JobRun	   *r = palloc0(sizeof(JobRun));
	uint64		got;

	r->job = job;
	r->cxt = cxt;
	r->start = GetCurrentTimestamp();
	r->chunk_cxt = AllocSetContextCreate(cxt, "corpq translate chunk", ALLOCSET_DEFAULT_SIZES);
	load_args(r);

	/* the model, the target, where to resume; the query runs at commit */
	corpq_job_progress(job, "reading", 0, 0, "rows", NULL, true);
	corpq_job_xact_begin(cxt);
	r->has_finished = target_has_finished(r->target);
	r->insert_sql = MemoryContextStrdup(cxt, r->has_finished ? psprintf(
		"INSERT INTO %s (id, hyp, score, finished) SELECT u.i, u.h, u.s, u.f FROM ROWS FROM "
		"(pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4)) "
		"AS u(i, h, s, f)", check_target(r->target)) : psprintf(
		"INSERT INTO %s (id, hyp, score) SELECT u.i, u.h, u.s FROM ROWS FROM "
		"(pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3)) AS u(i, h, s)",
		check_target(r->target)));
	r->e = corpq_translate_engine_create(cxt, collect, r);
	corpq_translate_engine_use(r->e, r->spec, true, &r->o, r->o.batch);
	read_checkpoint(r);
	corpq_query_hold(r->query, &source_spec, "corpq_translate_job", &r->held);
	corpq_job_xact_commit(cxt);

	corpq_job_xact_begin(cxt);
	r->total = (int64) corpq_query_held_count(&r->held);
	skip_done(r);
	corpq_job_xact_commit(cxt);

	/* BLAS threads start here, in the worker, never in the postmaster */
	corpq_blas_ensure();
	corpq_set_threads(r->o.threads);
	r->decode_start = GetCurrentTimestamp();
	progress(r, true);

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
		got = corpq_query_held_fetch(&r->held, FETCH_ROWS(&r->o), add_rows, r);
		corpq_translate_run(r->e, got == 0);
		progress(r, got == 0);
	} while (got > 0);

	/* the last rows and the result in the last transaction */
	if (r->n > 0)
		write_chunk(r);
	corpq_query_held_close(&r->held);
	corpq_job_finish(job, result_json(r));
	corpq_job_xact_commit(cxt);
}
