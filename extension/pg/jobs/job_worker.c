/*
 * The job worker: connect as the submitter, claim the job, run its kind,
 * record the outcome.  Progress is published as a JSON document in the
 * worker's pg_stat_activity entry (shared memory, no transaction needed).
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/pmsignal.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "pg/base/base.h"
#include "pg/base/internal_sql.h"
#include "pg/jobs/job_crash.h"
#include "pg/jobs/jobs.h"

/* Milliseconds between progress publications, unless forced. */
#define PROGRESS_INTERVAL_MS 200
/* pg_stat_activity keeps track_activity_query_size bytes (default 1024). */
#define PROGRESS_MAX 900

void
corpq_job_xact_begin(MemoryContext cxt)
{
	/* now() is the transaction's start: a worker must advance it itself */
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	MemoryContextSwitchTo(cxt);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

void
corpq_job_xact_commit(MemoryContext cxt)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
}

/* The worker's own short transactions, before a job context exists. */
static void
begin_work(void)
{
	corpq_job_xact_begin(TopMemoryContext);
}

static void
end_work(void)
{
	corpq_job_xact_commit(TopMemoryContext);
}

/*
 * Take the role the job runs as (the current role at submission) for the
 * worker's whole life, and keep it: with SECURITY_LOCAL_USERID_CHANGE, as
 * inside a SECURITY DEFINER function, SET ROLE and RESET ROLE are refused,
 * so the job's code (a corpus query's functions) cannot go back to the
 * login role's rights.  A CREATEROLE login that submitted under SET ROLE
 * does not lend them to the role's code.  Set outside any transaction, it is
 * what every transaction starts from and what an abort restores.
 */
static void
assume_owner(const CorpqJobLaunchInfo *info)
{
	SetUserIdAndSecContext(info->owner, SECURITY_LOCAL_USERID_CHANGE);
}

/*
 * A job of a superuser session for a role that is not superuser never runs
 * (corpq_job_roles_safe): fail it, if it is still queued, without running
 * anything.  False when the job was refused.
 */
static bool
roles_accepted(int64 id, const CorpqJobLaunchInfo *info)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(id)};
	bool		safe;

	begin_work();
	safe = corpq_job_roles_safe(info->session_role, info->owner);
	if (!safe &&
		corpq_sql_as_owner("UPDATE corpq.jobs SET state = '" CORPQ_JOB_FAILED_NAME "', finished = pg_catalog.now(), "
						   "error = 'refused: a superuser session cannot run a job as a role that is not superuser' "
						   "WHERE id OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) '" CORPQ_JOB_QUEUED_NAME "'",
						   1, argtypes, values, NULL, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not refuse corpq job " INT64_FORMAT, id);
	end_work();
	if (!safe)
		elog(LOG, "corpq job " INT64_FORMAT " refused: session role %u is superuser, owner %u is not",
			 id, info->session_role, info->owner);
	return safe;
}

/*
 * Claim the queued row; false when it is gone, cancelled, taken, or not the
 * job this worker was launched for (other roles).  The corpus query will run
 * with the search_path recorded at submission; corpq's own statements always
 * run with a fixed one (base/internal_sql.h).
 */
static bool
claim_job(CorpqJob *job, int64 id, const CorpqJobLaunchInfo *info)
{
	Oid			argtypes[3] = {INT8OID, OIDOID, OIDOID};
	Datum		values[3] = {Int64GetDatum(id), ObjectIdGetDatum(info->owner),
	ObjectIdGetDatum(info->session_role)};
	bool		claimed;

	begin_work();
	if (corpq_sql_as_owner("UPDATE corpq.jobs SET state = '" CORPQ_JOB_RUNNING_NAME "', started = pg_catalog.now(), "
						   "worker_pid = pg_catalog.pg_backend_pid(), "
						   "server_start = pg_catalog.pg_postmaster_start_time(), "
						   "attempts = attempts OPERATOR(pg_catalog.+) 1 "
						   "WHERE id OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) '" CORPQ_JOB_QUEUED_NAME "' "
						   "AND NOT cancel_requested "
						   "AND owner::pg_catalog.oid OPERATOR(pg_catalog.=) $2 "
						   "AND session_role::pg_catalog.oid OPERATOR(pg_catalog.=) $3 "
						   "RETURNING kind, args::pg_catalog.text, attempts, search_path, threads",
						   3, argtypes, values, NULL, 1) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not claim corpq job " INT64_FORMAT, id);
	claimed = SPI_processed == 1;
	if (claimed)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		char	   *search_path = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4);

		job->id = id;
		job->owner = info->owner;
		job->kind = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		job->args = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		job->attempts = atoi(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3));
		job->threads = atoi(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 5));
		MemoryContextSwitchTo(old);
		/* a value that no longer parses leaves the database's, with a WARNING */
		if (search_path != NULL)
			(void) set_config_option("search_path", search_path, PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_SET, true, WARNING, false);
	}
	end_work();
	return claimed;
}

/* After an error: roll back, then record failed or cancelled. */
static void
record_failure(CorpqJob *job, MemoryContext cxt)
{
	ErrorData  *edata;
	bool		cancelled;
	Oid			argtypes[3] = {INT8OID, BOOLOID, TEXTOID};
	Datum		values[3];

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	AbortOutOfAnyTransaction();
	cancelled = edata->sqlerrcode == ERRCODE_QUERY_CANCELED;
	elog(LOG, "corpq job " INT64_FORMAT " (%s) %s: %s", job->id, job->kind,
		 cancelled ? "cancelled" : "failed", edata->message);

	pgstat_report_activity(STATE_RUNNING, "corpq job: recording failure");
	begin_work();
	values[0] = Int64GetDatum(job->id);
	values[1] = BoolGetDatum(cancelled);
	/* the DETAIL carries what a core reported (base/errors.h), so it is kept */
	values[2] = CStringGetTextDatum(cancelled ? "cancelled by request" :
									edata->detail ? psprintf("%s\nDETAIL: %s", edata->message, edata->detail) :
									edata->message);
	/* only while the row is still this worker's (the reaper may have judged otherwise) */
	if (corpq_sql_as_owner("UPDATE corpq.jobs SET finished = pg_catalog.now(), error = $3, "
						   "state = CASE WHEN $2 OR cancel_requested THEN '" CORPQ_JOB_CANCELLED_NAME "' "
						   "  ELSE '" CORPQ_JOB_FAILED_NAME "' END "
						   "WHERE id OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) '" CORPQ_JOB_RUNNING_NAME "' "
						   "AND worker_pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid()",
						   3, argtypes, values, NULL, 1) != SPI_OK_UPDATE)
		elog(ERROR, "could not record the failure of corpq job " INT64_FORMAT, job->id);
	end_work();
}

void
corpq_job_main(Datum arg)
{
	int64		id = DatumGetInt64(arg);
	CorpqJobLaunchInfo info;
	CorpqJob	job;
	const CorpqJobKind *kind;
	MemoryContext cxt;

	memcpy(&info, MyBgworkerEntry->bgw_extra, sizeof(info));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(info.dboid, info.session_role, 0);

	/* The row is visible only once the submitting transaction committed. */
	if (TransactionIdIsValid(info.wait_for))
	{
		StartTransactionCommand();
		XactLockTableWait(info.wait_for, NULL, NULL, XLTW_None);
		CommitTransactionCommand();
	}
	if (!roles_accepted(id, &info))
		proc_exit(0);
	assume_owner(&info);
	memset(&job, 0, sizeof(job));
	if (!claim_job(&job, id, &info))
		proc_exit(0);
	/* from here a crash is this job's: recovery fails it rather than run it again */
	corpq_job_crash_arm(info.dboid, id);

	kind = corpq_job_kind(job.kind);
	cxt = AllocSetContextCreate(TopMemoryContext, "corpq job", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		if (kind == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("unknown corpq job kind \"%s\"", job.kind)));
		corpq_job_progress(&job, "starting", 0, 0, NULL, NULL, true);
		/* every kind's threads; BLAS's start here, never in the postmaster */
		corpq_blas_ensure();
		corpq_set_threads(job.threads);
		kind->run(&job);
	}
	PG_CATCH();
	{
		record_failure(&job, cxt);
	}
	PG_END_TRY();
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}

void
corpq_job_progress(CorpqJob *job, const char *phase, double done,
				   double total, const char *unit, const char *figures_json,
				   bool force)
{
	TimestampTz now = GetCurrentTimestamp();
	StringInfoData buf;
	double		elapsed;

	CHECK_FOR_INTERRUPTS();

	/*
	 * A worker computing for hours never waits on a latch, where PostgreSQL's
	 * processes notice that the postmaster died.  Orphaned by a kill -9 of
	 * the postmaster it would go on to its end holding the old shared
	 * memory, and the server could not start again until then.  Exit as the
	 * latch wait does; the job's row stays running and the restarted
	 * server's launcher settles it.
	 */
	if (!PostmasterIsAlive())
		proc_exit(1);
	if (strncmp(job->phase, phase, sizeof(job->phase)) != 0)
	{
		strlcpy(job->phase, phase, sizeof(job->phase));
		job->phase_started = now;
		force = true;
	}
	if (!force && !TimestampDifferenceExceeds(job->last_report, now, PROGRESS_INTERVAL_MS))
		return;
	job->last_report = now;
	elapsed = (double) (now - job->phase_started) / USECS_PER_SEC;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"job\": " INT64_FORMAT ", \"kind\": ", job->id);
	escape_json(&buf, job->kind);
	appendStringInfoString(&buf, ", \"phase\": ");
	escape_json(&buf, phase);
	appendStringInfo(&buf, ", \"done\": %.17g, \"total\": %.17g, \"rate\": %.6g",
					 done, total, elapsed > 0 ? done / elapsed : 0.0);
	if (unit)
	{
		appendStringInfoString(&buf, ", \"unit\": ");
		escape_json(&buf, unit);
	}
	if (figures_json && buf.len + strlen(figures_json) < PROGRESS_MAX)
		appendStringInfo(&buf, ", \"figures\": %s", figures_json);
	appendStringInfoChar(&buf, '}');
	pgstat_report_activity(STATE_RUNNING, buf.data);
	pfree(buf.data);
}

void
corpq_job_finish(CorpqJob *job, const char *result_json)
{
	Oid			argtypes[2] = {INT8OID, TEXTOID};
	Datum		values[2];

	values[0] = Int64GetDatum(job->id);
	values[1] = CStringGetTextDatum(result_json ? result_json : "{}");
	if (corpq_sql_as_owner("UPDATE corpq.jobs SET state = '" CORPQ_JOB_SUCCEEDED_NAME "', finished = pg_catalog.now(), "
						   "error = NULL, result = $2::pg_catalog.jsonb "
						   "WHERE id OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) '" CORPQ_JOB_RUNNING_NAME "' "
						   "AND worker_pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid()",
						   2, argtypes, values, NULL, 1) != SPI_OK_UPDATE)
		elog(ERROR, "could not record the result of corpq job " INT64_FORMAT, job->id);
	/* the results roll back with this transaction rather than land on a row no longer ours */
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("corpq job " INT64_FORMAT " is no longer running in this worker", job->id),
				 errdetail("Its row was changed by someone else while it ran.")));
}

char *
corpq_job_arg(CorpqJob *job, const char *key)
{
	Jsonb	   *args = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(job->args)));
	JsonbValue	k;
	JsonbValue *v;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	v = findJsonbValueFromContainer(&args->root, JB_FOBJECT, &k);
	if (v == NULL || v->type == jbvNull)
		return NULL;
	if (v->type == jbvString)
		return pnstrdup(v->val.string.val, v->val.string.len);
	if (v->type == jbvNumeric)
		return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
	if (v->type == jbvBool)
		return pstrdup(v->val.boolean ? "true" : "false");
	return JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
}
