/*
 * corpq module entry: GUCs and the core's allocator.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "pg/corpq.h"
#include "pg/jobs.h"
#include "pg/model_catalog.h"

PG_MODULE_MAGIC;

int			corpq_threads = 1;

void		_PG_init(void);

static void
assign_threads(int newval, void *extra)
{
	corpq_blas_set_threads(newval);
}

void
_PG_init(void)
{
	DefineCustomIntVariable("corpq.threads",
							"Number of OpenBLAS threads corpq uses in each backend or worker.",
							"Threads start lazily, on the first model computation in a process, never in the postmaster.",
							&corpq_threads,
							1, 1, 256,
							PGC_USERSET, 0,
							NULL, assign_threads, NULL);
	DefineCustomIntVariable("corpq.max_jobs",
							"Maximum number of corpq jobs queued or running at once in a database.",
							"Each running job holds one background worker slot (max_worker_processes).",
							&corpq_max_jobs,
							4, 1, 1024,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	corpq_blas_define_gucs();
	corpq_model_define_gucs();
	MarkGUCPrefixReserved("corpq");
	if (process_shared_preload_libraries_in_progress)
		corpq_register_job_launcher();
	corpq_install_allocator();
}
