/*
 * Pipelines: multi-stage jobs (data rejuvenation, UncSamp self-training)
 * that compose corpq's own SQL functions.
 *
 * A pipeline has a name (corpq.pipelines) and numbered stages
 * (corpq.pipeline_stages).  Each stage runs the SQL statements docs/pipelines.md
 * lists for it, as the job owner with the submitter's search_path, and
 * records itself finished in the same transaction as its writes: a stage is
 * done entirely or not at all.  A stage that trains or translates submits a
 * train() or translate_job() sub-job (recorded on its row in the submitting
 * transaction) and waits for it, publishing the sub-job's progress as its
 * own; a resumed pipeline waits for the same sub-job, or submits it again
 * when it ended without success.  An error fails the job with the stage
 * named and cancels a running sub-job; finished stages stay.
 */
#ifndef CORPQ_PIPELINE_H
#define CORPQ_PIPELINE_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/jsonb.h"

#include "pg/jobs/jobs.h"

typedef struct Pipeline
{
	CorpqJob   *job;
	const char *name;			/* the pipeline's name */
	const char *schema;			/* the schema of its tables */
	int			n_stages;
	int			stage;			/* running stage, 1-based (0: none) */
	const char *stage_name;
	int64		subjob;			/* the running stage's sub-job, 0 when none */
	MemoryContext cxt;			/* the job's context */
	StringInfoData result;		/* "stages": {...} of the job's result */
} Pipeline;

/*
 * A table a pipeline writes: schema.<name>_<suffix>, created at submission
 * with these columns (so no other role can take the name meanwhile) and
 * claimed (pipeline_claim_table) by the stage that fills it.
 */
typedef struct PipelineTable
{
	const char *suffix;
	const char *columns;		/* schema-qualified types */
} PipelineTable;

/* A stage: runs in the worker with no transaction open. */
typedef void (*PipelineStageFn) (Pipeline *p, void *arg);

/*
 * Run stage number n unless it is finished already (then load its output
 * into the result), naming errors after it.
 */
void		pipeline_stage(Pipeline *p, int n, const char *name,
						   PipelineStageFn fn, void *arg);

/* The output (jsonb text) of a finished stage, or NULL. */
char	   *pipeline_stage_output(Pipeline *p, int n);

/*
 * In a stage: submit the sub-job unless the stage has one that is queued,
 * running or succeeded, then wait for it; ERROR when it fails.  In the
 * submitting transaction, first the target table (NULL: none) is claimed
 * and emptied (a failed attempt may have left it half-filled), then
 * prepare_sql (NULL: none) runs as pipeline_exec.  submit_sql returns the
 * job id and runs as pipeline_exec_user.  Returns the sub-job id.
 */
int64		pipeline_subjob(Pipeline *p, const PipelineTable *target,
							const char *prepare_sql, const char *submit_sql);

/* In a stage, in a transaction (corpq_job_xact_begin): mark it finished. */
void		pipeline_stage_done(Pipeline *p, const char *output_json);

/*
 * In a transaction: run one of the pipeline's own statements with the
 * owner's rights and search_path = pg_catalog, pg_temp, so that no other
 * role's function or operator can stand in for one it names.
 */
void		pipeline_exec(const char *sql);

/*
 * In a transaction: run a statement that embeds the user's query text, with
 * the search_path recorded at submission (the user wrote the query for it).
 * Everything else in the statement is schema-qualified (OPERATOR(pg_catalog.=),
 * pg_catalog.count, ::pg_catalog.float8), so it means the same under any
 * search_path.
 */
void		pipeline_exec_user(const char *sql);

/* In a transaction: the first column of the first row of sql, or NULL (as pipeline_exec). */
char	   *pipeline_value(const char *sql);

/* The same, as pipeline_exec_user. */
char	   *pipeline_value_user(const char *sql);

/*
 * In a transaction: make table (quoted, qualified) ready to be written from
 * scratch: create it with columns when missing; ERROR naming it unless it is
 * a plain table owned by the job's owner with no trigger, rule or
 * inheritance (a table another role planted, or one it could run code
 * through); then empty it.
 */
void		pipeline_claim_table(Pipeline *p, const char *table, const char *columns);

/* The same check without creating or emptying (a table written by an earlier stage). */
void		pipeline_check_table(Pipeline *p, const char *table);

/* Publish stage progress (done of total unit) with the stage in the phase. */
void		pipeline_progress(Pipeline *p, const char *what, double done,
							  double total, const char *unit);

/* The pipeline's table name_suffix, quoted and schema-qualified. */
char	   *pipeline_table(Pipeline *p, const char *suffix);

/* Set up p from the job's args ("name", "schema"); n_stages stages. */
void		pipeline_init(Pipeline *p, CorpqJob *job, int n_stages);

/* Final transaction: the job's result from the stages' outputs. */
void		pipeline_finish(Pipeline *p);

/* --- submission (in the calling backend) --- */

/*
 * Check the name (free, or a pipeline of this kind the caller may resume
 * with the same args, not running), then record it and submit the job.
 * args_json is the resolved arguments, "name" and "schema" included.  A new
 * pipeline also checks that its tables schema.name_<suffix> and its models
 * name_<suffix> (lists ended by a NULL suffix) do not exist, creates the
 * tables as the caller, and reserves the model names for the caller's role
 * (model_create refuses them to others).  threads is the pipeline's
 * "threads" option (CORPQ_JOB_THREADS_OPTION): its own worker's, which
 * computes the stages that score; a train or translate sub-job has its own.
 * Returns the job id.
 */
int64		pipeline_submit(const char *kind, const char *name, const char *schema,
							const char *args_json, const PipelineTable *tables,
							const char *const *models, int threads);

/*
 * The .valid check of a "name" option: 1 to PIPELINE_NAME_MAX bytes, so that
 * every table name_<suffix> fits in NAMEDATALEN.
 */
#define PIPELINE_NAME_MAX 48
bool		pipeline_name_valid(const void *field);
#define PIPELINE_NAME_EXPECTED "a non-empty string of at most 48 bytes"

/* ERROR unless the named model / vocabulary / lexicon exists and is readable. */
void		pipeline_check_model(const char *name);
void		pipeline_check_vocab(const char *name);
void		pipeline_check_lexicon(const char *name);

/* ERROR unless the caller may create tables in the current schema; its name. */
char	   *pipeline_check_schema(void);

/*
 * Options given as JSON objects pass through to another function ("model",
 * "train", "translate"): remove them from options into *objects (JSON text
 * of each; when absent "{}", for "model" PIPELINE_MODEL_DEFAULT), so the
 * option table parses the rest.
 */
#define PIPELINE_MODEL_DEFAULT "{\"preset\": \"small\"}"

/* The sub-job options every pipeline passes on, as JSON text. */
typedef struct PipelineObjects
{
	char	   *model;			/* model_create's configuration */
	char	   *train;			/* train()'s options */
	char	   *translate;		/* translate_job()'s options */
} PipelineObjects;

/*
 * Takes "model", "train" and "translate" out of options (checking the train
 * and translate options with their own parsers now, so a mistake fails the
 * submission) and returns the rest for the pipeline's option table.
 */
Jsonb	   *pipeline_take_objects(Jsonb *options, PipelineObjects *obj);

/*
 * The vocabularies of the models a pipeline creates exist, and its model
 * configuration is valid for them (kind: "rejuvenate" for the message).
 */
void		pipeline_check_new_models(const char *kind, const PipelineObjects *obj,
									  const char *src_vocab, const char *tgt_vocab);

/*
 * A pipeline's job arguments: {"name", "schema", then the pairs of keys and
 * values (NULL: null) given as NULL-ended (key, value) arguments, "options",
 * "model", "train", "translate"}.
 */
char	   *pipeline_args(const char *name, const char *schema, const char *options_json,
						  const PipelineObjects *obj,...);

#endif
