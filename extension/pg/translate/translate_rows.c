/*
 * corpq.translate_rows(model, query, options): translate every row of a
 * query returning (id, src) in this backend, batch sentences at a time with
 * finished ones replaced at once, and return (id, hyp, score) in the
 * query's order.  A row's sampling stream is keyed by its id.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "pg/base/errors.h"
#include "pg/base/base.h"
#include "pg/translate/translate.h"

PG_FUNCTION_INFO_V1(corpq_translate_rows);

static const CorpqColumn columns[] = {
	{"id", CORPQ_COLUMN_INTEGER}, {"src", CORPQ_COLUMN_TEXT}
};

static const CorpqQuerySpec rows_spec = {
	.what = "source", .columns = columns, .min_columns = 2, .max_columns = 2,
	.example = "SELECT id, src FROM my_corpus", .need_rows = false
};

/* corpq.translate_rows()'s arguments, in order (77_translate.sql). */
static const char *const arg_names[] = {"model", "query", "options"};

typedef struct RowsRun
{
	CorpqTranslateEngine *e;
	ReturnSetInfo *rsinfo;
} RowsRun;

static void
put_row(void *arg, const CorpqTranslated *t)
{
	RowsRun    *r = arg;
	Datum		values[4] = {Int64GetDatum(t->id), 0, 0, 0};
	bool		nulls[4] = {false, true, true, true};

	if (t->n_hyps > 0)
	{
		values[1] = PointerGetDatum(corpq_translate_text(r->e, &t->hyps[0]));
		values[2] = Float8GetDatum(t->hyps[0].score);
		values[3] = BoolGetDatum(t->hyps[0].finished);
		nulls[1] = nulls[2] = nulls[3] = false;
	}
	tuplestore_putvalues(r->rsinfo->setResult, r->rsinfo->setDesc, values, nulls);
}

static void
add_batch(void *arg, const CorpqBatch *b)
{
	RowsRun    *r = arg;

	for (uint64 i = 0; i < b->n; i++)
		corpq_translate_add_row(r->e, b, i, 0);
	corpq_translate_run(r->e, false);
}

Datum
corpq_translate_rows(PG_FUNCTION_ARGS)
{
	CorpqTranslateOptions o;
	RowsRun		r;
	char	   *model;
	char	   *query;

	/* not STRICT: a NULL model or query is an error, not an empty result */
	for (int i = 0; i < 2; i++)
		corpq_require_arg(fcinfo, i, arg_names[i]);
	model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	corpq_translate_options_parse(CORPQ_TRANSLATE_ROWS, PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2), &o);
	corpq_require_utf8();

	InitMaterializedSRF(fcinfo, 0);
	r.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	r.e = corpq_translate_engine_create(CurrentMemoryContext, put_row, &r);
	corpq_translate_engine_use(r.e, model, false, &o, o.batch);
	/* a fetch fills the batch at least once over */
	corpq_query_stream(query, &rows_spec, Max(64, o.batch), add_batch, &r);
	corpq_translate_run(r.e, true);
	return (Datum) 0;
}
