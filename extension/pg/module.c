/*
 * corpq module entry: the wiring.  _PG_init calls one init function per
 * subsystem that has GUCs, process-level set-up or job kinds (each registers
 * its kinds with corpq_job_register_kind, pg/jobs/jobs.h).  Subsystems live in
 * extension/pg/<subsystem>/ (docs/architecture.md).
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "pg/antap/antap.h"
#include "pg/base/base.h"
#include "pg/classifier/classifier.h"
#include "pg/curate/curate_job.h"
#include "pg/embed/embed.h"
#include "pg/jobs/jobs.h"
#include "pg/lexicon/lexicon.h"
#include "pg/model/model.h"
#include "pg/pipeline/pipeline_kinds.h"
#include "pg/score/score.h"
#include "pg/train/train_job.h"
#include "pg/translate/translate.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	corpq_base_init();
	corpq_jobs_init();
	corpq_job_launcher_init();
	corpq_model_init();
	corpq_score_init();
	corpq_translate_init();
	corpq_train_init();
	corpq_lexicon_init();
	corpq_antap_init();
	corpq_pipeline_init();
	corpq_embed_init();
	corpq_classifier_init();
	corpq_curate_job_init();
	MarkGUCPrefixReserved("corpq");
}
