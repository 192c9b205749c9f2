/*
 * corpq module entry: the wiring.  _PG_init calls one init function per
 * subsystem that has GUCs or process-level set-up; the job kinds are wired in
 * job_kinds.c.  Subsystems live in extension/pg/<subsystem>/ (docs/architecture.md).
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "pg/base/base.h"
#include "pg/jobs/jobs.h"
#include "pg/model/model_catalog.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	corpq_base_init();
	corpq_jobs_init();
	corpq_model_init();
	MarkGUCPrefixReserved("corpq");
}
