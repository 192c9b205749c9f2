/*
 * The thread settings of corpq (base.h): corpq.threads, corpq.max_threads
 * and corpq.job_threads, the threads a job runs with, and the one place a
 * process's threads are set (the core's pool, common/parallel.h, and
 * whoever listens: OpenBLAS once it is loaded, blas_loader.c).
 */
#include "postgres.h"

#include <sched.h>
#include <unistd.h>

#include "utils/guc.h"

#include "common/parallel.h"
#include "pg/base/base.h"

int			corpq_threads = 1;
int			corpq_job_threads = 0;
int			corpq_max_threads = 1;

/* The CPUs this server process may run on (its affinity mask). */
static int
available_cores(void)
{
	cpu_set_t	set;
	long		n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int) n : 1;
}

int
corpq_job_threads_for(int requested)
{
	int			cap = Min(corpq_job_threads > 0 ? corpq_job_threads : available_cores(),
						  corpq_max_threads);

	if (requested <= 0 || requested > cap)
		return cap;
	return requested;
}

/*
 * Whether a value set by a role (SET, ALTER ROLE/DATABASE SET, a function's
 * SET, PGOPTIONS) is checked against its superuser ceiling when it is set.
 * The server's own configuration (file, command line) is not: its lines apply
 * in any order, and corpq caps at use whatever was set.  Nor is the
 * validation of ALTER ROLE ... SET (PGC_S_TEST): the ceiling that will hold in
 * the role's sessions may differ from the caller's.
 */
bool
corpq_guc_ceiling_applies(GucSource source)
{
	return source > PGC_S_ARGV && source != PGC_S_TEST;
}

static bool
check_threads(int *newval, void **extra, GucSource source)
{
	if (*newval <= corpq_max_threads || !corpq_guc_ceiling_applies(source))
		return true;
	GUC_check_errmsg("corpq.threads cannot exceed corpq.max_threads (%d)", corpq_max_threads);
	GUC_check_errhint("A superuser sets corpq.max_threads (by default the CPUs available to the server).");
	return false;
}

static void
assign_threads(int newval, void *extra)
{
	corpq_set_threads(newval);
}

/* A ceiling lowered below the session's value takes effect at once. */
static void
assign_max_threads(int newval, void *extra)
{
	corpq_max_threads = newval;
	corpq_set_threads(corpq_threads);
}

void
corpq_threads_define_settings(void)
{
	/* before corpq.threads: a value it gets when defined is checked against this */
	DefineCustomIntVariable("corpq.max_threads",
							"Most threads a session or a job of corpq uses.",
							"Superuser setting; by default the CPUs available to the server.  corpq.threads "
							"cannot be set above it, and every job's threads are capped by it.",
							&corpq_max_threads,
							available_cores(), 1, 256,
							PGC_SUSET, 0,
							NULL, assign_max_threads, NULL);
	DefineCustomIntVariable("corpq.threads",
							"Number of OpenBLAS threads corpq uses in each backend or worker.",
							"Threads start lazily, on the first model computation in a process, never in the postmaster.",
							&corpq_threads,
							1, 1, 256,
							PGC_USERSET, 0,
							check_threads, assign_threads, NULL);
	DefineCustomIntVariable("corpq.job_threads",
							"Threads of a background job, and the most one may ask for.",
							"0 (auto): the CPUs available to the server.  A job's \"threads\" option picks fewer.",
							&corpq_job_threads,
							0, 0, 256,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
}

/* Who else takes the thread count: OpenBLAS once loaded (blas_loader.c). */
static void (*threads_listener) (int n) = NULL;

void
corpq_threads_listen(void (*listener) (int n))
{
	threads_listener = listener;
}

void
corpq_set_threads(int n)
{
	/* the ceiling holds whatever set n: a value set before it was lowered, a job's option */
	n = Min(n, corpq_max_threads);
	/* a number only: the pool's workers start on first use, never here */
	cq_parallel_set_threads(n);
	if (threads_listener)
		threads_listener(n);
}
