/*
 * Checking and streaming user corpus queries (see corpus_query.h).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"

#include "pg/base/corpus_query.h"

/* ---- what the spec expects, in words ---- */

static const char *
count_word(int n)
{
	static const char *const words[] = {"no", "one", "two", "three", "four", "five"};

	return n >= 0 && n < lengthof(words) ? words[n] : psprintf("%d", n);
}

static const char *
type_name(const CorpqColumn *c)
{
	switch (c->type)
	{
		case CORPQ_COLUMN_TEXT:
			return "text";
		case CORPQ_COLUMN_INTEGER:
			return "bigint";
		case CORPQ_COLUMN_NUMBER:
			return "double precision";
		default:
			return c->type_name;
	}
}

/* "two text columns (src, tgt)", "three columns (id bigint, src text, tgt text)" */
static char *
expected_columns(const CorpqQuerySpec *spec)
{
	StringInfoData b;
	bool		one_type = true;
	bool		named = false;

	for (int i = 0; i < spec->max_columns; i++)
	{
		one_type &= strcmp(type_name(&spec->columns[i]), type_name(&spec->columns[0])) == 0;
		named |= spec->columns[i].name != NULL;
	}
	initStringInfo(&b);
	appendStringInfoString(&b, count_word(spec->min_columns));
	if (spec->max_columns > spec->min_columns)
		appendStringInfo(&b, " %s %s",
						 spec->max_columns == spec->min_columns + 1 ? "or" : "to",
						 count_word(spec->max_columns));
	if (one_type)
		appendStringInfo(&b, " %s", type_name(&spec->columns[0]));
	appendStringInfoString(&b, spec->max_columns == 1 ? " column" : " columns");
	if (!named && one_type)
		return b.data;
	appendStringInfoString(&b, " (");
	for (int i = 0; i < spec->max_columns; i++)
	{
		const CorpqColumn *c = &spec->columns[i];

		appendStringInfoString(&b, i == 0 ? "" : i < spec->min_columns ? ", " : "[, ");
		appendStringInfoString(&b, c->name ? c->name : "?");
		if (!one_type)
			appendStringInfo(&b, " %s", type_name(c));
	}
	for (int i = Max(spec->min_columns, 1); i < spec->max_columns; i++)
		appendStringInfoChar(&b, ']');
	appendStringInfoChar(&b, ')');
	return b.data;
}

/* ---- the checks ---- */

static void
not_a_select(const CorpqQuerySpec *spec)
{
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("%s query must be a single SELECT", spec->what),
			 errhint("Pass a query such as '%s'.", spec->example)));
}

/* One statement, a SELECT that modifies and locks nothing. */
static CachedPlanSource *
check_select(SPIPlanPtr plan, const CorpqQuerySpec *spec)
{
	List	   *sources = SPI_plan_get_plan_sources(plan);
	CachedPlanSource *ps;
	ListCell   *lc;

	if (list_length(sources) != 1)
		not_a_select(spec);
	ps = linitial(sources);
	/* SELECT INTO is a utility statement with another tag and no result */
	if (ps->commandTag != CMDTAG_SELECT || ps->resultDesc == NULL)
		not_a_select(spec);
	foreach(lc, ps->query_list)
	{
		Query	   *q = lfirst_node(Query, lc);

		if (q->commandType != CMD_SELECT || q->utilityStmt != NULL ||
			q->hasModifyingCTE || q->rowMarks != NIL)
			not_a_select(spec);
	}
	return ps;
}

static bool
type_fits(Oid base, const CorpqColumn *c)
{
	Oid			named;
	int32		typmod;

	switch (c->type)
	{
		case CORPQ_COLUMN_TEXT:
			return base == TEXTOID || base == VARCHAROID;
		case CORPQ_COLUMN_INTEGER:
			return base == INT8OID || base == INT4OID || base == INT2OID;
		case CORPQ_COLUMN_NUMBER:
			return base == FLOAT8OID || base == FLOAT4OID || base == NUMERICOID ||
				base == INT8OID || base == INT4OID || base == INT2OID;
		default:
			parseTypeString(c->type_name, &named, &typmod, false);
			return base == named;
	}
}

/* The column count and types; fills base[] (max_columns entries). */
static int
check_columns(TupleDesc desc, const CorpqQuerySpec *spec, Oid *base)
{
	if (desc->natts < spec->min_columns || desc->natts > spec->max_columns)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s query must return %s", spec->what, expected_columns(spec)),
				 errdetail_plural("It returns %d column.", "It returns %d columns.",
								  desc->natts, desc->natts)));
	for (int i = 0; i < desc->natts; i++)
	{
		Oid			type = TupleDescAttr(desc, i)->atttypid;

		base[i] = getBaseType(type);
		if (!type_fits(base[i], &spec->columns[i]))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s query must return %s", spec->what, expected_columns(spec)),
					 errdetail("Column %d has type %s.", i + 1, format_type_be(type)),
					 errhint("Cast column %d to %s.", i + 1, type_name(&spec->columns[i]))));
	}
	return desc->natts;
}

/* Prepare and check (SPI connected); returns the plan, *n_columns and base[]. */
static SPIPlanPtr
prepare_checked(const char *query, const CorpqQuerySpec *spec, int *n_columns, Oid *base)
{
	SPIPlanPtr	plan = SPI_prepare(query, 0, NULL);
	CachedPlanSource *ps;

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	ps = check_select(plan, spec);
	*n_columns = check_columns(ps->resultDesc, spec, base);
	return plan;
}

static void
connect_spi(void)
{
	int			rc = SPI_connect();

	if (rc != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
}

char *
corpq_query_bare(const char *query)
{
	int			len = strlen(query);

	while (len > 0 && (isspace((unsigned char) query[len - 1]) || query[len - 1] == ';'))
		len--;
	return pnstrdup(query, len);
}

int
corpq_query_check(const char *query, const CorpqQuerySpec *spec)
{
	Oid		   *base = palloc(sizeof(Oid) * spec->max_columns);
	int			n;

	connect_spi();
	(void) prepare_checked(query, spec, &n, base);
	SPI_finish();
	pfree(base);
	return n;
}

/* ---- streaming ---- */

int64
corpq_query_stream(const char *query, const CorpqQuerySpec *spec, int batch_rows,
				   CorpqBatchFn fn, void *arg)
{
	MemoryContext batch_cxt = AllocSetContextCreate(CurrentMemoryContext,
													"corpq query batch",
													ALLOCSET_DEFAULT_SIZES);
	Oid		   *base = palloc(sizeof(Oid) * spec->max_columns);
	CorpqBatch	batch = {0};
	SPIPlanPtr	plan;
	Portal		portal;
	MemoryContext old;
	int64		rows = 0;

	Assert(batch_rows > 0);
	connect_spi();
	plan = prepare_checked(query, spec, &batch.n_columns, base);
	batch.base_types = base;
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, batch_rows);
		if (SPI_processed == 0)
			break;
		batch.tuptable = SPI_tuptable;
		batch.n = SPI_processed;
		batch.first = rows;
		rows += batch.n;
		old = MemoryContextSwitchTo(batch_cxt);
		fn(arg, &batch);
		MemoryContextSwitchTo(old);
		SPI_freetuptable(batch.tuptable);
		MemoryContextReset(batch_cxt);
	}
	SPI_freetuptable(SPI_tuptable);
	SPI_cursor_close(portal);
	SPI_finish();
	MemoryContextDelete(batch_cxt);
	pfree(base);
	if (rows == 0 && spec->need_rows)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s query returned no rows", spec->what)));
	return rows;
}

/* ---- a cursor across transactions ---- */

void
corpq_query_hold(const char *query, const CorpqQuerySpec *spec, const char *name,
				 CorpqHeldQuery *q)
{
	SPIPlanPtr	plan;
	CachedPlanSource *ps;

	Assert(spec->max_columns <= lengthof(q->base_types));
	memset(q, 0, sizeof(*q));
	strlcpy(q->portal, name, sizeof(q->portal));
	q->spec = spec;
	connect_spi();
	plan = SPI_prepare_cursor(query, 0, NULL, CURSOR_OPT_HOLD | CURSOR_OPT_SCROLL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare_cursor failed: %s", SPI_result_code_string(SPI_result));
	ps = check_select(plan, spec);
	q->n_columns = check_columns(ps->resultDesc, spec, q->base_types);
	(void) SPI_cursor_open(q->portal, plan, NULL, NULL, true);
	SPI_finish();
}

static Portal
held_portal(CorpqHeldQuery *q)
{
	Portal		p = SPI_cursor_find(q->portal);

	if (p == NULL)
		elog(ERROR, "cursor \"%s\" of the %s query is gone", q->portal, q->spec->what);
	return p;
}

uint64
corpq_query_held_count(CorpqHeldQuery *q)
{
	Portal		p;
	uint64		n;

	connect_spi();
	p = held_portal(q);
	SPI_scroll_cursor_move(p, FETCH_ABSOLUTE, 0);
	SPI_scroll_cursor_move(p, FETCH_FORWARD, FETCH_ALL);
	n = SPI_processed;
	SPI_scroll_cursor_move(p, FETCH_ABSOLUTE, 0);
	SPI_finish();
	q->next = 0;
	return n;
}

uint64
corpq_query_held_fetch(CorpqHeldQuery *q, int n, CorpqBatchFn fn, void *arg)
{
	MemoryContext batch_cxt = AllocSetContextCreate(CurrentMemoryContext,
													"corpq query batch",
													ALLOCSET_DEFAULT_SIZES);
	MemoryContext old;
	CorpqBatch	batch = {0};
	uint64		got;

	Assert(n > 0);
	CHECK_FOR_INTERRUPTS();
	connect_spi();
	SPI_cursor_fetch(held_portal(q), true, n);
	got = SPI_processed;
	if (got > 0)
	{
		batch.tuptable = SPI_tuptable;
		batch.n = got;
		batch.first = q->next;
		batch.n_columns = q->n_columns;
		batch.base_types = q->base_types;
		q->next += got;
		old = MemoryContextSwitchTo(batch_cxt);
		fn(arg, &batch);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	MemoryContextDelete(batch_cxt);
	return got;
}

void
corpq_query_held_close(CorpqHeldQuery *q)
{
	connect_spi();
	SPI_cursor_close(held_portal(q));
	SPI_finish();
}

static Datum
batch_value(const CorpqBatch *b, uint64 i, int col, bool *isnull)
{
	Assert(i < b->n && col >= 1 && col <= b->n_columns);
	return SPI_getbinval(b->tuptable->vals[i], b->tuptable->tupdesc, col, isnull);
}

bool
corpq_batch_text(const CorpqBatch *b, uint64 i, int col, const char **s, int *len)
{
	bool		isnull;
	Datum		d = batch_value(b, i, col, &isnull);
	text	   *t;

	if (isnull)
		return false;
	Assert(b->base_types[col - 1] == TEXTOID || b->base_types[col - 1] == VARCHAROID);
	t = DatumGetTextPP(d);
	*s = VARDATA_ANY(t);
	*len = VARSIZE_ANY_EXHDR(t);
	return true;
}

bool
corpq_batch_int64(const CorpqBatch *b, uint64 i, int col, int64 *v)
{
	bool		isnull;
	Datum		d = batch_value(b, i, col, &isnull);

	if (isnull)
		return false;
	switch (b->base_types[col - 1])
	{
		case INT8OID:
			*v = DatumGetInt64(d);
			break;
		case INT4OID:
			*v = DatumGetInt32(d);
			break;
		default:
			Assert(b->base_types[col - 1] == INT2OID);
			*v = DatumGetInt16(d);
			break;
	}
	return true;
}

bool
corpq_batch_float8(const CorpqBatch *b, uint64 i, int col, double *v)
{
	bool		isnull;
	Datum		d = batch_value(b, i, col, &isnull);

	if (isnull)
		return false;
	switch (b->base_types[col - 1])
	{
		case FLOAT8OID:
			*v = DatumGetFloat8(d);
			break;
		case FLOAT4OID:
			*v = DatumGetFloat4(d);
			break;
		case NUMERICOID:
			*v = DatumGetFloat8(DirectFunctionCall1(numeric_float8, d));
			break;
		default:
			{
				int64		x = 0;

				(void) corpq_batch_int64(b, i, col, &x);
				*v = (double) x;
			}
	}
	return true;
}

bool
corpq_batch_datum(const CorpqBatch *b, uint64 i, int col, Datum *v)
{
	bool		isnull;

	*v = batch_value(b, i, col, &isnull);
	return !isnull;
}
