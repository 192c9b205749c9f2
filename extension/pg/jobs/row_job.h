/*
 * Row jobs: the machinery of every job kind that maps the rows (id,
 * inputs...) of a user's query to rows (id, outputs...) of a user's table
 * and commits as it goes -- translate_job, score_job, embed_job ((id, text)
 * -> (id, vector)), and the kinds to come.
 *
 * What it does, once for all of them:
 *   - at submission (corpq_row_job_call, corpq_row_job_submit: the one
 *     opening and submission of every row job's SQL function), the
 *     arguments' checks, the target's (row_job_check_target: a table the
 *     submitting role may insert into, with the kind's columns and types),
 *     the query's, and the job's arguments; one active row job per target
 *     (claim_target: a second submission on a table a queued or running
 *     row job writes into is refused, one of the same transaction too);
 *   - in the worker, the query read through a cursor held across
 *     transactions (base/corpus_query.h: the query runs to its end when the
 *     first transaction commits, so an error in it fails the job before
 *     anything is written), handed to the kind in fetches, each row with a
 *     mark: the hash of the query's rows up to it (id and inputs);
 *   - the kind's output rows, put back in the query's order, written in
 *     chunks of chunk_rows rows: each chunk's rows go into the target (with
 *     the owner's rights: its triggers and row-level security apply) in the
 *     same transaction as a row of corpq.row_job_chunks, the one chunk table
 *     of every row job, recording the query rows done, the mark of the last
 *     one and the kind's counters (a jsonb object);
 *   - a cancel (or any error) keeps the committed chunks and loses only the
 *     rows collected since;
 *   - when the job starts (and starts again), its target's oid must still
 *     name the table it named at submission (args "target", "target_name"):
 *     else (dropped, renamed, a database restored from a dump taken while
 *     the job ran) it fails without writing;
 *   - after a crash or a restart the job runs again (the kind registers as
 *     restartable): it reads its last chunk, reads the query again, checks
 *     that the rows of the committed chunks hash as they did (else it fails:
 *     the query must return the same rows in the same order), skips them and
 *     goes on after them.  With skip_existing the query leaves out every id
 *     already in the target (an anti-join on target.id, which an index there
 *     serves), so the rows of committed chunks are left out too and the job
 *     simply runs the query again;
 *   - live progress (the phase, rows done of the total, rows/s, tokens/s,
 *     ETA) and the result's common members.
 *
 * The kind's part: compute each row's outputs so that they do not depend on
 * the rows they share a batch with (then a resumed job writes what an
 * uninterrupted one would), and count what its result reports.
 *
 * In the worker, the kind calls, in its job's memory context:
 *
 *   rj = corpq_row_job_begin(job, &kind, chunk_rows, skip_existing, arg);
 *   corpq_row_job_start(rj);    kind.setup (its model, the columns it writes:
 *                               corpq_row_job_columns), the cursor, the resume
 *   corpq_job_xact_begin(cxt);
 *   while (corpq_row_job_fetch(rj, n, fn, arg) > 0)   fn gets the rows
 *     { ... compute; corpq_row_job_put() each row in order;
 *       corpq_row_job_progress(rj, false); }
 *   corpq_row_job_finish(rj, kind_members);    the last chunk, the result
 *   corpq_job_xact_commit(cxt);
 *
 * corpq_row_job_put commits a full chunk and begins the next transaction:
 * nothing of the transaction (a fetched batch, an SPI tuple table) may be in
 * use when it is called.
 */
#ifndef CORPQ_JOBS_ROW_JOB_H
#define CORPQ_JOBS_ROW_JOB_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/jsonb.h"

#include "pg/base/corpus_query.h"
#include "pg/jobs/jobs.h"

/* Counters a kind may keep per chunk (CorpqRowJobKind.counters). */
#define CORPQ_ROW_JOB_MAX_COUNTERS 12

/*
 * A column of the target: its name and the type of the values the kind
 * writes.  A domain stands for its base type in the target's check; a kind
 * that writes arrays names a domain over the array type (corpq.real_vector
 * for real[]), since the chunk's values travel to the INSERT as one array per
 * column and PostgreSQL has no arrays of arrays, but has arrays of domains.
 */
typedef struct CorpqRowJobColumn
{
	const char *name;
	Oid			type;
	const char *type_name;		/* as messages name it: "double precision" */
	/*
	 * Also a column of a type the values cast to on assignment (a cast of
	 * pg_cast, as pgvector's from real[] to vector): the INSERT converts.
	 */
	bool		assign;
} CorpqRowJobColumn;

struct CorpqRowJob;

typedef struct CorpqRowJobKind
{
	const char *kind;			/* the job kind: "translate"; names the cursor */
	const CorpqQuerySpec *source;	/* the query: (id integer, text inputs...) */
	const char *target_example; /* a table name for hints: "my_translations" */

	const char *query_arg;		/* the SQL function's name for its query: "corpus" */

	/*
	 * The kind's counters: summed over the chunks, kept in each chunk's row
	 * of corpq.row_job_chunks (a jsonb object under these names) and
	 * reported in the result under their names; a counter named "tokens"
	 * also gives tokens_per_s.
	 */
	const char *const *counters;	/* NULL-ended */
	/* the kind's computing seconds so far (a chunk row's seconds) */
	double		(*seconds) (void *arg);

	/*
	 * In the job's first transaction (in the job's memory context): what the
	 * computation needs (a model), and the target's columns
	 * (corpq_row_job_columns).
	 */
	void		(*setup) (struct CorpqRowJob *rj, void *arg);

	const char *phase;			/* the progress phase while computing: "translating" */
	const char *unit;			/* what rows are: "sentences" (progress, "<unit>_per_s") */
	const char *done;			/* what a done row is: "translated" (messages) */
} CorpqRowJobKind;

typedef struct CorpqRowJob CorpqRowJob;

/* ---- submission: the kind's SQL function (model, query, target_table, options) ---- */

/* The SQL function's arguments. */
typedef struct CorpqRowJobCall
{
	char	   *model;			/* as the caller wrote it */
	char	   *query;
	Oid			target;
	Jsonb	   *options;		/* NULL: none given */
} CorpqRowJobCall;

/*
 * The opening of every row job's SQL function: ERROR (null_value_not_allowed)
 * for a NULL model, query (named kind->query_arg) or target_table; the
 * arguments into call.
 */
void		corpq_row_job_call(FunctionCallInfo fcinfo, const CorpqRowJobKind *kind,
							   CorpqRowJobCall *call);

/* What the kind resolved from the call for its job. */
typedef struct CorpqRowJobSubmit
{
	const char *model;			/* pinned: "name@N", as the job will use it; NULL: none */
	const char *more_args;		/* members of the job's arguments after "model", or NULL */
	const CorpqRowJobColumn *columns;	/* the target's: columns[0] is id bigint */
	int			n_columns;
	bool		skip_existing;
	/* the kind's own check of the target after the columns', or NULL */
	void		(*check_target) (Oid target, const char *target_name, void *arg);
	void	   *arg;
	const char *options_json;	/* the resolved options */
	int			threads;		/* the kind's threads option (pg/jobs/jobs.h) */
	/*
	 * The kind's "foreign_target" option: a target another role owns is
	 * intended (else refused: its triggers, rules and defaults, that role's
	 * code, would run with the job owner's rights).
	 */
	bool		foreign_target;
	/*
	 * The kind's "version_column" option, or NULL: a column of the target
	 * (an integer) that each row written gets the model's pinned version in
	 * (model "name@N": N); with skip_existing the job then leaves out the
	 * ids that have a row of this version, not those that have any row.
	 */
	const char *version_column;
} CorpqRowJobSubmit;

/*
 * Check the target (corpq_row_job_check_target, then s->check_target; a
 * table of the submitting role's unless s->foreign_target) and the query
 * (corpq_row_job_check_query), claim the target (one active row job per
 * table), and submit the job with the arguments {"model", more_args...,
 * "query", "target", "target_name", "target_code", "options"}
 * (corpq_job_submit: it starts when the transaction commits); target_code is
 * the code an insert into the target runs (base/table_check.h), which every
 * chunk checks again: a trigger, rule, policy, default or cast that appeared
 * since fails the job before the chunk is written.  Returns the job's id;
 * with skip_existing, when the query has no row whose id is not in the
 * target yet, submits nothing, says so in a NOTICE and returns 0 (the SQL
 * function returns NULL): a schedule's runs with nothing new leave no job
 * rows.
 */
int64		corpq_row_job_submit(const CorpqRowJobKind *kind, const CorpqRowJobCall *call,
								 const CorpqRowJobSubmit *s);

/*
 * At submission (and in the worker): ERROR unless relid is a table (or a
 * partitioned or foreign table) with the columns and types the kind writes,
 * into which the current role may insert them; returns its qualified, quoted
 * name.  Other columns of the table need defaults or accept NULL.
 */
char	   *corpq_row_job_check_target(const CorpqRowJobKind *kind, Oid relid,
									   const CorpqRowJobColumn *columns, int n);

/*
 * At submission: ERROR unless query passes the kind's spec (and, with
 * skip_existing, so does the query the job will run: the rows whose id is
 * not in target_name yet; with a version column, not yet with that version).
 */
void		corpq_row_job_check_query(const CorpqRowJobKind *kind, const char *query,
									  const char *target_name, bool skip_existing,
									  const char *version_column, int64 version);

/* ---- the job, in the worker ---- */

/*
 * In the worker, outside a transaction, in the job's context: the job's
 * arguments "query" (the user's SELECT), "target" (the table's oid) and
 * "target_name" (as it was at submission) read, nothing else done.  arg is
 * the kind's, for kind->seconds.
 */
CorpqRowJob *corpq_row_job_begin(CorpqJob *job, const CorpqRowJobKind *kind, int chunk_rows,
								 bool skip_existing, void *arg);

/* The target table's oid. */
Oid			corpq_row_job_target(const CorpqRowJob *rj);

/*
 * In kind->setup: the columns the job writes (columns[0] is id bigint),
 * checked again against the table.  Copied.
 */
void		corpq_row_job_columns(CorpqRowJob *rj, const CorpqRowJobColumn *columns, int n);

/*
 * Outside a transaction: in the job's first one, kind->setup, the last
 * committed chunk of this job (a run after a restart) and the query's cursor
 * (the query runs when it commits); in a second, the query's rows counted
 * and those of the committed chunks skipped, checking their hash.  Then the
 * clock of the computation starts and the progress is published.
 */
void		corpq_row_job_start(CorpqRowJob *rj);

/*
 * fn's view of a fetch: the batch (base/corpus_query.h) and each row's mark,
 * to be handed back with its output row.
 */
typedef void (*CorpqRowJobRowsFn) (void *arg, const CorpqBatch *b, const uint64 *marks);

/*
 * In a transaction: fetch up to n rows and call fn once with them; returns
 * how many (0 at the end).  ERROR for a NULL id.
 */
uint64		corpq_row_job_fetch(CorpqRowJob *rj, int n, CorpqRowJobRowsFn fn, void *arg);

/*
 * The context to allocate an output row's by-reference values in before
 * corpq_row_job_put (reset when its chunk commits).
 */
MemoryContext corpq_row_job_memory(CorpqRowJob *rj);

/*
 * In a transaction: the next output row, in the query's order: values[0]
 * the id (int8), then one value per further column (nulls as usual); mark
 * the row's (from fn); counts[k] added to the kind's counter k (NULL: none).
 * Commits the chunk when it is full (and begins the next transaction), so
 * call it in a memory context that outlives the transaction (the job's).
 */
void		corpq_row_job_put(CorpqRowJob *rj, const Datum *values, const bool *nulls,
							  uint64 mark, const int64 *counts);

/* Publish the progress (rate-limited unless force); processes interrupts. */
void		corpq_row_job_progress(CorpqRowJob *rj, bool force);

/* Seconds since corpq_row_job_resume: the computation's wall time. */
double		corpq_row_job_compute_seconds(const CorpqRowJob *rj);

/*
 * In the last transaction: write the last chunk, close the cursor and finish
 * the job with its result: "target", "rows", each counter, "chunks",
 * "seconds", "cpu_seconds", "<unit>_per_s", "tokens_per_s" (with a tokens
 * counter), "threads" (of the core's pool the computation ran on),
 * "attempts", "resumed_from_row", then kind_members (JSON members without
 * braces, or NULL).
 */
void		corpq_row_job_finish(CorpqRowJob *rj, const char *kind_members);

#endif
