/*
 * corpq.embed(model, sentence [, on_too_long]): a sentence's vector from an
 * encoder model (kind encoder, models/FORMAT.md "Encoder models"), on a
 * model name (STABLE) or a pinned version (IMMUTABLE); and
 * corpq.embed_rows(model, corpus, options): the vectors of a query's rows
 * (id, sentence) in one statement, batched as score() batches.  The model is
 * resolved once per query through a model session (pg/model/model_session.h) (the same
 * version for the whole query, the vocabulary loaded once); the vectors are
 * corpq_embed_rows' (embed.h), the path of every caller that embeds, which
 * gives a sentence the same bits alone or in any batch.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "pg/base/corpus_query.h"
#include "pg/base/errors.h"
#include "pg/base/options.h"
#include "pg/embed/embed.h"
#include "pg/model/model_session.h"

PG_FUNCTION_INFO_V1(corpq_embed);
PG_FUNCTION_INFO_V1(corpq_embed_pinned);
PG_FUNCTION_INFO_V1(corpq_embed_rows_srf);

static Datum
embed(FunctionCallInfo fcinfo, bool pinned)
{
	CorpqModelSession *s = corpq_model_session_cached(fcinfo);
	text	   *sentence = PG_GETARG_TEXT_PP(1);
	CorpqEmbedArgs a = {.batch_size = 1, .on_too_long = corpq_too_long_arg(fcinfo, 2)};
	CorpqEmbedRow row = {.text = VARDATA_ANY(sentence), .len = VARSIZE_ANY_EXHDR(sentence)};
	float	   *vec;
	int			d;

	corpq_model_session_use(s, text_to_cstring(PG_GETARG_TEXT_PP(0)), pinned);
	corpq_embed_require_encoder(s, "corpq.embed");
	d = corpq_embed_dim(s);
	vec = palloc(sizeof(float) * d);
	corpq_embed_rows(s, &a, &row, 1, vec);
	if (row.null)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(corpq_embed_array(vec, d));
}

Datum
corpq_embed(PG_FUNCTION_ARGS)
{
	return embed(fcinfo, false);
}

Datum
corpq_embed_pinned(PG_FUNCTION_ARGS)
{
	return embed(fcinfo, true);
}

/* ---- corpq.embed_rows() ---- */


static const CorpqColumn corpus_columns[] = {
	{"id", CORPQ_COLUMN_INTEGER}, {"sentence", CORPQ_COLUMN_TEXT}
};

static const CorpqQuerySpec corpus_spec = {
	.what = "corpus", .columns = corpus_columns, .min_columns = 2, .max_columns = 2,
	.example = "SELECT id, sentence FROM my_sentences"
};

/* What the batch function needs: the session, the arguments, the result. */
typedef struct EmbedRowsRun
{
	CorpqModelSession *s;
	CorpqEmbedArgs a;
	CorpqEmbedRow *rows;		/* [block] */
	float	   *out;			/* [block, d] */
	int			d;
	int64		n_rows;
	int64		too_long;
	ReturnSetInfo *rsinfo;
} EmbedRowsRun;

/* Embed a block of the corpus (in the batch context), return it in order. */
static void
embed_batch(void *arg, const CorpqBatch *batch)
{
	EmbedRowsRun *r = arg;
	int			n = (int) batch->n;

	for (int i = 0; i < n; i++)
	{
		memset(&r->rows[i], 0, sizeof(CorpqEmbedRow));
		if (!corpq_batch_text(batch, i, 2, &r->rows[i].text, &r->rows[i].len))
			r->rows[i].text = NULL;
	}
	corpq_embed_rows(r->s, &r->a, r->rows, n, r->out);
	for (int i = 0; i < n; i++)
	{
		int64		id = 0;
		bool		id_null = !corpq_batch_int64(batch, i, 1, &id);
		Datum		values[2] = {Int64GetDatum(id), (Datum) 0};
		bool		nulls[2] = {id_null, r->rows[i].null};

		if (!r->rows[i].null)
			values[1] = corpq_embed_array(r->out + (Size) i * r->d, r->d);
		r->too_long += r->rows[i].null && r->rows[i].text != NULL;
		r->n_rows++;
		tuplestore_putvalues(r->rsinfo->setResult, r->rsinfo->setDesc, values, nulls);
	}
}

Datum
corpq_embed_rows_srf(PG_FUNCTION_ARGS)
{
	CorpqEmbedRowsOptions o;
	EmbedRowsRun run = {0};
	char	   *query;
	int			block;

	/* not STRICT: a NULL argument is an error, not an empty result */
	corpq_require_arg(fcinfo, 0, "model");
	corpq_require_arg(fcinfo, 1, "corpus");
	corpq_options_parse(&corpq_embed_rows_options, PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2), &o);
	query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	corpq_require_utf8();

	InitMaterializedSRF(fcinfo, 0);
	run.s = corpq_model_session_create(CurrentMemoryContext);
	corpq_model_session_use(run.s, text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	corpq_embed_require_encoder(run.s, "corpq.embed_rows");
	run.a.batch_size = o.batch_size;
	run.a.on_too_long = (CorpqTooLong) o.on_too_long;
	run.d = corpq_embed_dim(run.s);
	block = corpq_embed_block_rows(o.batch_size);
	run.rows = MemoryContextAllocHuge(run.s->cxt, (Size) block * sizeof(CorpqEmbedRow));
	run.out = MemoryContextAllocHuge(run.s->cxt, (Size) block * run.d * sizeof(float));
	run.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	(void) corpq_query_stream(query, &corpus_spec, block, embed_batch, &run);
	if (run.too_long > 0)
		ereport(NOTICE,
				(errmsg(INT64_FORMAT " of " INT64_FORMAT " sentences are longer than model \"%s\" accepts: their vectors are NULL",
						run.too_long, run.n_rows, run.s->cur->spec),
				 errhint("The option on_too_long \"error\" stops at the first one and names the limit.")));
	return (Datum) 0;
}
