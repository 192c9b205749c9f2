/*
 * Job submission, waiting and cancelling, in ordinary backends.
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg/base/base.h"
#include "pg/base/internal_sql.h"
#include "pg/jobs/job_settled.h"
#include "pg/jobs/jobs.h"

int			corpq_max_jobs = 4;
int			corpq_max_jobs_per_role = -1;

/* True in the postmaster and its children when corpq is preloaded. */
bool		corpq_jobs_preloaded = false;

void
corpq_jobs_init(void)
{
	DefineCustomIntVariable("corpq.max_jobs",
							"Maximum number of corpq jobs queued or running at once in a database.",
							"Each running job holds one background worker slot (max_worker_processes).",
							&corpq_max_jobs,
							4, 1, 1024,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("corpq.max_jobs_per_role",
							"Maximum number of corpq jobs one role may have queued or running at once in a database.",
							"-1 means corpq.max_jobs - 1 (at least 1), so one role cannot take every slot. "
							"A role's jobs are those it owns and those its login submitted.",
							&corpq_max_jobs_per_role,
							-1, -1, 1024,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
}

/*
 * How many jobs one role may have queued or running: corpq.max_jobs_per_role,
 * -1 meaning corpq.max_jobs - 1 (at least 1), never more than corpq.max_jobs.
 */
static int
jobs_role_share(void)
{
	int			share = corpq_max_jobs_per_role;

	if (share < 0)
		share = Max(corpq_max_jobs - 1, 1);
	return Min(share, corpq_max_jobs);
}

bool
corpq_job_threads_echo(const void *options)
{
	return false;
}

StaticAssertDecl(sizeof(CorpqJobLaunchInfo) <= BGW_EXTRALEN, "launch info too large");

const char *const corpq_job_state_names[] = {
	[CORPQ_JOB_QUEUED] = CORPQ_JOB_QUEUED_NAME,
	[CORPQ_JOB_RUNNING] = CORPQ_JOB_RUNNING_NAME,
	[CORPQ_JOB_SUCCEEDED] = CORPQ_JOB_SUCCEEDED_NAME,
	[CORPQ_JOB_FAILED] = CORPQ_JOB_FAILED_NAME,
	[CORPQ_JOB_CANCELLED] = CORPQ_JOB_CANCELLED_NAME,
};

CorpqJobState
corpq_job_state_parse(const char *name)
{
	for (int s = CORPQ_JOB_QUEUED; s <= CORPQ_JOB_CANCELLED; s++)
		if (strcmp(name, corpq_job_state_names[s]) == 0)
			return (CorpqJobState) s;
	elog(ERROR, "unknown corpq job state \"%s\"", name);
	pg_unreachable();
}

void
corpq_job_worker_spec(BackgroundWorker *w, const char *function_name,
					  const char *type, int restart_time)
{
	memset(w, 0, sizeof(*w));
	w->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w->bgw_start_time = BgWorkerStart_RecoveryFinished;
	w->bgw_restart_time = restart_time;
	snprintf(w->bgw_library_name, BGW_MAXLEN, "corpq");
	snprintf(w->bgw_function_name, BGW_MAXLEN, "%s", function_name);
	snprintf(w->bgw_type, BGW_MAXLEN, "%s", type);
	w->bgw_notify_pid = 0;
}

void
corpq_job_launch(Oid dboid, int64 job_id, Oid session_role, Oid owner,
				 TransactionId wait_for)
{
	BackgroundWorker w;
	BackgroundWorkerHandle *handle;
	CorpqJobLaunchInfo info = {dboid, session_role, owner, wait_for};

	corpq_job_worker_spec(&w, "corpq_job_main", "corpq job", BGW_NEVER_RESTART);
	snprintf(w.bgw_name, BGW_MAXLEN, "corpq job " INT64_FORMAT, job_id);
	w.bgw_main_arg = Int64GetDatum(job_id);
	memcpy(w.bgw_extra, &info, sizeof(info));

	if (!RegisterDynamicBackgroundWorker(&w, &handle))
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no background worker slot is free for a corpq job"),
				 errhint("Raise max_worker_processes (it needs a restart), or wait for running jobs to finish.")));
}

bool
corpq_job_worker_alive(int pid)
{
	PGPROC	   *proc;

	if (pid <= 0)
		return false;
	/* the live process array, not pg_stat_activity's per-transaction snapshot */
	proc = BackendPidGetProc(pid);
	return proc != NULL && proc->isBackgroundWorker && proc->databaseId == MyDatabaseId;
}

/*
 * The running jobs of this server start whose worker is gone, as arrays of
 * (id, worker_pid) for corpq_jobs_orphans(); NULL when there are none.  Read
 * as the catalog owner: every role's jobs count.
 */
bool
corpq_jobs_dead_workers(Datum *ids, Datum *pids)
{
	Datum	   *id_d,
			   *pid_d;
	int			n = 0;

	if (corpq_sql_as_owner("SELECT j.id, j.worker_pid FROM corpq.jobs j "
						   "WHERE j.state OPERATOR(pg_catalog.=) '" CORPQ_JOB_RUNNING_NAME "' "
						   "AND j.server_start OPERATOR(pg_catalog.=) pg_catalog.pg_postmaster_start_time()",
						   0, NULL, NULL, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read running corpq jobs");
	id_d = palloc(sizeof(Datum) * (SPI_processed + 1));
	pid_d = palloc(sizeof(Datum) * (SPI_processed + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		pid = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);

		if (!isnull && corpq_job_worker_alive(DatumGetInt32(pid)))
			continue;
		id_d[n] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		pid_d[n] = isnull ? Int32GetDatum(0) : pid;
		n++;
	}
	*ids = PointerGetDatum(construct_array(id_d, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	*pids = PointerGetDatum(construct_array(pid_d, n, INT4OID, 4, true, TYPALIGN_INT));
	return n > 0;
}

const char *
corpq_jobs_orphaned_sql(bool restarted)
{
	const char *dead =
		"(j.state OPERATOR(pg_catalog.=) '" CORPQ_JOB_RUNNING_NAME "' "
		"  AND EXISTS (SELECT 1 FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) d(id, pid) "
		"    WHERE d.id OPERATOR(pg_catalog.=) j.id "
		"    AND d.pid OPERATOR(pg_catalog.=) COALESCE(j.worker_pid, 0)))";
	const char *left_by_restart =
		"(j.state OPERATOR(pg_catalog.=) '" CORPQ_JOB_RUNNING_NAME "' "
		"  AND j.server_start IS DISTINCT FROM pg_catalog.pg_postmaster_start_time()) "
		"OR (j.state OPERATOR(pg_catalog.=) '" CORPQ_JOB_QUEUED_NAME "' "
		"  AND j.created OPERATOR(pg_catalog.<) pg_catalog.pg_postmaster_start_time() "
		"  AND j.server_start IS DISTINCT FROM pg_catalog.pg_postmaster_start_time())";

	return restarted ? psprintf("%s OR %s", dead, left_by_restart) : dead;
}

/*
 * Mark jobs whose worker is gone as failed (cancelled when a cancel was
 * requested); returns how many.  With corpq preloaded, jobs orphaned by a
 * server restart belong to the recovery worker (it requeues restartable
 * kinds), which may not have run yet: only jobs whose worker died under the
 * current postmaster are reaped here, and only once recovery has run since
 * the last start or crash-restart (job_settled.h).  A row whose state or worker changed
 * since it was judged (it finished, or recovery relaunched it) is left alone.
 */
static uint64
reap_orphans(void)
{
	Oid			argtypes[2] = {INT8ARRAYOID, INT4ARRAYOID};
	Datum		values[2];
	bool		dead;

	/* a crash-restart's orphans are recovery's to settle first (job_settled.h) */
	if (corpq_jobs_preloaded && !corpq_job_settled(MyDatabaseId))
		return 0;
	dead = corpq_jobs_dead_workers(&values[0], &values[1]);
	if (!dead && corpq_jobs_preloaded)
		return 0;
	if (corpq_sql_as_owner(psprintf("UPDATE corpq.jobs j SET "
									"state = CASE WHEN j.cancel_requested THEN '" CORPQ_JOB_CANCELLED_NAME "' "
									"  ELSE '" CORPQ_JOB_FAILED_NAME "' END, "
									"finished = pg_catalog.now(), "
									"error = CASE WHEN j.server_start IS DISTINCT FROM pg_catalog.pg_postmaster_start_time() "
									"  THEN 'the server restarted while the job was running' "
									"  ELSE 'the job''s worker exited without finishing' END "
									"WHERE %s",
									corpq_jobs_orphaned_sql(!corpq_jobs_preloaded)),
						   2, argtypes, values, NULL, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not reap orphaned corpq jobs");
	return SPI_processed;
}

/* The advisory lock tag that serialises submissions (check_job_limit). */
#define SUBMIT_LOCK_KEY 0x63727071	/* "crpq" */
#define SUBMIT_LOCK_FIELD4 3

static void
check_job_limit(Oid owner, Oid session_role)
{
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		values[2] = {ObjectIdGetDatum(owner), ObjectIdGetDatum(session_role)};
	int64		active,
				mine;
	int			share = jobs_role_share();
	bool		isnull;
	LOCKTAG		tag;

	/*
	 * Serialise submissions so two cannot both see room for one more: a lock
	 * held to the end of the submitting transaction.  Not a table lock, which
	 * would also hold back every worker's claim and result while a submitter
	 * sits in its transaction; an advisory tag no SQL function can take
	 * (pg_advisory_lock uses field4 1 and 2), so no role can block it.
	 */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, SUBMIT_LOCK_KEY, 0, SUBMIT_LOCK_FIELD4);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	reap_orphans();

	/*
	 * Every role's jobs (the limit is the database's), and the caller's: the
	 * jobs the new one's owner owns or its login submitted (under SET ROLE to
	 * another role it is a member of), so switching roles gains no slots.
	 */
	if (corpq_sql_as_owner("SELECT pg_catalog.count(*), "
						   "pg_catalog.count(*) FILTER (WHERE owner OPERATOR(pg_catalog.=) $1::pg_catalog.regrole "
						   "  OR session_role OPERATOR(pg_catalog.=) $2::pg_catalog.regrole) "
						   "FROM corpq.jobs "
						   "WHERE state OPERATOR(pg_catalog.=) ANY ('{" CORPQ_JOB_QUEUED_NAME "," CORPQ_JOB_RUNNING_NAME "}'::pg_catalog.text[])",
						   2, argtypes, values, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not count corpq jobs");
	active = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	mine = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	/* the role's own share first: when it is used up, the role's jobs are the cause */
	if (mine >= share)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many corpq jobs for role \"%s\": %lld queued or running, its share of the database's jobs is %d",
						GetUserNameFromId(owner, false), (long long) mine, share),
				 errdetail("corpq.max_jobs (%d) is shared by every role; one role may hold corpq.max_jobs_per_role (%d; -1 means corpq.max_jobs - 1) of them, counting the jobs its login submitted under SET ROLE, so that other roles can still submit.",
						   corpq_max_jobs, corpq_max_jobs_per_role),
				 errhint("Wait for one of the role's jobs to finish, cancel one with corpq.job_cancel(), or ask a superuser to raise corpq.max_jobs_per_role.")));
	if (active >= corpq_max_jobs)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many corpq jobs: %lld queued or running, corpq.max_jobs is %d",
						(long long) active, corpq_max_jobs),
				 errhint("Wait for a job to finish, cancel one with corpq.job_cancel(), or raise corpq.max_jobs.")));
}

/*
 * A job's worker logs in as the session's role and then takes the current
 * one: a job started by a superuser session under SET ROLE would let code in
 * the job (the corpus query) RESET ROLE back to the superuser.  Workers refuse
 * such jobs (corpq_job_roles_safe), so submission refuses them first.
 */
static void
check_submitter(Oid session_role, Oid owner)
{
	if (!corpq_job_roles_safe(session_role, owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("a superuser session cannot start a corpq job as role \"%s\"",
						GetUserNameFromId(owner, false)),
				 errdetail("The job's worker would log in as superuser \"%s\", and code run by the job could return to it.",
						   GetUserNameFromId(session_role, false)),
				 errhint("Log in as a member of role \"%s\" to start the job, or RESET ROLE to run it as the superuser.",
						 GetUserNameFromId(owner, false))));
}

bool
corpq_job_roles_safe(Oid session_role, Oid owner)
{
	return !superuser_arg(session_role) || superuser_arg(owner);
}

int64
corpq_job_submit(const char *kind, const char *args_json, int threads)
{
	Oid			argtypes[6] = {TEXTOID, TEXTOID, OIDOID, OIDOID, TEXTOID, INT4OID};
	Datum		values[6];
	bool		isnull;
	int64		id;
	Oid			owner = GetUserId();
	Oid			session_role = GetSessionUserId();

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot start a corpq job during recovery"),
				 errhint("Submit jobs on the primary server.")));
	Assert(corpq_job_kind(kind) != NULL);
	check_submitter(session_role, owner);

	SPI_connect();
	check_job_limit(owner, session_role);
	values[0] = CStringGetTextDatum(kind);
	values[1] = CStringGetTextDatum(args_json);
	values[2] = ObjectIdGetDatum(owner);
	values[3] = ObjectIdGetDatum(session_role);
	values[4] = CStringGetTextDatum(namespace_search_path);
	/* resolved once, here: the worker applies the row's value */
	values[5] = Int32GetDatum(corpq_job_threads_for(CORPQ_OPT_IS_UNSET(threads) ? 0 : threads));
	if (corpq_sql_as_owner("INSERT INTO corpq.jobs (kind, args, owner, session_role, search_path, threads) "
						   "VALUES ($1, $2::pg_catalog.jsonb, $3::pg_catalog.regrole, $4::pg_catalog.regrole, $5, $6) RETURNING id",
						   6, argtypes, values, NULL, 1) != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "could not insert a corpq job");
	id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();

	/* The worker waits for this transaction to end before it reads the row. */
	corpq_job_launch(MyDatabaseId, id, session_role, owner, GetTopTransactionId());
	return id;
}

/*
 * The job's state and xmin (and its kind and error, NULL when it has none),
 * or false when the caller cannot see it.
 */
static bool
read_job(int64 id, char **state, TransactionId *xmin, char **kind, char **error)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(id)};
	bool		isnull;

	/* not read-only: SPI then takes a fresh snapshot, so job_wait sees the update */
	if (corpq_sql_as_caller("SELECT state, xmin::pg_catalog.text::pg_catalog.int8, kind, error FROM corpq.jobs "
							"WHERE id OPERATOR(pg_catalog.=) $1",
							1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq job");
	if (SPI_processed == 0)
		return false;
	*state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	*xmin = (TransactionId) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
														SPI_tuptable->tupdesc, 2, &isnull));
	*kind = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
	*error = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4);
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
is_final(CorpqJobState state)
{
	return state == CORPQ_JOB_SUCCEEDED || state == CORPQ_JOB_FAILED ||
		state == CORPQ_JOB_CANCELLED;
}

PG_FUNCTION_INFO_V1(corpq_job_wait);

/*
 * With raise: a failed job is an ERROR carrying its error text, a cancelled
 * one an ERROR of its own code (docs/catalog-and-jobs.md).  Failed is
 * external_routine_exception (38000): the job is code that ran elsewhere and
 * its own SQLSTATE is not kept.  Cancelled is operator_intervention (57000),
 * not query_canceled (57014): this statement was not cancelled, and
 * PL/pgSQL's WHEN OTHERS does not catch 57014.
 */
static void
raise_job_end(int64 id, CorpqJobState state, const char *kind, const char *error)
{
	if (state == CORPQ_JOB_FAILED)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("corpq job " INT64_FORMAT " (%s) failed: %s", id, kind,
						error ? error : "no error was recorded"),
				 errhint("corpq.jobs holds the job's arguments; fix the cause and submit it again.")));
	if (state == CORPQ_JOB_CANCELLED)
		ereport(ERROR,
				(errcode(ERRCODE_OPERATOR_INTERVENTION),
				 errmsg("corpq job " INT64_FORMAT " (%s) was cancelled", id, kind),
				 error ? errdetail("%s", error) : 0));
}

/*
 * corpq.job_wait(id, timeout, raise): poll the job's row with a fresh
 * snapshot every 100 ms until it is final; returns the state (the current
 * one on timeout).  With raise, a failed or cancelled end is an ERROR.
 */
Datum
corpq_job_wait(PG_FUNCTION_ARGS)
{
	int64		id;
	TimestampTz deadline = 0;
	char	   *state = NULL;
	char	   *kind = NULL;
	char	   *error = NULL;
	TransactionId xmin;
	text	   *result;
	bool		raise;
	CorpqJobState final = CORPQ_JOB_QUEUED;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	id = PG_GETARG_INT64(0);
	raise = PG_NARGS() > 2 && !PG_ARGISNULL(2) && PG_GETARG_BOOL(2);
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
		if (!read_job(id, &state, &xmin, &kind, &error))
			job_not_found(id);
		if (TransactionIdIsCurrentTransactionId(xmin) &&
			corpq_job_state_parse(state) == CORPQ_JOB_QUEUED)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("corpq job " INT64_FORMAT " was submitted in this transaction and cannot start before it commits", id),
					 errhint("Commit first, then wait for the job.")));
		if (is_final(corpq_job_state_parse(state)))
		{
			final = corpq_job_state_parse(state);
			break;
		}
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
	if (raise)
		raise_job_end(id, final, kind, error);
	result = text_for_caller(state);
	SPI_finish();
	PG_RETURN_TEXT_P(result);
}

PG_FUNCTION_INFO_V1(corpq_job_cancel);

/*
 * corpq.job_cancel(id): a queued job is cancelled at once; a running one gets
 * cancel_requested and its worker a cancel signal, and records 'cancelled'
 * itself when it stops (within one progress step).  A running job whose
 * worker is gone is marked cancelled here.  The caller must see the row
 * (members of its owner role), then corpq writes it.
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
	if (corpq_sql_as_caller("SELECT 1 FROM corpq.jobs WHERE id OPERATOR(pg_catalog.=) $1",
							1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq job");
	if (SPI_processed == 0)
		job_not_found(id);
	if (corpq_sql_as_owner("UPDATE corpq.jobs j SET cancel_requested = true, "
						   "state = CASE WHEN j.state OPERATOR(pg_catalog.=) '" CORPQ_JOB_QUEUED_NAME "' "
						   "  THEN '" CORPQ_JOB_CANCELLED_NAME "' ELSE j.state END, "
						   "finished = CASE WHEN j.state OPERATOR(pg_catalog.=) '" CORPQ_JOB_QUEUED_NAME "' "
						   "  THEN pg_catalog.now() ELSE j.finished END, "
						   "error = CASE WHEN j.state OPERATOR(pg_catalog.=) '" CORPQ_JOB_QUEUED_NAME "' "
						   "  THEN 'cancelled before it started' ELSE j.error END "
						   "FROM (SELECT o.id, o.state FROM corpq.jobs o WHERE o.id OPERATOR(pg_catalog.=) $1 FOR UPDATE) old "
						   "WHERE j.id OPERATOR(pg_catalog.=) old.id RETURNING old.state, j.worker_pid",
						   1, argtypes, values, NULL, 1) != SPI_OK_UPDATE_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not cancel corpq job " INT64_FORMAT, id);
	state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	pid_text = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	if (corpq_job_state_parse(state) == CORPQ_JOB_RUNNING)
	{
		if (pid_text != NULL && corpq_job_worker_alive(atoi(pid_text)))
			(void) kill(atoi(pid_text), SIGINT);
		else
			reap_orphans();
	}
	result = text_for_caller(state);
	SPI_finish();
	PG_RETURN_TEXT_P(result);
}
