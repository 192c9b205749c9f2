/*
 * Jobs whose worker crashes (job_crash.c).
 *
 * A worker that dies by a signal makes the postmaster restart the server, and
 * recovery would requeue a restartable job, which crashes again: one call
 * restarted the server three times.  So a job's worker records its own death:
 * handlers of SIGSEGV, SIGBUS, SIGILL and SIGABRT write the job and the signal
 * to a small file under the data directory (path computed before the job
 * runs, written with async-signal-safe calls only, on an alternate stack so a
 * stack overflow is recorded too), then die by the same signal, so the
 * postmaster still sees the crash.  After the restart the recovery worker
 * fails the jobs named there with the signal instead of requeuing them, and
 * removes the files.  SIGFPE keeps PostgreSQL's handler (an ERROR).
 */
#ifndef CORPQ_JOB_CRASH_H
#define CORPQ_JOB_CRASH_H

#include "postgres.h"

/*
 * In a job's worker, once it has claimed job_id of database dboid: install the
 * handlers.  Only with corpq preloaded: the recovery worker that reads the
 * records exists only then.
 */
void		corpq_job_crash_arm(Oid dboid, int64 job_id);

/*
 * In the recovery worker: the crash records of database dboid, as an int8[]
 * of job ids and a text[] of the reasons ("its worker was killed by signal 11
 * (SIGSEGV)"); the number of records.  *files lists their paths for
 * corpq_job_crash_forget.
 */
int			corpq_job_crash_records(Oid dboid, Datum *ids, Datum *reasons, List **files);

/* Remove the records once the jobs they name are settled (committed). */
void		corpq_job_crash_forget(List *files);

#endif
