/*
 * Job submission, waiting and cancelling, in ordinary backends.
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg/jobs.h"

int			corpq_max_jobs = 4;

StaticAssertDecl(sizeof(CorpqJobLaunchInfo) <= BGW_EXTRALEN, "launch info too large");

void
corpq_job_launch(Oid dboid, int64 job_id, Oid session_role, Oid owner,
				 TransactionId wait_for)
{
	BackgroundWorker w;
	BackgroundWorkerHandle *handle;
	CorpqJobLaunchInfo info = {dboid, session_role, owner, wait_for};

	memset(&w, 0, sizeof(w));
	w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w.bgw_start_time = BgWorkerStart_RecoveryFinished;
	w.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(w.bgw_library_name, BGW_MAXLEN, "corpq");
	snprintf(w.bgw_function_name, BGW_MAXLEN, "corpq_job_main");
	snprintf(w.bgw_name, BGW_MAXLEN, "corpq job " INT64_FORMAT, job_id);
	snprintf(w.bgw_type, BGW_MAXLEN, "corpq job");
	w.bgw_main_arg = Int64GetDatum(job_id);
	memcpy(w.bgw_extra, &info, sizeof(info));
	w.bgw_notify_pid = 0;

	if (!RegisterDynamicBackgroundWorker(&w, &handle))
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no background worker slot is free for a corpq job"),
				 errhint("Raise max_worker_processes (it needs a restart), or wait for running jobs to finish.")));
}

/*
 * Mark jobs whose worker is gone as failed; returns how many.  With corpq
 * preloaded, jobs orphaned by a server restart belong to the recovery worker
 * (it requeues restartable kinds), which may not have run yet: only jobs
 * whose worker died under the current postmaster are reaped here.
 */
static uint64
reap_orphans(void)
{
	int			rc;
	const char *restarted = corpq_jobs_preloaded ? "false" :
		"(state = 'running' AND server_start IS DISTINCT FROM pg_postmaster_start_time()) "
		"OR (state = 'queued' AND created < pg_postmaster_start_time() "
		"    AND server_start IS DISTINCT FROM pg_postmaster_start_time())";

	rc = SPI_execute(psprintf("UPDATE corpq.jobs SET state = 'failed', finished = now(), "
							  "error = CASE WHEN server_start IS DISTINCT FROM pg_postmaster_start_time() "
							  "  THEN 'the server restarted while the job was running' "
							  "  ELSE 'the job''s worker exited without finishing' END "
							  "WHERE (%s) OR (state = 'running' "
							  "   AND server_start = pg_postmaster_start_time() "
							  "   AND worker_pid NOT IN (SELECT pid FROM pg_stat_activity "
							  "                          WHERE backend_type = 'corpq job'))",
							  restarted),
					 false, 0);
	if (rc != SPI_OK_UPDATE)
		elog(ERROR, "could not reap orphaned corpq jobs");
	return SPI_processed;
}

static void
check_job_limit(void)
{
	int64		active;
	bool		isnull;

	/* Serialise submissions so two cannot both see room for one more. */
	SPI_execute("LOCK TABLE corpq.jobs IN SHARE ROW EXCLUSIVE MODE", false, 0);
	reap_orphans();
	if (SPI_execute("SELECT count(*) FROM corpq.jobs WHERE state IN ('queued', 'running')",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not count corpq jobs");
	active = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (active >= corpq_max_jobs)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many corpq jobs: %lld queued or running, corpq.max_jobs is %d",
						(long long) active, corpq_max_jobs),
				 errhint("Wait for a job to finish, cancel one with corpq.job_cancel(), or raise corpq.max_jobs.")));
}

int64
corpq_job_submit(const char *kind, Jsonb *args)
{
	Oid			argtypes[2] = {TEXTOID, JSONBOID};
	Datum		values[2];
	bool		isnull;
	int64		id;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot start a corpq job during recovery"),
				 errhint("Submit jobs on the primary server.")));
	Assert(corpq_job_kind(kind) != NULL);

	SPI_connect();
	check_job_limit();
	values[0] = CStringGetTextDatum(kind);
	values[1] = JsonbPGetDatum(args);
	if (SPI_execute_with_args("INSERT INTO corpq.jobs(kind, args) VALUES ($1, $2) RETURNING id",
							  2, argtypes, values, NULL, false, 1) != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "could not insert a corpq job");
	id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();

	/* The worker waits for this transaction to end before it reads the row. */
	corpq_job_launch(MyDatabaseId, id, GetSessionUserId(), GetUserId(),
					 GetTopTransactionId());
	return id;
}

/* The job's state and xmin, or false when the caller cannot see it. */
static bool
read_job(int64 id, char **state, TransactionId *xmin)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(id)};
	bool		isnull;

	/* not read-only: SPI then takes a fresh snapshot, so job_wait sees the update */
	if (SPI_execute_with_args("SELECT state, xmin::text::bigint FROM corpq.jobs WHERE id = $1",
							  1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq job");
	if (SPI_processed == 0)
		return false;
	*state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	*xmin = (TransactionId) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
														SPI_tuptable->tupdesc, 2, &isnull));
	return true;
}

static void
job_not_found(int64 id)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("corpq job " INT64_FORMAT " does not exist", id),
			 errhint("A role sees only its own jobs; see corpq.jobs.")));
}

/* A text datum that outlives SPI_finish(). */
static text *
text_for_caller(const char *s)
{
	size_t		len = strlen(s);
	text	   *t = (text *) SPI_palloc(VARHDRSZ + len);

	SET_VARSIZE(t, VARHDRSZ + len);
	memcpy(VARDATA(t), s, len);
	return t;
}

static bool
is_final(const char *state)
{
	return strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0 ||
		strcmp(state, "cancelled") == 0;
}

PG_FUNCTION_INFO_V1(corpq_job_wait);

/*
 * corpq.job_wait(id, timeout): poll the job's row with a fresh snapshot every
 * 100 ms until it is final; returns the state (the current one on timeout).
 */
Datum
corpq_job_wait(PG_FUNCTION_ARGS)
{
	int64		id;
	TimestampTz deadline = 0;
	char	   *state = NULL;
	TransactionId xmin;
	text	   *result;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	id = PG_GETARG_INT64(0);
	if (!PG_ARGISNULL(1))
		deadline = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
														   TimestampTzGetDatum(GetCurrentTimestamp()),
														   PG_GETARG_DATUM(1)));
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("corpq.job_wait() needs READ COMMITTED isolation"),
				 errhint("In REPEATABLE READ or SERIALIZABLE the job's row never changes for this transaction.")));

	SPI_connect();
	for (;;)
	{
		if (!read_job(id, &state, &xmin))
			job_not_found(id);
		if (TransactionIdIsCurrentTransactionId(xmin) && strcmp(state, "queued") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("corpq job " INT64_FORMAT " was submitted in this transaction and cannot start before it commits", id),
					 errhint("Commit first, then wait for the job.")));
		if (is_final(state))
			break;
		if (reap_orphans() > 0)
			continue;
		if (deadline && GetCurrentTimestamp() >= deadline)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		/* next SPI statement takes a new snapshot (READ COMMITTED) */
		CommandCounterIncrement();
	}
	result = text_for_caller(state);
	SPI_finish();
	PG_RETURN_TEXT_P(result);
}

/* Signal a running job's worker to cancel, if it is still ours. */
static void
signal_worker(int pid)
{
	PGPROC	   *proc = BackendPidGetProc(pid);

	if (proc != NULL && proc->databaseId == MyDatabaseId)
		(void) kill(pid, SIGINT);
}

PG_FUNCTION_INFO_V1(corpq_job_cancel);

/*
 * corpq.job_cancel(id): a queued job is cancelled at once; a running one gets
 * cancel_requested and its worker a cancel signal, and records 'cancelled'
 * itself when it stops (within one progress step).
 */
Datum
corpq_job_cancel(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(id)};
	char	   *state;
	char	   *pid_text;
	text	   *result;

	SPI_connect();
	if (SPI_execute_with_args("UPDATE corpq.jobs j SET cancel_requested = true, "
							  "state = CASE WHEN j.state = 'queued' THEN 'cancelled' ELSE j.state END, "
							  "finished = CASE WHEN j.state = 'queued' THEN now() ELSE j.finished END, "
							  "error = CASE WHEN j.state = 'queued' THEN 'cancelled before it started' ELSE j.error END "
							  "FROM (SELECT id, state FROM corpq.jobs WHERE id = $1 FOR UPDATE) old "
							  "WHERE j.id = old.id RETURNING old.state, j.worker_pid",
							  1, argtypes, values, NULL, false, 1) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not cancel corpq job");
	if (SPI_processed == 0)
		job_not_found(id);
	state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	pid_text = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	if (strcmp(state, "running") == 0 && pid_text != NULL)
		signal_worker(atoi(pid_text));
	result = text_for_caller(state);
	SPI_finish();
	PG_RETURN_TEXT_P(result);
}
