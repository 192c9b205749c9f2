/*
 * corpq.filter_report() and filter_report_by_domain(): one scan of a corpus
 * query through the filter_stats aggregate, its rows as a table.
 *
 * The corpus query is checked by the shared corpus_query check (one plain
 * SELECT of the expected columns), then scanned by a single aggregate query
 * around it, planned with parallel query allowed.  corpq_query_stream()'s
 * SPI cursor is not used: PostgreSQL never runs a cursor's plan in
 * parallel, and here the aggregate runs where the rows are, in the workers,
 * so that only its states come back.  The scan runs read-only, with the
 * caller's privileges.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "pg/base/corpus_query.h"
#include "pg/filters/filters.h"

PG_FUNCTION_INFO_V1(corpq_filter_report);
PG_FUNCTION_INFO_V1(corpq_filter_report_by_domain);

static const CorpqColumn columns[] = {
	{"src", CORPQ_COLUMN_TEXT}, {"tgt", CORPQ_COLUMN_TEXT}, {"domain", CORPQ_COLUMN_TEXT}
};
static const CorpqQuerySpec corpus_spec = {
	.what = "corpus", .columns = columns, .min_columns = 2, .max_columns = 2,
	.example = "SELECT src, tgt FROM my_bitext"
};
static const CorpqQuerySpec domain_corpus_spec = {
	.what = "corpus", .columns = columns, .min_columns = 3, .max_columns = 3,
	.example = "SELECT src, tgt, domain FROM my_bitext"
};

#define RESULT_COLUMNS "filter, kept, rejected, rejected_share, examples"

/*
 * The aggregate query over corpus.  The corpus text goes in on a line of
 * its own, so that a trailing comment cannot swallow the closing
 * parenthesis; SPI_prepare takes one statement only.
 */
static char *
scan_sql(const char *corpus, bool by_domain)
{
	if (by_domain)
		return psprintf("SELECT a.domain, r." RESULT_COLUMNS "\n"
						"FROM (SELECT c.domain, corpq.filter_stats(c.src, c.tgt, $1, $2) AS s\n"
						"      FROM (\n%s\n) AS c(src, tgt, domain) GROUP BY c.domain) AS a\n"
						"CROSS JOIN LATERAL pg_catalog.unnest(a.s) WITH ORDINALITY\n"
						"     AS r(" RESULT_COLUMNS ", n)\n"
						"ORDER BY a.domain, r.n", corpus);
	return psprintf("SELECT r." RESULT_COLUMNS "\n"
					"FROM (SELECT corpq.filter_stats(c.src, c.tgt, $1, $2) AS s\n"
					"      FROM (\n%s\n) AS c(src, tgt)) AS a\n"
					"CROSS JOIN LATERAL pg_catalog.unnest(a.s) WITH ORDINALITY\n"
					"     AS r(" RESULT_COLUMNS ", n)\n"
					"ORDER BY r.n", corpus);
}

/*
 * Run the scan and put its rows into the function's tuplestore.  The one
 * place that reads the corpus.
 */
static uint64
filter_scan(FunctionCallInfo fcinfo, const char *corpus, Jsonb *spec, int examples,
			bool by_domain)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			argtypes[2] = {JSONBOID, INT4OID};
	Datum		args[2] = {JsonbPGetDatum(spec), Int32GetDatum(examples)};
	SPIPlanPtr	plan;
	uint64		n;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare_cursor(scan_sql(corpus, by_domain), 2, argtypes, CURSOR_OPT_PARALLEL_OK);
	if (plan == NULL)
		elog(ERROR, "could not prepare the filter scan: %s", SPI_result_code_string(SPI_result));
	if (SPI_execute_plan(plan, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "filter scan failed");
	n = SPI_processed;
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		Datum		values[6];
		bool		nulls[6];

		heap_deform_tuple(t, SPI_tuptable->tupdesc, values, nulls);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_finish();
	return n;
}

/* A corpus without pairs: every filter kept and rejected nothing. */
static void
empty_rows(FunctionCallInfo fcinfo, const FilterList *list)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	for (int i = 0; i <= list->n; i++)
	{
		Datum		values[5];
		bool		nulls[5] = {false, false, false, true, false};

		values[0] = CStringGetTextDatum(i < list->n ? list->items[i].label : FILTER_ALL_LABEL);
		values[1] = Int64GetDatum(0);
		values[2] = Int64GetDatum(0);
		values[3] = (Datum) 0;
		values[4] = PointerGetDatum(construct_empty_array(TEXTOID));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

static Datum
report(FunctionCallInfo fcinfo, bool by_domain)
{
	char	   *corpus = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Jsonb	   *spec = PG_GETARG_JSONB_P(1);
	int			examples = PG_GETARG_INT32(2);
	FilterList *list;

	/* a bad spec or query fails before any row is read */
	list = filter_list_parse(spec, FILTER_MODELS_LATEST);
	/*
	 * Model names pinned once, here: the aggregate (IMMUTABLE, in every
	 * worker) takes pinned versions only, and all see the same ones.
	 */
	if (list->n_models > 0)
		spec = filter_list_jsonb(list);
	if (examples < 0 || examples > FILTER_MAX_EXAMPLES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("examples must be from 0 to %d", FILTER_MAX_EXAMPLES),
				 errdetail("It is %d.", examples)));
	corpq_query_check(corpus, by_domain ? &domain_corpus_spec : &corpus_spec);
	InitMaterializedSRF(fcinfo, 0);
	if (filter_scan(fcinfo, corpus, spec, examples, by_domain) == 0 && !by_domain)
		empty_rows(fcinfo, list);
	return (Datum) 0;
}

Datum
corpq_filter_report(PG_FUNCTION_ARGS)
{
	return report(fcinfo, false);
}

Datum
corpq_filter_report_by_domain(PG_FUNCTION_ARGS)
{
	return report(fcinfo, true);
}
