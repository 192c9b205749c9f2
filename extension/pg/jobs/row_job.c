/*
 * Row jobs (row_job.h): a query's rows in, a table's rows out, in committed
 * chunks recorded in corpq.row_job_chunks, resumable, with progress; and
 * the one submission of every row job's SQL function.
 */
#include "postgres.h"

#include <math.h>
#include <sys/resource.h>

#include "catalog/namespace.h"
#include "catalog/pg_cast.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "common/parallel.h"
#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/base/table_check.h"
#include "pg/jobs/row_job.h"

/* The parameters of a chunk row before the counters: job, chunk, rows_done, rows_hash. */
#define CHUNK_FIXED 4

struct CorpqRowJob
{
	CorpqJob   *job;
	const CorpqRowJobKind *kind;
	void	   *arg;
	MemoryContext cxt;
	int			chunk_rows;
	bool		skip_existing;
	char	   *query;
	Oid			target;
	char	   *target_name;	/* quoted, qualified: its name when the job runs */
	char	   *target_code;	/* what an insert ran at submission, or NULL (table_check.h) */
	const char **column_names;	/* the columns written, for the code's check */
	Oid		   *value_types;	/* the base types of the values written */
	int			n_code_columns; /* n_columns, and the version column */
	char	   *version_column; /* the target's column for the model's version, or NULL */
	int64		model_version;	/* the pinned version the job computes with */
	int			n_counters;
	int			tokens;			/* the counter named "tokens", or -1 */

	/* the statements, built once */
	char	   *insert_sql;		/* into the target, as the owner */
	char	   *chunk_sql;		/* a chunk row, as corpq's owner */
	char	   *checkpoint_sql; /* the last chunk row, as the caller */

	/* the target's columns */
	int			n_columns;
	Oid		   *types;
	Oid		   *array_types;	/* the INSERT's parameters: an array per column */

	CorpqHeldQuery held;
	uint64		hash;			/* of the query rows fetched so far */
	int64		total;			/* rows of the query (skip_existing: done + left) */

	/* committed */
	int32		chunk;
	int64		rows_done;
	int64		done_counts[CORPQ_ROW_JOB_MAX_COUNTERS];
	uint64		hash_done;
	int64		resumed_from;	/* rows_done of the chunk resumed after, -1 none */

	/* the chunk being collected, in the query's order */
	MemoryContext chunk_cxt;
	int			n;
	int			cap;
	Datum	  **values;			/* [column][row] */
	bool	  **nulls;
	int64		chunk_counts[CORPQ_ROW_JOB_MAX_COUNTERS];
	uint64		chunk_hash;

	/* this attempt */
	int64		rows_put;
	int64		tokens_put;
	TimestampTz start;
	TimestampTz compute_start;
};

/* ---- the target table ---- */

static char *
columns_text(const CorpqRowJobColumn *columns, int n)
{
	StringInfoData b;

	initStringInfo(&b);
	for (int i = 0; i < n; i++)
		appendStringInfo(&b, "%s%s %s", i ? ", " : "", quote_identifier(columns[i].name),
						 columns[i].type_name);
	return b.data;
}

static void
wrong_target(const CorpqRowJobKind *kind, const char *name, const CorpqRowJobColumn *columns, int n)
{
	char	   *cols = columns_text(columns, n);

	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("target table %s must have the columns %s", name, cols),
			 errhint("CREATE TABLE %s (%s).", kind->target_example, cols)));
}

/* Whether a column of type have (a base type) takes the values of column c. */
static bool
column_takes(const CorpqRowJobColumn *c, Oid have)
{
	Oid			want = getBaseType(c->type);
	HeapTuple	tup;
	char		context;

	if (have == want)
		return true;
	if (!c->assign)
		return false;
	tup = SearchSysCache2(CASTSOURCETARGET, ObjectIdGetDatum(want), ObjectIdGetDatum(have));
	if (!HeapTupleIsValid(tup))
		return false;
	context = ((Form_pg_cast) GETSTRUCT(tup))->castcontext;
	ReleaseSysCache(tup);
	return context == COERCION_CODE_ASSIGNMENT || context == COERCION_CODE_IMPLICIT;
}

char *
corpq_row_job_check_target(const CorpqRowJobKind *kind, Oid relid,
						   const CorpqRowJobColumn *columns, int n)
{
	char		relkind = get_rel_relkind(relid);
	char	   *name;
	bool		may_insert;

	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the target table (oid %u) does not exist", relid),
				 errdetail("It was dropped after the job was submitted.")));
	name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE &&
		relkind != RELKIND_FOREIGN_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("target %s is not a table", name)));
	may_insert = pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) == ACLCHECK_OK;
	for (int i = 0; i < n; i++)
	{
		AttrNumber	att = get_attnum(relid, columns[i].name);

		if (att == InvalidAttrNumber || !column_takes(&columns[i], getBaseType(get_atttype(relid, att))))
			wrong_target(kind, name, columns, n);
		if (!may_insert &&
			pg_attribute_aclcheck(relid, att, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to insert into %s", name),
					 errdetail("The job writes its rows with the rights of role \"%s\".",
							   GetUserNameFromId(GetUserId(), false))));
	}
	return name;
}

/* ---- the query ---- */

/*
 * The query the job reads: the user's, or with skip_existing its rows whose
 * id is not in the target yet.  The user's text goes in on lines of its own
 * (a trailing -- comment ends there), without a trailing semicolon.
 */
static char *
source_query(const char *query, const char *target_name, bool skip_existing,
			 const char *version_column, int64 version)
{
	int			len = strlen(query);

	if (!skip_existing)
		return pstrdup(query);
	while (len > 0 && (query[len - 1] == ';' || isspace((unsigned char) query[len - 1])))
		len--;
	/* with a version column: the ids not yet computed with this version */
	return psprintf("SELECT q.* FROM (\n%.*s\n) AS q (corpq_row_id) WHERE NOT EXISTS "
					"(SELECT FROM %s t WHERE t.id OPERATOR(pg_catalog.=) q.corpq_row_id%s)",
					len, query, target_name,
					version_column == NULL ? ""
					: psprintf(" AND t.%s OPERATOR(pg_catalog.=) " INT64_FORMAT,
							   quote_identifier(version_column), version));
}

void
corpq_row_job_check_query(const CorpqRowJobKind *kind, const char *query,
						  const char *target_name, bool skip_existing,
						  const char *version_column, int64 version)
{
	(void) corpq_query_check(query, kind->source);
	if (skip_existing)
		(void) corpq_query_check(source_query(query, target_name, true, version_column, version),
								 kind->source);
}

/* ---- submission ---- */

/*
 * Whether the query, with skip_existing (the rows whose id is not in the
 * target yet), has a row: its first row read at once, in the caller's
 * transaction, with the caller's rights and search_path, as the job would.
 */
static bool
query_has_rows(const char *query, const char *target_name, const char *version_column,
			   int64 version)
{
	bool		found;

	SPI_connect();
	if (SPI_execute(psprintf("SELECT 1 FROM (\n%s\n) AS corpq_rows LIMIT 1",
							 source_query(query, target_name, true, version_column, version)),
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not run the query of the job");
	found = SPI_processed > 0;
	SPI_finish();
	return found;
}

/*
 * The advisory lock tag of a row job's target: held from a submission to the
 * end of its transaction, so that a second submission on the same table
 * waits until the first job's row is committed (or gone) and then sees it.
 * Field4 4 is a value no SQL function takes (pg_advisory_lock uses 1 and 2;
 * jobs.c's submission lock uses 3), so no role can hold it to block others.
 */
#define TARGET_LOCK_KEY 0x63727071	/* "crpq" */
#define TARGET_LOCK_FIELD4 4

/*
 * One active row job per target: ERROR when a queued or running row job of
 * any role (not one whose worker died) writes into relid, including one
 * submitted earlier in this transaction.  Two jobs on one table would
 * collide (skip_existing reads the table before the other job writes it:
 * rows written twice, or a duplicate-key error).  A job's target is its oid
 * and its name, both as at submission: a job whose oid names another table
 * now (a database restored from a dump) writes nothing there and does not
 * count.
 */
static void
claim_target(const CorpqRowJobKind *kind, Oid relid, const char *target_name)
{
	LOCKTAG		tag;
	Oid			argtypes[5] = {INT8ARRAYOID, INT4ARRAYOID, TEXTOID, TEXTOID, OIDOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	int64		other;
	char	   *other_kind;
	bool		visible;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, TARGET_LOCK_KEY, relid, TARGET_LOCK_FIELD4);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);

	SPI_connect();
	if (!corpq_jobs_dead_workers(&values[0], &values[1]))
		nulls[0] = nulls[1] = 'n';
	values[2] = CStringGetTextDatum(psprintf("%u", relid));
	values[3] = CStringGetTextDatum(target_name);
	values[4] = ObjectIdGetDatum(GetUserId());
	/* every role's jobs, with the latest snapshot: one committed while we waited counts */
	if (corpq_sql_as_owner_latest(psprintf("SELECT j.id, j.kind, pg_catalog.pg_has_role($5, j.owner, 'MEMBER') "
										   "FROM corpq.jobs j "
										   "WHERE j.state OPERATOR(pg_catalog.=) ANY ('{" CORPQ_JOB_QUEUED_NAME "," CORPQ_JOB_RUNNING_NAME "}'::pg_catalog.text[]) "
										   "AND j.args OPERATOR(pg_catalog.->>) 'target' OPERATOR(pg_catalog.=) $3 "
										   "AND j.args OPERATOR(pg_catalog.->>) 'target_name' OPERATOR(pg_catalog.=) $4 "
										   "AND NOT COALESCE((%s), false) ORDER BY j.id LIMIT 1",
										   corpq_jobs_orphaned_sql(!corpq_jobs_preloaded)),
								  5, argtypes, values, nulls, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.jobs");
	if (SPI_processed == 0)
	{
		SPI_finish();
		return;
	}
	other = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	other_kind = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	visible = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	SPI_finish();
	if (visible)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("table %s is already the target of a queued or running corpq job", target_name),
				 errdetail("Job " INT64_FORMAT " (%s) writes into it; one row job at a time writes into a table, since two would write the same rows twice.",
						   other, other_kind),
				 errhint("Wait for it (corpq.job_wait(" INT64_FORMAT ")) or cancel it (corpq.job_cancel(" INT64_FORMAT ")), then submit the %s job again.",
						 other, other, kind->kind)));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 errmsg("table %s is already the target of a queued or running corpq job", target_name),
			 errdetail("A job of another role writes into it; one row job at a time writes into a table, since two would write the same rows twice."),
			 errhint("Submit the %s job again when that job has ended.", kind->kind)));
}

void
corpq_row_job_call(FunctionCallInfo fcinfo, const CorpqRowJobKind *kind, CorpqRowJobCall *call)
{
	corpq_require_arg(fcinfo, 0, "model");
	corpq_require_arg(fcinfo, 1, kind->query_arg);
	corpq_require_arg(fcinfo, 2, "target_table");
	call->model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	call->query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	call->target = PG_GETARG_OID(2);
	call->options = PG_NARGS() > 3 && !PG_ARGISNULL(3) ? PG_GETARG_JSONB_P(3) : NULL;
}

/* The code an insert of the columns into relid runs (base/table_check.h). */
static char *
target_code(Oid relid, const CorpqRowJobColumn *columns, int n)
{
	const char **names = palloc(sizeof(char *) * n);
	Oid		   *types = palloc(sizeof(Oid) * n);

	for (int i = 0; i < n; i++)
	{
		names[i] = columns[i].name;
		types[i] = getBaseType(columns[i].type);
	}
	return corpq_table_code(relid, names, types, n);
}

/*
 * At submission: unless foreign, a target of the submitting role's (the
 * pipelines' owner check, base/table_check.h); returns the code an insert
 * into it runs now.
 */
static char *
check_target_owner(const CorpqRowJobKind *kind, Oid relid, const char *target_name,
				   const CorpqRowJobSubmit *s)
{
	const char *why;
	char	   *code;
	MemoryContext cxt = CurrentMemoryContext;

	SPI_connect();
	why = s->foreign_target ? NULL : corpq_table_refusal(relid, GetUserId(), CORPQ_TABLE_OWNED);
	if (why)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s job will not write table %s: %s", kind->kind, target_name, why),
				 errdetail("Its triggers, rules, policies and defaults, that role's code, would run with the rights of role \"%s\", which the job writes with.",
						   GetUserNameFromId(GetUserId(), false)),
				 errhint("Write into a table of your own, or give the option \"foreign_target\": true if writing into this one is intended.")));
	code = target_code(relid, s->columns, s->n_columns);
	code = MemoryContextStrdup(cxt, code);
	SPI_finish();
	return code;
}

/*
 * The kind's columns and, with a version column, that column (an integer
 * column: the pinned version goes in as an integer, cast on assignment).
 */
static CorpqRowJobColumn *
with_version(const CorpqRowJobColumn *columns, int n, const char *version_column, int *n_out)
{
	CorpqRowJobColumn *c = palloc0(sizeof(CorpqRowJobColumn) * (n + 1));

	memcpy(c, columns, sizeof(CorpqRowJobColumn) * n);
	*n_out = n;
	if (version_column)
	{
		c[n].name = version_column;
		c[n].type = INT4OID;
		c[n].type_name = "integer";
		c[n].assign = true;
		*n_out = n + 1;
	}
	return c;
}

/* The version of a pinned model name, "name@N". */
static int64
pinned_version(const char *model)
{
	const char *at = strrchr(model, '@');

	if (at == NULL)
		elog(ERROR, "model \"%s\" is not pinned to a version", model);
	return strtoll(at + 1, NULL, 10);
}

int64
corpq_row_job_submit(const CorpqRowJobKind *kind, const CorpqRowJobCall *call,
					 const CorpqRowJobSubmit *s)
{
	int			n;
	CorpqRowJobColumn *columns = with_version(s->columns, s->n_columns, s->version_column, &n);
	int64		version = s->version_column ? pinned_version(s->model) : 0;
	char	   *target_name;
	char	   *code;
	StringInfoData args;
	CorpqRowJobSubmit sv = *s;

	for (int i = 0; s->version_column && i < s->n_columns; i++)
		if (strcmp(s->columns[i].name, s->version_column) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the version column \"%s\" is one of the columns the %s job writes its results into",
							s->version_column, kind->kind),
					 errhint("Name another column of the target, as \"model_version\".")));
	target_name = corpq_row_job_check_target(kind, call->target, columns, n);
	if (s->check_target)
		s->check_target(call->target, target_name, s->arg);
	sv.columns = columns;
	sv.n_columns = n;
	code = check_target_owner(kind, call->target, target_name, &sv);
	corpq_row_job_check_query(kind, call->query, target_name, s->skip_existing,
							  s->version_column, version);
	if (s->skip_existing && !query_has_rows(call->query, target_name, s->version_column, version))
	{
		ereport(NOTICE,
				(errmsg("nothing to do: every id of the %s query is in table %s already",
						kind->source->what, target_name),
				 errdetail("With skip_existing a job that would write no row is not submitted; the call returns NULL.")));
		return 0;
	}
	claim_target(kind, call->target, target_name);

	initStringInfo(&args);
	appendStringInfoString(&args, "{\"model\": ");
	if (s->model)
		escape_json(&args, s->model);
	else
		appendStringInfoString(&args, "null");	/* a kind without a model (curate) */
	if (s->more_args)
		appendStringInfo(&args, ", %s", s->more_args);
	appendStringInfoString(&args, ", \"query\": ");
	escape_json(&args, call->query);
	appendStringInfo(&args, ", \"target\": %u, \"target_name\": ", call->target);
	escape_json(&args, target_name);
	appendStringInfoString(&args, ", \"target_code\": ");
	escape_json(&args, code);
	if (s->version_column)
	{
		appendStringInfoString(&args, ", \"version_column\": ");
		escape_json(&args, s->version_column);
		appendStringInfo(&args, ", \"model_version\": " INT64_FORMAT, version);
	}
	appendStringInfo(&args, ", \"options\": %s}", s->options_json);
	return corpq_job_submit(kind->kind, args.data, s->threads);
}

/* ---- set-up ---- */

static int
count_counters(const CorpqRowJobKind *kind, int *tokens)
{
	int			n = 0;

	*tokens = -1;
	for (; kind->counters && kind->counters[n]; n++)
		if (strcmp(kind->counters[n], "tokens") == 0)
			*tokens = n;
	Assert(n <= CORPQ_ROW_JOB_MAX_COUNTERS);
	return n;
}

/*
 * The statements of the job's chunk rows in corpq.row_job_chunks: the
 * kind's counters as a jsonb object under their names (the kind's
 * constants).
 */
static void
chunk_statements(CorpqRowJob *rj)
{
	const CorpqRowJobKind *k = rj->kind;
	StringInfoData object,
				cols;

	initStringInfo(&object);
	initStringInfo(&cols);
	for (int c = 0; c < rj->n_counters; c++)
	{
		const char *name = quote_literal_cstr(k->counters[c]);

		appendStringInfo(&object, "%s%s, $%d", c ? ", " : "", name, CHUNK_FIXED + 1 + c);
		appendStringInfo(&cols, ", (counters OPERATOR(pg_catalog.->>) %s)::pg_catalog.int8", name);
	}
	rj->chunk_sql = psprintf("INSERT INTO corpq.row_job_chunks "
							 "(job, chunk, rows_done, rows_hash, counters, seconds, owner) "
							 "SELECT $1, $2, $3, $4, pg_catalog.jsonb_build_object(%s), $%d, j.owner "
							 "FROM corpq.jobs j WHERE j.id OPERATOR(pg_catalog.=) $1",
							 object.data, CHUNK_FIXED + rj->n_counters + 1);
	rj->checkpoint_sql = psprintf("SELECT chunk, rows_done, rows_hash%s FROM corpq.row_job_chunks "
								  "WHERE job OPERATOR(pg_catalog.=) $1 ORDER BY chunk DESC LIMIT 1",
								  cols.data);
}

CorpqRowJob *
corpq_row_job_begin(CorpqJob *job, const CorpqRowJobKind *kind, int chunk_rows,
					bool skip_existing, void *arg)
{
	CorpqRowJob *rj = palloc0(sizeof(CorpqRowJob));

	rj->job = job;
	rj->kind = kind;
	rj->arg = arg;
	rj->cxt = CurrentMemoryContext;
	rj->chunk_rows = chunk_rows;
	rj->skip_existing = skip_existing;
	rj->start = GetCurrentTimestamp();
	rj->chunk_cxt = AllocSetContextCreate(rj->cxt, "corpq row job chunk", ALLOCSET_DEFAULT_SIZES);
	rj->query = corpq_job_arg(job, "query");
	rj->target = (Oid) strtoul(corpq_job_arg(job, "target"), NULL, 10);
	/* a job submitted before corpq checked it has none */
	rj->target_code = corpq_job_arg(job, "target_code");
	rj->version_column = corpq_job_arg(job, "version_column");
	if (rj->version_column)
		rj->model_version = strtoll(corpq_job_arg(job, "model_version"), NULL, 10);
	rj->n_counters = count_counters(kind, &rj->tokens);
	rj->resumed_from = -1;
	chunk_statements(rj);
	corpq_job_progress(job, "reading", 0, 0, "rows", NULL, true);
	return rj;
}

Oid
corpq_row_job_target(const CorpqRowJob *rj)
{
	return rj->target;
}

/*
 * When the job (re)starts: the target is its oid and its name as at
 * submission, and both must still agree.  A dump restored while the job ran
 * gives the table a new oid (the restored job's oid names another table or
 * none); a table dropped and created again has a new one too; a renamed
 * table keeps its oid under another name.  In each case the job fails
 * rather than write into whatever the oid names now.
 */
static void
check_target_identity(CorpqRowJob *rj)
{
	const char *was = corpq_job_arg(rj->job, "target_name");
	char	   *now;

	if (get_rel_relkind(rj->target) == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the target table %s (oid %u at submission) no longer exists under that oid",
						was, rj->target),
				 errdetail("It was dropped after the job was submitted, or this database was restored from a dump taken while the job ran (a restore gives every table a new oid)."),
				 errhint("Submit the job again%s.",
						 rj->skip_existing ? "; with skip_existing it takes only the rows still missing" : "")));
	now = quote_qualified_identifier(get_namespace_name(get_rel_namespace(rj->target)),
									 get_rel_name(rj->target));
	if (strcmp(now, was) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the target table of the job was %s (oid %u) at submission; that oid now names %s",
						was, rj->target, now),
				 errdetail("The table was renamed, or this database was restored from a dump taken while the job ran and the oid now belongs to another table; the job writes into neither."),
				 errhint("Submit the job again on the table you mean%s.",
						 rj->skip_existing ? "; with skip_existing it takes only the rows still missing" : "")));
}

void
corpq_row_job_columns(CorpqRowJob *rj, const CorpqRowJobColumn *columns, int n)
{
	MemoryContext old = MemoryContextSwitchTo(rj->cxt);
	char	   *name;
	StringInfoData cols,
				args,
				names,
				select;
	int			n_all;
	CorpqRowJobColumn *all = with_version(columns, n, rj->version_column, &n_all);

	check_target_identity(rj);
	name = corpq_row_job_check_target(rj->kind, rj->target, all, n_all);

	initStringInfo(&cols);
	initStringInfo(&args);
	initStringInfo(&names);
	initStringInfo(&select);
	rj->n_columns = n;
	rj->types = palloc(sizeof(Oid) * n);
	rj->array_types = palloc(sizeof(Oid) * n);
	rj->values = palloc0(sizeof(Datum *) * n);
	rj->nulls = palloc0(sizeof(bool *) * n);
	rj->n_code_columns = n_all;
	rj->column_names = palloc(sizeof(char *) * n_all);
	rj->value_types = palloc(sizeof(Oid) * n_all);
	for (int c = 0; c < n_all; c++)
	{
		rj->column_names[c] = pstrdup(all[c].name);
		rj->value_types[c] = getBaseType(all[c].type);
	}
	for (int c = 0; c < n; c++)
	{
		rj->types[c] = columns[c].type;
		rj->array_types[c] = get_array_type(columns[c].type);
		if (!OidIsValid(rj->array_types[c]))
			elog(ERROR, "a row job cannot write values of type %s (it has no array type)",
				 format_type_be(columns[c].type));
		appendStringInfo(&cols, "%s%s", c ? ", " : "", quote_identifier(columns[c].name));
		appendStringInfo(&args, "%spg_catalog.unnest($%d)", c ? ", " : "", c + 1);
		appendStringInfo(&names, "%sc%d", c ? ", " : "", c);
		/* a domain's values go in as its base type's, as a user's INSERT of them would */
		appendStringInfo(&select, "%sc%d", c ? ", " : "", c);
		if (getBaseType(columns[c].type) != columns[c].type)
			appendStringInfo(&select, "::%s", format_type_be_qualified(getBaseType(columns[c].type)));
	}
	/* the version: the same for every row, a constant of the statement */
	if (rj->version_column)
	{
		appendStringInfo(&cols, ", %s", quote_identifier(rj->version_column));
		appendStringInfo(&select, ", " INT64_FORMAT, rj->model_version);
	}
	rj->target_name = name;
	rj->insert_sql = psprintf("INSERT INTO %s (%s) SELECT %s FROM ROWS FROM (%s) AS u(%s)",
							  name, cols.data, select.data, args.data, names.data);
	MemoryContextSwitchTo(old);
}

/* The last committed chunk of this job, if any (a run after a restart). */
static void
read_checkpoint(CorpqRowJob *rj)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(rj->job->id)};
	bool		isnull;

	if (corpq_sql_as_caller(rj->checkpoint_sql, 1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.row_job_chunks");
	if (SPI_processed == 0)
		return;
#define COL(i) SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, (i), &isnull)
	rj->chunk = DatumGetInt32(COL(1));
	rj->rows_done = DatumGetInt64(COL(2));
	rj->hash_done = (uint64) DatumGetInt64(COL(3));
	for (int c = 0; c < rj->n_counters; c++)
		rj->done_counts[c] = DatumGetInt64(COL(4 + c));
#undef COL
	rj->resumed_from = rj->rows_done;
}

/* The kind's set-up, the last chunk, the cursor: the job's first transaction. */
static void
hold(CorpqRowJob *rj)
{
	corpq_job_xact_begin(rj->cxt);
	MemoryContextSwitchTo(rj->cxt);
	rj->kind->setup(rj, rj->arg);
	MemoryContextSwitchTo(rj->cxt);
	if (rj->insert_sql == NULL)
		elog(ERROR, "row job kind \"%s\" named no target columns", rj->kind->kind);
	read_checkpoint(rj);
	corpq_query_hold(source_query(rj->query, rj->target_name, rj->skip_existing,
								  rj->version_column, rj->model_version),
					 rj->kind->source, psprintf("corpq_%s_job", rj->kind->kind), &rj->held);
	corpq_job_xact_commit(rj->cxt);
}

/* ---- reading: row marks, resume ---- */

/* h extended with column col (of type type) of row i. */
static uint64
hash_value(uint64 h, const CorpqBatch *b, uint64 i, int col, CorpqColumnType type)
{
	const char *s;
	int			len;
	int64		v;
	double		x;

	switch (type)
	{
		case CORPQ_COLUMN_INTEGER:
			if (!corpq_batch_int64(b, i, col, &v))
				break;
			return hash_combine64(h, (uint64) v);
		case CORPQ_COLUMN_NUMBER:
			if (!corpq_batch_float8(b, i, col, &x))
				break;
			return hash_combine64(h, hash_bytes_extended((const unsigned char *) &x, sizeof(x), 0));
		case CORPQ_COLUMN_NAMED:
			elog(ERROR, "a row job cannot read a column of type %s", format_type_be(b->base_types[col - 1]));
			break;
		case CORPQ_COLUMN_TEXT:
			if (!corpq_batch_text(b, i, col, &s, &len))
				break;
			return hash_combine64(h, hash_bytes_extended((const unsigned char *) s, len, 0));
	}
	return hash_combine64(h, UINT64CONST(0x6e756c6c));	/* "null" */
}

/* h extended with row i: its id (never NULL), then its inputs. */
static uint64
hash_row(CorpqRowJob *rj, uint64 h, const CorpqBatch *b, uint64 i)
{
	int64		id;

	if (!corpq_batch_int64(b, i, 1, &id))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s query returned a NULL id in row " UINT64_FORMAT,
						rj->kind->source->what, b->first + i + 1),
				 errhint("The id keys the row's result; filter NULL ids out.")));
	h = hash_combine64(h, (uint64) id);
	for (int col = 2; col <= b->n_columns; col++)
		h = hash_value(h, b, i, col, rj->kind->source->columns[col - 1].type);
	return h;
}

/* Rows skipped on resume: only hashed. */
static void
hash_rows(void *arg, const CorpqBatch *b)
{
	CorpqRowJob *rj = arg;

	for (uint64 i = 0; i < b->n; i++)
		rj->hash = hash_row(rj, rj->hash, b, i);
}

/* Skip the rows of the committed chunks, checking they are the same rows. */
static void
skip_done(CorpqRowJob *rj)
{
	uint64		left = rj->rows_done;
	const char *what = rj->kind->source->what;

	if (rj->rows_done > rj->total)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the %s query returned " INT64_FORMAT " rows, but " INT64_FORMAT
						" were already %s before the restart", what, rj->total, rj->rows_done,
						rj->kind->done),
				 errhint("A job resumes only over the same rows: keep the %s table unchanged while the job runs.",
						 what)));
	while (left > 0)
	{
		uint64		got = corpq_query_held_fetch(&rj->held, (int) Min(left, 10000), hash_rows, rj);

		Assert(got > 0);
		left -= got;
	}
	if (rj->hash != rj->hash_done)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the %s query returned other rows than before the restart", what),
				 errdetail("Its first " INT64_FORMAT " rows, already %s, differ from those of the first run.",
						   rj->rows_done, rj->kind->done),
				 errhint("A job resumes only over the same rows in the same order: give the query an ORDER BY on a unique key.")));
}

void
corpq_row_job_start(CorpqRowJob *rj)
{
	hold(rj);
	corpq_job_xact_begin(rj->cxt);
	rj->total = (int64) corpq_query_held_count(&rj->held);
	/* the anti-join left the committed rows out: nothing to skip */
	if (rj->skip_existing)
	{
		rj->total += rj->rows_done;
		rj->hash = rj->hash_done;
	}
	else
		skip_done(rj);
	corpq_job_xact_commit(rj->cxt);
	rj->compute_start = GetCurrentTimestamp();
	corpq_row_job_progress(rj, true);
}

typedef struct FetchCall
{
	CorpqRowJob *rj;
	CorpqRowJobRowsFn fn;
	void	   *arg;
} FetchCall;

static void
mark_rows(void *arg, const CorpqBatch *b)
{
	FetchCall  *f = arg;
	uint64	   *marks = palloc(sizeof(uint64) * b->n);

	for (uint64 i = 0; i < b->n; i++)
		marks[i] = f->rj->hash = hash_row(f->rj, f->rj->hash, b, i);
	f->fn(f->arg, b, marks);
}

uint64
corpq_row_job_fetch(CorpqRowJob *rj, int n, CorpqRowJobRowsFn fn, void *arg)
{
	FetchCall	f = {rj, fn, arg};

	return corpq_query_held_fetch(&rj->held, n, mark_rows, &f);
}

/* ---- writing ---- */

MemoryContext
corpq_row_job_memory(CorpqRowJob *rj)
{
	return rj->chunk_cxt;
}

static Datum
array_of(Datum *v, bool *nulls, int n, Oid type)
{
	int			dims[1] = {n};
	int			lbs[1] = {1};
	int16		typlen;
	bool		byval;
	char		align;

	get_typlenbyvalalign(type, &typlen, &byval, &align);
	return PointerGetDatum(construct_md_array(v, nulls, 1, dims, lbs, type, typlen, byval, align));
}

/* The chunk's row of corpq.row_job_chunks (as corpq's owner). */
static void
insert_chunk_row(CorpqRowJob *rj)
{
	int			nargs = CHUNK_FIXED + rj->n_counters + 1;
	Oid		   *types = palloc(sizeof(Oid) * nargs);
	Datum	   *values = palloc(sizeof(Datum) * nargs);

	types[0] = INT8OID;
	types[1] = INT4OID;
	types[2] = INT8OID;
	types[3] = INT8OID;
	values[0] = Int64GetDatum(rj->job->id);
	values[1] = Int32GetDatum(rj->chunk);
	values[2] = Int64GetDatum(rj->rows_done);
	values[3] = Int64GetDatum((int64) rj->hash_done);
	for (int c = 0; c < rj->n_counters; c++)
	{
		types[CHUNK_FIXED + c] = INT8OID;
		values[CHUNK_FIXED + c] = Int64GetDatum(rj->done_counts[c]);
	}
	types[nargs - 1] = FLOAT8OID;
	values[nargs - 1] = Float8GetDatum(rj->kind->seconds(rj->arg));
	if (corpq_sql_as_owner(rj->chunk_sql, nargs, types, values, NULL, 0) != SPI_OK_INSERT ||
		SPI_processed != 1)
		elog(ERROR, "could not insert into corpq.row_job_chunks");
}

/*
 * In a transaction with SPI connected: the collected rows into the target
 * table (the owner's rights, the statement built from the table's catalog
 * name), and the chunk's row into corpq's catalog.
 */
/*
 * Before each chunk: no code appeared on the target since submission that an
 * insert would run with the job owner's rights (a trigger, rule, policy or
 * default added, a trigger function or a cast replaced, a domain constraint
 * added: base/table_check.h).  What was there at submission was accepted
 * then (a table of the owner's, or "foreign_target").
 */
static void
check_target_code(CorpqRowJob *rj)
{
	char	   *now,
			   *added;

	if (rj->target_code == NULL)
		return;
	now = corpq_table_code(rj->target, rj->column_names, rj->value_types, rj->n_code_columns);
	added = corpq_table_code_added(rj->target_code, now);
	if (added)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the target table %s changed since the job was submitted", rj->target_name),
				 errdetail("New since then: %s.", added),
				 errhint("A row job writes with its owner's rights, so it stops before code that appeared on its target would run with them; submit the job again if the change is intended.")));
	pfree(now);
}

static void
write_chunk(CorpqRowJob *rj)
{
	Datum	   *arrays = palloc(sizeof(Datum) * rj->n_columns);

	check_target_code(rj);

	for (int c = 0; c < rj->n_columns; c++)
		arrays[c] = array_of(rj->values[c], rj->nulls[c], rj->n, rj->types[c]);
	if (SPI_execute_with_args(rj->insert_sql, rj->n_columns, rj->array_types, arrays, NULL, false, 0)
		!= SPI_OK_INSERT)
		elog(ERROR, "could not insert into the target table");

	rj->chunk++;
	rj->rows_done += rj->n;
	for (int c = 0; c < rj->n_counters; c++)
		rj->done_counts[c] += rj->chunk_counts[c];
	rj->hash_done = rj->chunk_hash;
	insert_chunk_row(rj);

	MemoryContextReset(rj->chunk_cxt);
	rj->n = rj->cap = 0;
	memset(rj->values, 0, sizeof(Datum *) * rj->n_columns);
	memset(rj->nulls, 0, sizeof(bool *) * rj->n_columns);
	memset(rj->chunk_counts, 0, sizeof(rj->chunk_counts));
}

/* Room for one more row in the chunk's arrays. */
static void
grow(CorpqRowJob *rj)
{
	MemoryContext old = MemoryContextSwitchTo(rj->chunk_cxt);

	rj->cap = rj->cap ? 2 * rj->cap : 256;
	for (int c = 0; c < rj->n_columns; c++)
	{
		rj->values[c] = rj->values[c] ? repalloc(rj->values[c], sizeof(Datum) * rj->cap)
			: palloc(sizeof(Datum) * rj->cap);
		rj->nulls[c] = rj->nulls[c] ? repalloc(rj->nulls[c], sizeof(bool) * rj->cap)
			: palloc(sizeof(bool) * rj->cap);
	}
	MemoryContextSwitchTo(old);
}

void
corpq_row_job_put(CorpqRowJob *rj, const Datum *values, const bool *nulls, uint64 mark,
				  const int64 *counts)
{
	if (rj->n == rj->cap)
		grow(rj);
	for (int c = 0; c < rj->n_columns; c++)
	{
		rj->values[c][rj->n] = values[c];
		rj->nulls[c][rj->n] = nulls != NULL && nulls[c];
	}
	for (int c = 0; counts && c < rj->n_counters; c++)
		rj->chunk_counts[c] += counts[c];
	if (counts && rj->tokens >= 0)
		rj->tokens_put += counts[rj->tokens];
	rj->chunk_hash = mark;
	rj->rows_put++;
	rj->n++;
	/* commit the chunk, go on in a new transaction */
	if (rj->n == rj->chunk_rows)
	{
		MemoryContext old = CurrentMemoryContext;

		write_chunk(rj);
		corpq_job_xact_commit(rj->cxt);
		corpq_job_xact_begin(rj->cxt);
		MemoryContextSwitchTo(old);
		/* at once, so that job_progress never lags the committed chunks */
		corpq_row_job_progress(rj, true);
	}
}

/* ---- progress and result ---- */

static char *
num(double x)
{
	return isfinite(x) ? psprintf("%.6g", x) : pstrdup("null");
}

static double
seconds_since(TimestampTz t)
{
	return (double) (GetCurrentTimestamp() - t) / USECS_PER_SEC;
}

double
corpq_row_job_compute_seconds(const CorpqRowJob *rj)
{
	return seconds_since(rj->compute_start);
}

void
corpq_row_job_progress(CorpqRowJob *rj, bool force)
{
	double		s = seconds_since(rj->compute_start);
	double		rate = s > 0 ? rj->rows_put / s : 0;
	int64		done = rj->rows_done + rj->n;
	StringInfoData f;

	initStringInfo(&f);
	appendStringInfo(&f, "{\"%s_per_s\": %s", rj->kind->unit, num(rate));
	if (rj->tokens >= 0)
		appendStringInfo(&f, ", \"tokens_per_s\": %s", num(s > 0 ? rj->tokens_put / s : 0));
	appendStringInfo(&f, ", \"chunks\": %d, \"committed_rows\": " INT64_FORMAT ", \"eta_s\": %s}",
					 rj->chunk, rj->rows_done, num(rate > 0 ? (rj->total - done) / rate : NAN));
	corpq_job_progress(rj->job, rj->kind->phase, (double) done, (double) rj->total,
					   rj->kind->unit, f.data, force);
	pfree(f.data);
}

/* CPU seconds of this worker process so far (the job is all it runs). */
static double
cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static char *
result_json(CorpqRowJob *rj, const char *kind_members)
{
	double		compute_s = seconds_since(rj->compute_start);
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "{\"target\": ");
	escape_json(&b, corpq_job_arg(rj->job, "target_name"));
	appendStringInfo(&b, ", \"rows\": " INT64_FORMAT, rj->rows_done);
	for (int c = 0; c < rj->n_counters; c++)
		appendStringInfo(&b, ", \"%s\": " INT64_FORMAT, rj->kind->counters[c], rj->done_counts[c]);
	appendStringInfo(&b, ", \"chunks\": %d, \"seconds\": %.3f, \"cpu_seconds\": %.3f"
					 ", \"%s_per_s\": %s",
					 rj->chunk, seconds_since(rj->start), cpu_seconds(),
					 rj->kind->unit, num(rj->rows_put / compute_s));
	if (rj->tokens >= 0)
		appendStringInfo(&b, ", \"tokens_per_s\": %s", num(rj->tokens_put / compute_s));
	appendStringInfo(&b, ", \"threads\": %d, \"attempts\": %d, \"resumed_from_row\": %s",
					 cq_parallel_threads(), rj->job->attempts,
					 rj->resumed_from >= 0 ? psprintf(INT64_FORMAT, rj->resumed_from) : "null");
	if (rj->version_column)
	{
		appendStringInfoString(&b, ", \"version_column\": ");
		escape_json(&b, rj->version_column);
		appendStringInfo(&b, ", \"model_version\": " INT64_FORMAT, rj->model_version);
	}
	if (kind_members)
		appendStringInfo(&b, ", %s", kind_members);
	appendStringInfoChar(&b, '}');
	return b.data;
}

void
corpq_row_job_finish(CorpqRowJob *rj, const char *kind_members)
{
	if (rj->n > 0)
		write_chunk(rj);
	corpq_query_held_close(&rj->held);
	corpq_job_finish(rj->job, result_json(rj, kind_members));
}
