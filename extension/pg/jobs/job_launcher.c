/*
 * With corpq in shared_preload_libraries: a launcher that runs after every
 * server start (and crash-restart) and, for each database with corpq, starts a
 * recovery worker that settles the jobs the restart orphaned: restartable kinds
 * are queued and launched again (their results are written only at the end,
 * or from complete checkpoints), others are marked failed with the reason.  A
 * job whose worker crashed (job_crash.h) is failed with the signal, and a job
 * is requeued after one crash-restart at most.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

#include "pg/base/base.h"
#include "pg/base/internal_sql.h"
#include "pg/jobs/job_crash.h"
#include "pg/jobs/job_settled.h"
#include "pg/jobs/jobs.h"

/* How often a job may be started again after restarts before it fails. */
#define MAX_ATTEMPTS 3

/*
 * An orphan of a crash-restart: its worker died under the current postmaster
 * (a crash-restart keeps pg_postmaster_start_time(); a full restart does not).
 * Such a job is requeued once at most (corpq.jobs.crash_requeues): a crash
 * that recurs never restarts the server more than twice for one job, and a
 * job whose own worker crashed -- recorded by job_crash.c -- not even once
 * more.
 */
#define CRASH_ORPHAN \
	"(j.state OPERATOR(pg_catalog.=) '" CORPQ_JOB_RUNNING_NAME "' " \
	"AND j.server_start OPERATOR(pg_catalog.=) pg_catalog.pg_postmaster_start_time())"

void
corpq_job_launcher_init(void)
{
	BackgroundWorker w;

	if (!process_shared_preload_libraries_in_progress)
		return;
	corpq_jobs_preloaded = true;
	corpq_job_settled_init();

	/* restarted after a crash-restart (10 s), which is when it is needed */
	corpq_job_worker_spec(&w, "corpq_job_launcher_main", "corpq job launcher", 10);
	snprintf(w.bgw_name, BGW_MAXLEN, "corpq job launcher");
	RegisterBackgroundWorker(&w);
}

static void
launch_recovery(Oid dboid)
{
	BackgroundWorker w;
	BackgroundWorkerHandle *handle;

	corpq_job_worker_spec(&w, "corpq_job_recovery_main", "corpq job recovery", BGW_NEVER_RESTART);
	snprintf(w.bgw_name, BGW_MAXLEN, "corpq job recovery for database %u", dboid);
	w.bgw_main_arg = ObjectIdGetDatum(dboid);
	if (!RegisterDynamicBackgroundWorker(&w, &handle))
		ereport(WARNING,
				(errmsg("corpq: no worker slot to recover the jobs of database %u", dboid),
				 errhint("Raise max_worker_processes.")));
}

/* Connected to no database: read pg_database, start one recovery per database. */
void
corpq_job_launcher_main(Datum arg)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);

		if (db->datallowconn && !db->datistemplate)
			launch_recovery(db->oid);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	PopActiveSnapshot();
	CommitTransactionCommand();

	/* Stay, so that the postmaster starts the launcher again after a crash. */
	for (;;)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Fail the orphans whose own worker crashed (values: the dead workers, $1 and
 * $2 of orphaned, then the crash records' job ids and reasons): requeued,
 * they would crash the server again.
 */
static void
fail_crashed(const char *orphaned, Datum *values)
{
	Oid			argtypes[4] = {INT8ARRAYOID, INT4ARRAYOID, INT8ARRAYOID, TEXTARRAYOID};

	if (corpq_sql_as_owner(psprintf("UPDATE corpq.jobs j SET finished = pg_catalog.now(), error = c.reason, "
									"state = CASE WHEN j.cancel_requested THEN '" CORPQ_JOB_CANCELLED_NAME "' "
									"  ELSE '" CORPQ_JOB_FAILED_NAME "' END "
									"FROM ROWS FROM (pg_catalog.unnest($3), pg_catalog.unnest($4)) c(id, reason) "
									"WHERE j.id OPERATOR(pg_catalog.=) c.id AND (%s)",
									orphaned),
						   4, argtypes, values, NULL, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not fail crashed corpq jobs");
	if (SPI_processed > 0)
		elog(LOG, "corpq: " UINT64_FORMAT " job(s) failed: their worker crashed", (uint64) SPI_processed);
}

/*
 * Requeue restartable orphans (returning what to launch), fail the rest.
 * Every statement runs with a fixed search_path (base/internal_sql.h): this
 * worker is a superuser, and the database's own search_path is its owner's
 * to set.
 */
static void
settle_orphans(Datum crash_ids, Datum crash_reasons)
{
	/*
	 * A crash-restart (a backend killed) keeps pg_postmaster_start_time(), so
	 * a running job also counts as orphaned when its worker is gone (judged
	 * from the process array: $1, $2).  A row requeued by this recovery
	 * carries the current start time and is not orphaned again by the second
	 * UPDATE below.
	 */
	const char *orphaned = corpq_jobs_orphaned_sql(true);
	Oid			argtypes[2] = {INT8ARRAYOID, INT4ARRAYOID};
	Datum		values[4];
	StringInfoData q;
	uint64		n;

	(void) corpq_jobs_dead_workers(&values[0], &values[1]);
	values[2] = crash_ids;
	values[3] = crash_reasons;
	initStringInfo(&q);

	/*
	 * A job whose role was dropped, or whose login role can no longer log
	 * in, would get a worker that dies at connection (FATAL) and stay queued
	 * for ever, holding a corpq.max_jobs slot: fail it now, saying why.
	 */
	appendStringInfo(&q,
					 "UPDATE corpq.jobs j SET state = '" CORPQ_JOB_FAILED_NAME "', finished = pg_catalog.now(), "
					 "error = CASE WHEN NOT EXISTS (SELECT FROM pg_catalog.pg_authid a "
					 "  WHERE a.oid OPERATOR(pg_catalog.=) j.owner::pg_catalog.oid) "
					 "  THEN 'the job''s role was dropped; the job cannot run again' "
					 "  WHEN NOT EXISTS (SELECT FROM pg_catalog.pg_authid a "
					 "  WHERE a.oid OPERATOR(pg_catalog.=) j.session_role::pg_catalog.oid) "
					 "  THEN 'the role the job logs in as was dropped; the job cannot run again' "
					 "  ELSE 'the role the job logs in as can no longer log in; the job cannot run again' END "
					 "WHERE (%s) AND NOT EXISTS (SELECT FROM pg_catalog.pg_authid a, pg_catalog.pg_authid b "
					 "  WHERE a.oid OPERATOR(pg_catalog.=) j.session_role::pg_catalog.oid AND a.rolcanlogin "
					 "  AND b.oid OPERATOR(pg_catalog.=) j.owner::pg_catalog.oid)",
					 orphaned);
	if (corpq_sql_as_owner(q.data, 2, argtypes, values, NULL, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not fail corpq jobs of dropped roles");
	if (SPI_processed > 0)
		elog(LOG, "corpq: " UINT64_FORMAT " orphaned job(s) failed: their role was dropped or cannot log in",
			 (uint64) SPI_processed);

	fail_crashed(orphaned, values);

	resetStringInfo(&q);
	appendStringInfo(&q,
					 "UPDATE corpq.jobs j SET state = '" CORPQ_JOB_QUEUED_NAME "', worker_pid = NULL, "
					 "crash_requeues = j.crash_requeues OPERATOR(pg_catalog.+) "
					 "  CASE WHEN " CRASH_ORPHAN " THEN 1 ELSE 0 END, "
					 "server_start = pg_catalog.pg_postmaster_start_time() "
					 "WHERE (%s) AND NOT j.cancel_requested AND j.attempts OPERATOR(pg_catalog.<) %d "
					 "AND NOT (" CRASH_ORPHAN " AND j.crash_requeues OPERATOR(pg_catalog.>=) 1) "
					 "AND corpq.job_kind_restartable(j.kind) "
					 "RETURNING j.id, j.session_role::pg_catalog.oid, j.owner::pg_catalog.oid",
					 orphaned, MAX_ATTEMPTS);
	if (corpq_sql_as_owner(q.data, 2, argtypes, values, NULL, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not requeue corpq jobs");
	n = SPI_processed;
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;
		HeapTuple	t = SPI_tuptable->vals[i];
		TupleDesc	d = SPI_tuptable->tupdesc;

		/* the worker checks the roles again before it runs anything */
		corpq_job_launch(MyDatabaseId, DatumGetInt64(SPI_getbinval(t, d, 1, &isnull)),
						 DatumGetObjectId(SPI_getbinval(t, d, 2, &isnull)),
						 DatumGetObjectId(SPI_getbinval(t, d, 3, &isnull)),
						 GetTopTransactionId());
	}
	if (n > 0)
		elog(LOG, "corpq: restarting " UINT64_FORMAT " job(s) orphaned by a server restart", n);

	resetStringInfo(&q);
	appendStringInfo(&q,
					 "UPDATE corpq.jobs j SET state = CASE WHEN j.cancel_requested THEN '" CORPQ_JOB_CANCELLED_NAME "' "
					 "  ELSE '" CORPQ_JOB_FAILED_NAME "' END, "
					 "finished = pg_catalog.now(), error = CASE "
					 "  WHEN j.cancel_requested THEN 'cancelled while the server restarted' "
					 "  WHEN " CRASH_ORPHAN " AND j.crash_requeues OPERATOR(pg_catalog.>=) 1 "
					 "  THEN 'a crash-restart of the server stopped the job a second time (another process crashed, "
					 "or its worker was killed); it does not run again' "
					 "  WHEN j.attempts OPERATOR(pg_catalog.>=) %d THEN 'the server restarted while the job was running, and it had run %d times' "
					 "  ELSE 'the server restarted while the job was running; this kind of job cannot restart' END "
					 "WHERE %s",
					 MAX_ATTEMPTS, MAX_ATTEMPTS, orphaned);
	if (corpq_sql_as_owner(q.data, 2, argtypes, values, NULL, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not fail orphaned corpq jobs");
}

void
corpq_job_recovery_main(Datum arg)
{
	bool		installed;
	Datum		crash_ids,
				crash_reasons;
	List	   *crash_files;
	MemoryContext old;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), BOOTSTRAP_SUPERUSERID, 0);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	SPI_connect();
	pgstat_report_activity(STATE_RUNNING, "corpq: settling orphaned jobs");
	if (corpq_sql_as_caller("SELECT extversion FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'corpq'",
							0, NULL, NULL, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up the corpq extension");
	installed = SPI_processed == 1;
	/*
	 * A library newer than the database's catalog (installed, not yet
	 * ALTER EXTENSION corpq UPDATE): its statements name columns the old
	 * catalog lacks.  Leave the jobs as they are; the first server start
	 * after the update settles them.
	 */
	if (installed && strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
							corpq_library_version()) != 0)
	{
		ereport(LOG,
				(errmsg("corpq: orphaned jobs of database %u are left until ALTER EXTENSION corpq UPDATE",
						MyDatabaseId),
				 errdetail("The catalog is version %s, the library %s; the next server start after the update settles them.",
						   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
						   corpq_library_version())));
		installed = false;
	}
	/* kept past the commit: the records are removed once the jobs are settled */
	old = MemoryContextSwitchTo(TopMemoryContext);
	(void) corpq_job_crash_records(MyDatabaseId, &crash_ids, &crash_reasons, &crash_files);
	MemoryContextSwitchTo(old);
	if (installed)
		settle_orphans(crash_ids, crash_reasons);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	/* committed: sessions may now reap what dies from here on */
	corpq_job_settled_mark(MyDatabaseId);
	corpq_job_crash_forget(crash_files);
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}
