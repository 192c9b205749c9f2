/*
 * A pipeline job's stages in the worker: bookkeeping in
 * corpq.pipeline_stages, sub-jobs, progress, errors named after the stage.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"

#include "pg/base/internal_sql.h"
#include "pg/base/table_check.h"
#include "pg/pipeline/pipeline.h"

/* How often a stage looks at its sub-job (ms): progress, not latency, matters. */
#define SUBJOB_POLL_MS 250

void
pipeline_init(Pipeline *p, CorpqJob *job, int n_stages)
{
	memset(p, 0, sizeof(*p));
	p->job = job;
	p->cxt = CurrentMemoryContext;
	p->name = corpq_job_arg(job, "name");
	p->schema = corpq_job_arg(job, "schema");
	p->n_stages = n_stages;
	initStringInfo(&p->result);
}

char *
pipeline_table(Pipeline *p, const char *suffix)
{
	return MemoryContextStrdup(p->cxt,
							   quote_qualified_identifier(p->schema,
														  psprintf("%s_%s", p->name, suffix)));
}

void
pipeline_exec(const char *sql)
{
	int			rc = corpq_sql_as_caller(sql, 0, NULL, NULL, NULL, false, 0);

	if (rc < 0)
		elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(rc));
}

void
pipeline_exec_user(const char *sql)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc < 0)
		elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(rc));
}

char *
pipeline_value(const char *sql)
{
	pipeline_exec(sql);
	if (SPI_tuptable == NULL || SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

char *
pipeline_value_user(const char *sql)
{
	pipeline_exec_user(sql);
	if (SPI_tuptable == NULL || SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * Why table (quoted, qualified) is not a table this job may write, or NULL.
 * A pipeline writes only plain tables its owner owns, with no trigger or
 * rule (another role granted TRIGGER could run code as the owner), no
 * inheritance child and not a partition.  Missing: created here.
 */
static const char *
table_refusal(Pipeline *p, const char *table, const char *columns)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(table)};
	bool		isnull;
	Oid			relid;

	if (corpq_sql_as_caller("SELECT pg_catalog.to_regclass($1)::pg_catalog.oid",
							1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up %s", table);
	relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (isnull)
	{
		if (columns == NULL)
			return "it does not exist";
		pipeline_exec(psprintf("CREATE TABLE %s (%s)", table, columns));
		return NULL;
	}
	/* the check row jobs make too (base/table_check.h), all of it */
	return corpq_table_refusal(relid, p->job->owner,
							   CORPQ_TABLE_PLAIN | CORPQ_TABLE_OWNED | CORPQ_TABLE_NO_CODE);
}

/* ERROR naming table unless it is one this job may write (created when columns are given). */
static void
require_writable(Pipeline *p, const char *table, const char *columns)
{
	const char *why = table_refusal(p, table, columns);

	if (why)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("pipeline \"%s\" will not write table %s: %s", p->name, table, why),
				 errhint("A pipeline writes only the tables it created for its owner; drop or rename that table and submit the pipeline again.")));
}

void
pipeline_check_table(Pipeline *p, const char *table)
{
	require_writable(p, table, NULL);
}

void
pipeline_claim_table(Pipeline *p, const char *table, const char *columns)
{
	require_writable(p, table, columns);
	pipeline_exec(psprintf("TRUNCATE %s", table));
}

void
pipeline_progress(Pipeline *p, const char *what, double done, double total,
				  const char *unit)
{
	char		phase[64];
	StringInfoData fig;

	snprintf(phase, sizeof(phase), "%d/%d %s%s%s", p->stage, p->n_stages,
			 p->stage_name, what ? ": " : "", what ? what : "");
	initStringInfo(&fig);
	appendStringInfo(&fig, "{\"stage\": %d, \"stages\": %d, \"stage_name\": ",
					 p->stage, p->n_stages);
	escape_json(&fig, p->stage_name);
	if (p->subjob)
		appendStringInfo(&fig, ", \"subjob\": " INT64_FORMAT, p->subjob);
	appendStringInfoChar(&fig, '}');
	corpq_job_progress(p->job, phase, done, total, unit, fig.data, false);
	pfree(fig.data);
}

/* Text of column col of row 0 copied into cxt, or NULL. */
static char *
value_in(MemoryContext cxt, int col)
{
	char	   *v;

	if (SPI_processed == 0)
		return NULL;
	v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col);
	return v ? MemoryContextStrdup(cxt, v) : NULL;
}

/* The stage's row: its output when finished, its sub-job and the sub-job's state. */
static void
read_stage(Pipeline *p, int n, char **output, int64 *subjob, char **state)
{
	Oid			argtypes[2] = {TEXTOID, INT4OID};
	Datum		values[2] = {CStringGetTextDatum(p->name), Int32GetDatum(n)};
	char	   *sub;

	if (corpq_sql_as_caller("SELECT CASE WHEN s.finished IS NOT NULL THEN s.output::pg_catalog.text END, "
							"s.subjob, j.state FROM corpq.pipeline_stages s "
							"LEFT JOIN corpq.jobs j ON j.id OPERATOR(pg_catalog.=) s.subjob "
							"WHERE s.pipeline OPERATOR(pg_catalog.=) $1 AND s.stage OPERATOR(pg_catalog.=) $2",
							2, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pipeline stages");
	*output = value_in(p->cxt, 1);
	sub = value_in(p->cxt, 2);
	*subjob = sub ? strtoll(sub, NULL, 10) : 0;
	*state = value_in(p->cxt, 3);
}

char *
pipeline_stage_output(Pipeline *p, int n)
{
	char	   *output,
			   *state;
	int64		subjob;

	corpq_job_xact_begin(p->cxt);
	read_stage(p, n, &output, &subjob, &state);
	corpq_job_xact_commit(p->cxt);
	return output;
}

/*
 * Insert or update the stage's row (as corpq: users only read it).  A stage's
 * start stays when the same job writes the row again (its sub-job submitted,
 * or the job requeued after a crash); a new job resuming a failed or
 * cancelled stage starts it afresh.
 */
static void
write_stage(Pipeline *p, const char *output_json)
{
	Oid			argtypes[7] = {TEXTOID, INT4OID, TEXTOID, INT8OID, INT8OID, OIDOID, TEXTOID};
	Datum		values[7];
	char		nulls[7] = "       ";

	values[0] = CStringGetTextDatum(p->name);
	values[1] = Int32GetDatum(p->stage);
	values[2] = CStringGetTextDatum(p->stage_name);
	values[3] = Int64GetDatum(p->job->id);
	values[4] = Int64GetDatum(p->subjob);
	if (p->subjob == 0)
		nulls[4] = 'n';
	values[5] = ObjectIdGetDatum(p->job->owner);
	if (output_json)
		values[6] = CStringGetTextDatum(output_json);
	else
		nulls[6] = 'n';
	if (corpq_sql_as_owner("INSERT INTO corpq.pipeline_stages "
						   "(pipeline, stage, name, job, subjob, owner, output, finished) "
						   "VALUES ($1, $2, $3, $4, $5, $6::pg_catalog.regrole, $7::pg_catalog.jsonb, "
						   "CASE WHEN $7 IS NOT NULL THEN pg_catalog.clock_timestamp() END) "
						   "ON CONFLICT (pipeline, stage) DO UPDATE SET job = excluded.job, "
						   "subjob = COALESCE(excluded.subjob, corpq.pipeline_stages.subjob), "
						   "output = excluded.output, finished = excluded.finished, "
						   "started = CASE WHEN excluded.finished IS NULL "
						   "AND corpq.pipeline_stages.job IS DISTINCT FROM excluded.job "
						   "THEN excluded.started ELSE corpq.pipeline_stages.started END",
						   7, argtypes, values, nulls, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record pipeline stage");
}

static void
append_output(Pipeline *p, int n, const char *name, const char *output_json)
{
	MemoryContext old = MemoryContextSwitchTo(p->cxt);

	appendStringInfo(&p->result, "%s{\"stage\": %d, \"name\": ",
					 p->result.len ? ", " : "", n);
	escape_json(&p->result, name);
	appendStringInfo(&p->result, ", \"output\": %s}", output_json);
	MemoryContextSwitchTo(old);
}

void
pipeline_stage_done(Pipeline *p, const char *output_json)
{
	write_stage(p, output_json);
	append_output(p, p->stage, p->stage_name, output_json);
}

/* Ask a running sub-job to stop (after an error, in a fresh transaction). */
static void
cancel_subjob(Pipeline *p)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(p->subjob)};

	corpq_job_xact_begin(p->cxt);
	if (SPI_execute_with_args("SELECT corpq.job_cancel(id) FROM corpq.jobs "
							  "WHERE id OPERATOR(pg_catalog.=) $1 AND state IN ('" CORPQ_JOB_QUEUED_NAME "', '" CORPQ_JOB_RUNNING_NAME "')",
							  1, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not cancel sub-job " INT64_FORMAT, p->subjob);
	corpq_job_xact_commit(p->cxt);
}

/* Rethrow the current error with the stage named, after cancelling the sub-job. */
static void
stage_failed(Pipeline *p)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(p->cxt);
	edata = CopyErrorData();
	FlushErrorState();
	AbortOutOfAnyTransaction();
	if (p->subjob)
		cancel_subjob(p);
	if (edata->sqlerrcode != ERRCODE_QUERY_CANCELED)
		edata->message = psprintf("pipeline \"%s\" stage %d (%s) failed: %s",
								  p->name, p->stage, p->stage_name, edata->message);
	ReThrowError(edata);
}

void
pipeline_stage(Pipeline *p, int n, const char *name, PipelineStageFn fn, void *arg)
{
	char	   *output;

	p->stage = n;
	p->stage_name = name;
	p->subjob = 0;
	output = pipeline_stage_output(p, n);
	if (output)
	{
		append_output(p, n, name, output);
		return;
	}
	pipeline_progress(p, NULL, 0, 0, NULL);

	/*
	 * The row goes in before the work, in its own transaction: a stage that
	 * computes in this worker (scoring, uncertainties) is timed from here,
	 * and a stage that fails before its sub-job shows as started.
	 */
	corpq_job_xact_begin(p->cxt);
	write_stage(p, NULL);
	corpq_job_xact_commit(p->cxt);
	PG_TRY();
	{
		fn(p, arg);
	}
	PG_CATCH();
	{
		stage_failed(p);
	}
	PG_END_TRY();
	p->subjob = 0;
}

/*
 * Submit the stage's sub-job (prepare_sql first) in one transaction.  The
 * submission runs with the submitter's search_path, which the sub-job
 * records for the user's queries it may carry (a dev set); its own text is
 * schema-qualified.
 */
static int64
submit_subjob(Pipeline *p, const PipelineTable *target, const char *prepare_sql,
			  const char *submit_sql)
{
	char	   *id;

	corpq_job_xact_begin(p->cxt);
	if (target)
		pipeline_claim_table(p, pipeline_table(p, target->suffix), target->columns);
	if (prepare_sql)
		pipeline_exec(prepare_sql);
	pipeline_exec_user(submit_sql);
	id = SPI_processed > 0 ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1) : NULL;
	if (id == NULL)
		elog(ERROR, "pipeline sub-job submission returned no job id");
	p->subjob = strtoll(id, NULL, 10);
	write_stage(p, NULL);
	corpq_job_xact_commit(p->cxt);
	return p->subjob;
}

/* One look at the sub-job; true when it succeeded, ERROR when it did not. */
static bool
poll_subjob(Pipeline *p)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(p->subjob)};
	char	   *state,
			   *error,
			   *phase,
			   *done,
			   *total,
			   *unit;
	CorpqJobState st;

	corpq_job_xact_begin(p->cxt);
	if (SPI_execute_with_args("SELECT j.state, j.error, g.phase, g.done, g.total, g.unit "
							  "FROM corpq.jobs j LEFT JOIN corpq.job_progress g "
							  "ON g.id OPERATOR(pg_catalog.=) j.id "
							  "WHERE j.id OPERATOR(pg_catalog.=) $1",
							  1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read sub-job " INT64_FORMAT, p->subjob);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("sub-job " INT64_FORMAT " does not exist", p->subjob)));
	state = value_in(p->cxt, 1);
	error = value_in(p->cxt, 2);
	phase = value_in(p->cxt, 3);
	done = value_in(p->cxt, 4);
	total = value_in(p->cxt, 5);
	unit = value_in(p->cxt, 6);
	corpq_job_xact_commit(p->cxt);

	st = corpq_job_state_parse(state);
	if (st == CORPQ_JOB_SUCCEEDED)
		return true;
	if (st == CORPQ_JOB_FAILED || st == CORPQ_JOB_CANCELLED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("sub-job " INT64_FORMAT " %s: %s", p->subjob, state,
						error ? error : "no error recorded")));
	pipeline_progress(p, phase ? phase : state, done ? strtod(done, NULL) : 0,
					  total ? strtod(total, NULL) : 0, unit);
	return false;
}

int64
pipeline_subjob(Pipeline *p, const PipelineTable *target, const char *prepare_sql,
				const char *submit_sql)
{
	char	   *output,
			   *state;
	int64		subjob;

	corpq_job_xact_begin(p->cxt);
	read_stage(p, p->stage, &output, &subjob, &state);
	corpq_job_xact_commit(p->cxt);
	/* resume: wait for the sub-job unless it ended without success */
	if (subjob != 0 && state != NULL &&
		corpq_job_state_parse(state) != CORPQ_JOB_FAILED &&
		corpq_job_state_parse(state) != CORPQ_JOB_CANCELLED)
		p->subjob = subjob;
	else
		submit_subjob(p, target, prepare_sql, submit_sql);

	while (!poll_subjob(p))
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 SUBJOB_POLL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	subjob = p->subjob;
	p->subjob = 0;
	return subjob;
}

void
pipeline_finish(Pipeline *p)
{
	StringInfoData r;

	initStringInfo(&r);
	appendStringInfoString(&r, "{\"pipeline\": ");
	escape_json(&r, p->name);
	appendStringInfo(&r, ", \"stages\": [%s]}", p->result.data);
	corpq_job_xact_begin(p->cxt);
	corpq_job_finish(p->job, r.data);
	corpq_job_xact_commit(p->cxt);
}
