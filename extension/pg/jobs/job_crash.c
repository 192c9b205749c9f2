/*
 * Crash records of job workers (job_crash.h): the worker's signal handlers
 * and the recovery worker's reading of what they wrote.
 */
#include "postgres.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/pg_type.h"
#include "nodes/pg_list.h"
#include "storage/fd.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "pg/jobs/job_crash.h"
#include "pg/jobs/jobs.h"

/* Under the data directory, every process's working directory. */
#define CRASH_DIR "pg_corpq"
#define CRASH_PREFIX "crash."

/* The signals that mean the worker's code went wrong (not SIGFPE: PostgreSQL makes it an ERROR). */
static const struct
{
	int			signo;
	const char *name;
}			crash_signals[] = {
	{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGILL, "SIGILL"}, {SIGABRT, "SIGABRT"}
};

/* Set before the job runs: the handler only writes. */
static char crash_path[MAXPGPATH];
static volatile sig_atomic_t crashing = 0;

/* A stack for the handler: a stack overflow (deep recursion) leaves none. */
#define ALT_STACK_SIZE (64 * 1024)
static char *alt_stack;

/*
 * Record the signal, then die by it with the default action, so that the
 * postmaster sees this process crash and restarts the server as it would
 * have.  Only async-signal-safe calls (open, write, close, sigaction, raise).
 */
static void
crash_handler(int signo)
{
	struct sigaction dfl;

	if (!crashing)
	{
		int			fd;

		crashing = 1;
		fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, S_IRUSR | S_IWUSR);
		if (fd >= 0)
		{
			char		digits[12];
			int			n = sizeof(digits);
			unsigned int v = (unsigned int) signo;

			digits[--n] = '\n';
			do
			{
				digits[--n] = (char) ('0' + v % 10);
				v /= 10;
			} while (v > 0 && n > 0);
			/* if it fails, the empty record still names the job, its signal unknown */
			if (write(fd, digits + n, sizeof(digits) - n) < 0)
				n = 0;
			(void) close(fd);
		}
	}
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	(void) sigaction(signo, &dfl, NULL);
	/* pending until the handler returns (the signal is blocked in it), then fatal */
	(void) raise(signo);
}

void
corpq_job_crash_arm(Oid dboid, int64 job_id)
{
	struct sigaction sa;
	stack_t		ss;

	if (!corpq_jobs_preloaded)
		return;
	if (mkdir(CRASH_DIR, S_IRWXU) != 0 && errno != EEXIST)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("corpq: could not create directory \"%s\": %m; a crash of job " INT64_FORMAT
						" will not be recorded", CRASH_DIR, job_id)));
		return;
	}
	snprintf(crash_path, sizeof(crash_path), CRASH_DIR "/" CRASH_PREFIX "%u." INT64_FORMAT,
			 dboid, job_id);

	alt_stack = MemoryContextAlloc(TopMemoryContext, ALT_STACK_SIZE);
	ss.ss_sp = alt_stack;
	ss.ss_size = ALT_STACK_SIZE;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL) != 0)
		elog(LOG, "corpq: could not set an alternate signal stack: %m");

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = crash_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_ONSTACK;
	for (int i = 0; i < lengthof(crash_signals); i++)
		(void) sigaction(crash_signals[i].signo, &sa, NULL);
}

/* "its worker was killed by signal 11 (SIGSEGV), ..."; signo 0: unknown (a torn record) */
static char *
reason(int signo)
{
	const char *name = "unknown";

	for (int i = 0; i < lengthof(crash_signals); i++)
		if (crash_signals[i].signo == signo)
			name = crash_signals[i].name;
	return psprintf("its worker was killed by signal %d (%s), which restarted the server; "
					"a job whose worker crashes does not run again", signo, name);
}

/* The signal a record holds, or 0 when it holds none (a torn write). */
static int
read_signal(const char *path)
{
	char		buf[16];
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	ssize_t		n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	CloseTransientFile(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return atoi(buf);
}

int
corpq_job_crash_records(Oid dboid, Datum *ids, Datum *reasons, List **files)
{
	DIR		   *dir = AllocateDir(CRASH_DIR);
	struct dirent *de;
	int			n = 0,
				size = 8;
	Datum	   *id_d = palloc(sizeof(Datum) * size);
	Datum	   *reason_d = palloc(sizeof(Datum) * size);

	*files = NIL;
	/* no directory: no job armed a handler since the data directory was made */
	if (dir == NULL && errno != ENOENT)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("corpq: could not open directory \"%s\": %m", CRASH_DIR)));
	while (dir != NULL && (de = ReadDir(dir, CRASH_DIR)) != NULL)
	{
		unsigned int db;
		long long	job;
		int			end = 0;

		if (sscanf(de->d_name, CRASH_PREFIX "%u.%lld%n", &db, &job, &end) != 2 ||
			de->d_name[end] != '\0' || db != dboid)
			continue;
		if (n == size)
		{
			size *= 2;
			id_d = repalloc(id_d, sizeof(Datum) * size);
			reason_d = repalloc(reason_d, sizeof(Datum) * size);
		}
		*files = lappend(*files, psprintf(CRASH_DIR "/%s", de->d_name));
		id_d[n] = Int64GetDatum((int64) job);
		reason_d[n] = CStringGetTextDatum(reason(read_signal(llast(*files))));
		n++;
	}
	if (dir != NULL)
		FreeDir(dir);
	*ids = PointerGetDatum(construct_array(id_d, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	*reasons = PointerGetDatum(construct_array(reason_d, n, TEXTOID, -1, false, TYPALIGN_INT));
	return n;
}

void
corpq_job_crash_forget(List *files)
{
	ListCell   *lc;

	foreach(lc, files)
	{
		if (unlink((char *) lfirst(lc)) != 0 && errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("corpq: could not remove \"%s\": %m", (char *) lfirst(lc))));
	}
}
