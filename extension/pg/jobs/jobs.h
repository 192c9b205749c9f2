/*
 * Background jobs: submission, the worker's view of its job, progress.
 *
 * A job is a row of corpq.jobs plus a dynamic background worker.  The worker
 * connects to the submitter's database as the submitter's login role, assumes
 * the job owner's role (as SET ROLE did in the submitting session), waits for
 * the submitting transaction to end, claims the row, and runs the kind's
 * function.  The function reads its input, computes outside or inside
 * transactions as it likes, and writes its result and calls corpq_job_finish()
 * in one final transaction, so a failed or cancelled job leaves nothing partial.
 */
#ifndef CORPQ_JOBS_H
#define CORPQ_JOBS_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "postmaster/bgworker.h"

#include "pg/base/options.h"

/*
 * A job's state, as corpq.jobs.state holds it (its CHECK constraint in
 * extension/sql/40_jobs.sql lists the same names).  The names are macros so
 * that corpq's statements stay constant text: "state = '" CORPQ_JOB_QUEUED_NAME "'".
 */
#define CORPQ_JOB_QUEUED_NAME "queued"
#define CORPQ_JOB_RUNNING_NAME "running"
#define CORPQ_JOB_SUCCEEDED_NAME "succeeded"
#define CORPQ_JOB_FAILED_NAME "failed"
#define CORPQ_JOB_CANCELLED_NAME "cancelled"

typedef enum CorpqJobState
{
	CORPQ_JOB_QUEUED,
	CORPQ_JOB_RUNNING,
	CORPQ_JOB_SUCCEEDED,
	CORPQ_JOB_FAILED,
	CORPQ_JOB_CANCELLED
} CorpqJobState;

/* The name table, indexed by CorpqJobState. */
extern const char *const corpq_job_state_names[];

/* The state of a name read from corpq.jobs; ERROR for any other text. */
CorpqJobState corpq_job_state_parse(const char *name);

typedef struct CorpqJob
{
	int64		id;
	Oid			owner;			/* the role the job runs as; rows it writes carry it */
	char	   *kind;
	char	   *args;			/* the job's arguments, jsonb as text */
	int			attempts;		/* 1 on the first run, more after a restart */
	int			threads;		/* the job's threads, applied before the kind runs */
	/* progress publishing */
	char		phase[64];
	TimestampTz phase_started;
	TimestampTz last_report;
} CorpqJob;

typedef void (*corpq_job_fn) (CorpqJob *job);

typedef struct CorpqJobKind
{
	const char *kind;
	corpq_job_fn run;
	bool		restartable;	/* may run again from the start after a crash */
} CorpqJobKind;

/*
 * The registry of job kinds (job_kinds.c).  Each subsystem registers its
 * kinds from its init function at module start-up (_PG_init, module.c), so
 * jobs/ knows no subsystem: register a kind once per process; ERROR for a
 * name registered twice.
 */
void		corpq_job_register_kind(const char *kind, corpq_job_fn run, bool restartable);

/* The registered kind of that name, or NULL. */
const CorpqJobKind *corpq_job_kind(const char *kind);

/*
 * The "threads" option of every job kind: one row of the kind's option table
 * (base/options.h) on an int field, unset by default and never echoed in the
 * options' JSON.  The submitting function passes the field to
 * corpq_job_submit, which resolves it once (corpq_job_threads_for: unset is
 * corpq.job_threads, and no job gets more) into corpq.jobs.threads; the
 * worker applies it (OpenBLAS's threads and the core's pool,
 * corpq_set_threads) before the kind's function runs, which reads it as
 * job->threads.
 */
#define CORPQ_JOB_THREADS_OPTION(options, field) \
	{.key = "threads", CORPQ_OPT_FIELD(options, field), .type = CORPQ_OPT_INT, \
	 .min = 1, .max = 256, .flags = CORPQ_OPT_UNSET, .echo = corpq_job_threads_echo}

/* The row's .echo: false (the resolved value is the job row's). */
bool		corpq_job_threads_echo(const void *options);

/*
 * In a backend: insert the job row and launch its worker; returns the job id.
 * threads is the job's "threads" option as parsed (CORPQ_OPT_UNSET_INT when
 * not given).  Errors when no worker slot is free, on a hot standby, or past
 * corpq.max_jobs or the role's share of it (corpq.max_jobs_per_role).
 */
int64		corpq_job_submit(const char *kind, const char *args_json, int threads);

/*
 * Whether a job may run with these roles: never a superuser session for a
 * role that is not one (its code could RESET ROLE back to the superuser).
 */
bool		corpq_job_roles_safe(Oid session_role, Oid owner);

/*
 * Whether pid is a live background worker of this database, from the process
 * array (never a pg_stat_activity snapshot, which is cached per transaction).
 */
bool		corpq_job_worker_alive(int pid);

/*
 * With SPI connected: the running jobs of this postmaster whose worker is
 * not alive, as an int8[] of ids and an int4[] of their worker pids (0 when
 * none); false when there are none.
 */
bool		corpq_jobs_dead_workers(Datum *ids, Datum *pids);

/*
 * The one definition of an orphaned job, as an SQL condition on corpq.jobs j
 * with $1, $2 the arrays of corpq_jobs_dead_workers(): a running job whose
 * worker died under this postmaster, and with restarted also a job the last
 * server start left behind (running before it, or queued before it and never
 * requeued by recovery).
 */
const char *corpq_jobs_orphaned_sql(bool restarted);

/*
 * A background worker of corpq's, every field but bgw_name, bgw_main_arg and
 * bgw_extra filled: it connects to a database and starts after recovery.
 */
void		corpq_job_worker_spec(BackgroundWorker *w, const char *function_name,
								  const char *type, int restart_time);

/* Launch a worker for an existing queued row (submission and recovery). */
void		corpq_job_launch(Oid dboid, int64 job_id, Oid session_role,
							 Oid owner, TransactionId wait_for);

/*
 * In the worker: publish progress (rate-limited to a few per second unless
 * force), readable at once from corpq.job_progress.  figures_json is a JSON
 * object text or NULL.  Also processes interrupts, so a cancel lands here.
 */
void		corpq_job_progress(CorpqJob *job, const char *phase, double done,
							   double total, const char *unit,
							   const char *figures_json, bool force);

/*
 * In the worker: a short transaction with a snapshot and SPI connected, in
 * which cxt is the current memory context; commit returns to cxt.  Jobs write
 * progress rows, checkpoints and their final result this way.
 */
void		corpq_job_xact_begin(MemoryContext cxt);
void		corpq_job_xact_commit(MemoryContext cxt);

/* In the worker, inside its final transaction with SPI connected. */
void		corpq_job_finish(CorpqJob *job, const char *result_json);

/* Text value of a top-level key of the job's args, or NULL. */
char	   *corpq_job_arg(CorpqJob *job, const char *key);

extern int	corpq_max_jobs;
extern int	corpq_max_jobs_per_role;

/* What a job worker needs before it can read anything: in bgw_extra. */
typedef struct CorpqJobLaunchInfo
{
	Oid			dboid;
	Oid			session_role;	/* login role the worker connects as */
	Oid			owner;			/* role the job runs as (SET ROLE) */
	TransactionId wait_for;		/* submitting transaction, or invalid */
} CorpqJobLaunchInfo;

/* Worker entry points (bgw_function_name). */
PGDLLEXPORT void corpq_job_main(Datum arg);
PGDLLEXPORT void corpq_job_launcher_main(Datum arg);
PGDLLEXPORT void corpq_job_recovery_main(Datum arg);

/*
 * True when corpq was preloaded: restart orphans are left to recovery.
 * Defined in jobs.c, set by corpq_job_launcher_init.
 */
extern bool corpq_jobs_preloaded;

/* _PG_init's calls for jobs/: define corpq.max_jobs and corpq.max_jobs_per_role (jobs.c) ... */
void		corpq_jobs_init(void);

/*
 * ... and, when corpq is in shared_preload_libraries, register the recovery
 * launcher (job_launcher.c).
 */
void		corpq_job_launcher_init(void);

#endif
