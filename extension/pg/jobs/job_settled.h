/*
 * Whether this server start's recovery has settled a database's orphaned
 * jobs yet (corpq preloaded).  A crash-restart keeps the postmaster's start
 * time, so until the recovery worker has run, a job whose worker the crash
 * killed looks to any session like a job whose worker exited on its own; a
 * session's job_wait or submission that reaped it then would fail a job that
 * recovery was about to requeue.  Shared memory is made anew at every start
 * and crash-restart, and with it these flags.
 */
#ifndef CORPQ_JOB_SETTLED_H
#define CORPQ_JOB_SETTLED_H

#include "postgres.h"

/* _PG_init, preloaded only: ask for the shared memory and its hooks. */
void		corpq_job_settled_init(void);

/* The recovery worker, after settling the orphans of database db. */
void		corpq_job_settled_mark(Oid db);

/*
 * Whether sessions of db may reap jobs whose worker is gone: true once
 * recovery marked db, once CORPQ_SETTLED_WAIT_S have passed since the start
 * (a recovery that never ran must not leave dead jobs running for ever), and
 * always without corpq preloaded (there is no recovery then).
 */
#define CORPQ_SETTLED_WAIT_S 60
bool		corpq_job_settled(Oid db);

#endif
