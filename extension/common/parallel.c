/*
 * The thread pool of parallel.h.
 *
 * One task at a time: the caller publishes it under the mutex, bumps the
 * generation and wakes the workers; every thread, the caller included, takes
 * the next part index under the mutex until none is left; the caller waits
 * until the parts taken by others are done.  Because the caller takes parts
 * too, a call completes even when no worker runs (none started, or all busy
 * waking up), and a part's index never decides which thread runs it.
 */
#include "common/parallel.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#define MAX_THREADS 256

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
/* callers of this process, one at a time */
static pthread_mutex_t call_mu = PTHREAD_MUTEX_INITIALIZER;

static int	wanted = 1;			/* cq_parallel_set_threads */
static int	started;			/* workers running (besides callers) */
static unsigned long generation;	/* bumped per task */

/* the task, all under mu */
static cq_parallel_fn task_fn;
static void *task_arg;
static int	task_parts;
static int	next_part;
static int	unfinished;			/* parts taken or not yet taken, not done */

/* set on a thread while it runs a part: a nested call runs inline */
static __thread bool in_part;

/* Take and run parts until none is left; mu held on entry and exit. */
static void
take_parts(void)
{
	while (next_part < task_parts)
	{
		int			part = next_part++;
		cq_parallel_fn fn = task_fn;
		void	   *arg = task_arg;
		int			nparts = task_parts;

		pthread_mutex_unlock(&mu);
		in_part = true;
		fn(arg, part, nparts);
		in_part = false;
		pthread_mutex_lock(&mu);
		if (--unfinished == 0)
			pthread_cond_broadcast(&done);
	}
}

static void *
worker(void *unused)
{
	unsigned long seen;

	pthread_mutex_lock(&mu);
	seen = generation;
	for (;;)
	{
		while (generation == seen)
			pthread_cond_wait(&wake, &mu);
		seen = generation;
		take_parts();
	}
	return NULL;
}

/* Start workers up to n - 1 (mu held); a failure leaves fewer, never none needed. */
static void
start_workers(int n)
{
	sigset_t	all,
				old;

	sigfillset(&all);
	/*
	 * A fault of a worker's own is delivered to it whatever its mask (a
	 * blocked one kills the process at once): leave the faults unblocked so
	 * that the process's handler, if it has one (a job worker records its
	 * crash), runs.  SIGFPE stays blocked: PostgreSQL's handler raises an
	 * ERROR, which only the backend's thread may do.
	 */
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGILL);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (started < n - 1)
	{
		pthread_t	t;
		pthread_attr_t attr;
		bool		ok;

		if (pthread_attr_init(&attr) != 0)
			break;
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		ok = pthread_create(&t, &attr, worker, NULL) == 0;
		pthread_attr_destroy(&attr);
		if (!ok)
			break;
		started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void
cq_parallel_set_threads(int n)
{
	pthread_mutex_lock(&mu);
	wanted = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
	pthread_mutex_unlock(&mu);
}

int
cq_parallel_threads(void)
{
	int			n;

	pthread_mutex_lock(&mu);
	n = wanted;
	pthread_mutex_unlock(&mu);
	return n;
}

bool
cq_parallel_in_part(void)
{
	return in_part;
}

/* Parts on the caller; a nested call keeps its caller's in_part. */
static void
run_inline(cq_parallel_fn fn, void *arg, int nparts)
{
	bool		was = in_part;

	in_part = nparts > 1 || was;
	for (int p = 0; p < nparts; p++)
		fn(arg, p, nparts);
	in_part = was;
}

void
cq_parallel_run(cq_parallel_fn fn, void *arg, int nparts)
{
	if (nparts <= 1 || in_part)
	{
		run_inline(fn, arg, nparts);
		return;
	}
	pthread_mutex_lock(&call_mu);
	pthread_mutex_lock(&mu);
	if (wanted <= 1)
	{
		pthread_mutex_unlock(&mu);
		pthread_mutex_unlock(&call_mu);
		run_inline(fn, arg, nparts);
		return;
	}
	start_workers(nparts < wanted ? nparts : wanted);
	task_fn = fn;
	task_arg = arg;
	task_parts = nparts;
	next_part = 0;
	unfinished = nparts;
	generation++;
	pthread_cond_broadcast(&wake);
	take_parts();
	while (unfinished > 0)
		pthread_cond_wait(&done, &mu);
	pthread_mutex_unlock(&mu);
	pthread_mutex_unlock(&call_mu);
}
