/*
 * User corpus queries: the one check that a query text is a single plain
 * SELECT returning the expected columns, and the one loop that streams its
 * rows in batches through an SPI cursor.
 *
 * A query passes when it is one statement, a SELECT (or VALUES, TABLE) that
 * modifies nothing: no data-modifying WITH, no SELECT INTO, no FOR UPDATE /
 * SHARE, and returns min_columns .. max_columns columns of the spec's types
 * (domains over them count).  Otherwise ERROR wrong_object_type ("corpus
 * query must be a single SELECT", hint: the spec's example) or
 * datatype_mismatch ("corpus query must return two text columns (src, tgt)",
 * with the column count or the offending column's type as detail).  Both are
 * checked on the prepared plan, before any row is read.  The query runs
 * read-only with the caller's privileges.
 *
 * Memory: corpq_query_stream calls fn once per batch in a short-lived context
 * (a child of the caller's CurrentMemoryContext) that is reset after each
 * batch; the values of the batch (and anything fn allocates there) live until
 * fn returns.  fn keeps what must last by allocating in a context of its own
 * choosing.  fn may run SPI queries itself (the batch stays valid, but SPI
 * leaves CurrentMemoryContext at its procedure context, as always).
 * CHECK_FOR_INTERRUPTS() runs before every fetch.
 */
#ifndef CORPQ_BASE_CORPUS_QUERY_H
#define CORPQ_BASE_CORPUS_QUERY_H

#include "postgres.h"

#include "executor/spi.h"

typedef enum CorpqColumnType
{
	CORPQ_COLUMN_TEXT,			/* text or varchar */
	CORPQ_COLUMN_INTEGER,		/* smallint, integer or bigint */
	CORPQ_COLUMN_NUMBER,		/* real, double precision, numeric or an
								 * integer type, read as a double */
	CORPQ_COLUMN_NAMED			/* exactly the type .type_name names */
} CorpqColumnType;

typedef struct CorpqColumn
{
	const char *name;			/* for messages: "src"; NULL when it has none */
	CorpqColumnType type;
	const char *type_name;		/* CORPQ_COLUMN_NAMED: schema-qualified, "corpq.cav" */
} CorpqColumn;

typedef struct CorpqQuerySpec
{
	const char *what;			/* the query's role: "corpus", "dev" */
	const CorpqColumn *columns; /* max_columns expected columns, in order */
	int			min_columns;	/* the columns after min_columns are optional */
	int			max_columns;
	const char *example;		/* a query that fits, for the hint */
	bool		need_rows;		/* ERROR when it returns no rows */
} CorpqQuerySpec;

/* One batch of rows, as fn sees it. */
typedef struct CorpqBatch
{
	SPITupleTable *tuptable;
	uint64		n;				/* rows in this batch */
	uint64		first;			/* 0-based number of its first row in the result */
	int			n_columns;		/* of the query */
	const Oid  *base_types;		/* [n_columns] each column's type, domains resolved */
} CorpqBatch;

typedef void (*CorpqBatchFn) (void *arg, const CorpqBatch *batch);

/*
 * query without its trailing blanks and semicolons (palloc'd), to be
 * wrapped in a subquery: "SELECT ... FROM (<bare>\n) AS q".
 */
char	   *corpq_query_bare(const char *query);

/*
 * ERROR unless query passes the spec; returns its number of columns.  Used
 * where a query is checked long before it runs (at job submission).
 */
int			corpq_query_check(const char *query, const CorpqQuerySpec *spec);

/*
 * Check query, then run it and call fn for each batch of up to batch_rows
 * rows.  Returns the number of rows (NULLs included).
 */
int64		corpq_query_stream(const char *query, const CorpqQuerySpec *spec,
							   int batch_rows, CorpqBatchFn fn, void *arg);

/*
 * A query read across many transactions, by a job that commits as it goes.
 * corpq_query_hold checks the query and opens a cursor on it WITH HOLD (and
 * SCROLL): at the commit of the transaction that opened it PostgreSQL runs
 * the query to its end (an error in the query surfaces in that commit) and
 * keeps its rows, in memory up to work_mem and then in a temporary file,
 * until corpq_query_held_close or the end of the session.  The other calls
 * run in later transactions; each connects SPI itself.
 */
typedef struct CorpqHeldQuery
{
	char		portal[NAMEDATALEN];	/* the cursor's name */
	const CorpqQuerySpec *spec;
	int			n_columns;
	Oid			base_types[8];	/* of each column, domains resolved */
	uint64		next;			/* 0-based number of the next row */
} CorpqHeldQuery;

/* In the transaction whose commit runs the query; name names the cursor. */
void		corpq_query_hold(const char *query, const CorpqQuerySpec *spec,
							 const char *name, CorpqHeldQuery *q);

/* The number of rows of the result; the cursor is back at its start. */
uint64		corpq_query_held_count(CorpqHeldQuery *q);

/*
 * Fetch up to n rows and call fn once with them (as corpq_query_stream
 * does, in a short-lived context); returns how many (0 at the end).
 */
uint64		corpq_query_held_fetch(CorpqHeldQuery *q, int n, CorpqBatchFn fn, void *arg);

/* Drop the cursor and its rows (in a transaction). */
void		corpq_query_held_close(CorpqHeldQuery *q);

/*
 * Row i (0-based within the batch), column col (1-based) as text bytes
 * (detoasted in the batch context); false when NULL.
 */
bool		corpq_batch_text(const CorpqBatch *b, uint64 i, int col,
							 const char **s, int *len);

/* The same for an integer column. */
bool		corpq_batch_int64(const CorpqBatch *b, uint64 i, int col, int64 *v);

/* The same for a CORPQ_COLUMN_NUMBER column (numeric NaN gives NaN). */
bool		corpq_batch_float8(const CorpqBatch *b, uint64 i, int col, double *v);

/* The datum of a CORPQ_COLUMN_NAMED column, as the cursor returned it (maybe toasted). */
bool		corpq_batch_datum(const CorpqBatch *b, uint64 i, int col, Datum *v);

#endif
