/*
 * Which databases this server start's recovery has settled (job_settled.h).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "pg/jobs/job_settled.h"

/* Databases remembered; beyond them every database counts as settled. */
#define SETTLED_MAX 256

typedef struct SettledState
{
	slock_t		lock;
	TimestampTz since;			/* when this shared memory was made */
	int			n;
	bool		overflow;
	Oid			dbs[SETTLED_MAX];
} SettledState;

static SettledState *state = NULL;
static shmem_request_hook_type prev_request = NULL;
static shmem_startup_hook_type prev_startup = NULL;

static void
settled_request(void)
{
	if (prev_request)
		prev_request();
	RequestAddinShmemSpace(sizeof(SettledState));
}

static void
settled_startup(void)
{
	bool		found;

	if (prev_startup)
		prev_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	state = ShmemInitStruct("corpq job recovery", sizeof(SettledState), &found);
	if (!found)
	{
		SpinLockInit(&state->lock);
		state->since = GetCurrentTimestamp();
		state->n = 0;
		state->overflow = false;
	}
	LWLockRelease(AddinShmemInitLock);
}

void
corpq_job_settled_init(void)
{
	prev_request = shmem_request_hook;
	shmem_request_hook = settled_request;
	prev_startup = shmem_startup_hook;
	shmem_startup_hook = settled_startup;
}

void
corpq_job_settled_mark(Oid db)
{
	if (state == NULL)
		return;
	SpinLockAcquire(&state->lock);
	if (state->n < SETTLED_MAX)
		state->dbs[state->n++] = db;
	else
		state->overflow = true;
	SpinLockRelease(&state->lock);
}

bool
corpq_job_settled(Oid db)
{
	bool		settled;

	if (state == NULL)
		return true;
	SpinLockAcquire(&state->lock);
	settled = state->overflow;
	for (int i = 0; i < state->n && !settled; i++)
		settled = state->dbs[i] == db;
	SpinLockRelease(&state->lock);
	return settled || TimestampDifferenceExceeds(state->since, GetCurrentTimestamp(),
												 CORPQ_SETTLED_WAIT_S * 1000);
}
