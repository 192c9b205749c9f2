/*
 * corpq.mine_pairs(model, src_query, tgt_query, options): margin-based
 * mining of pairs from two queries returning (id, sentence text)
 * (docs/embeddings.md).  The sentences of each query are embedded batch by
 * batch as they are read (corpq_embed_rows, the bits of corpq.embed()) into
 * a vector set, and the two sets are mined as mine_vectors() mines them
 * (corpq_mine_sets): the result is mine_vectors()' over the embed() vectors
 * of the same sentences.  A sentence is held only while its read batch is
 * embedded; the sets are held in memory up to work_mem and in temporary
 * files past it (embed.h), the embedding is bounded by corpq.max_batch_mb.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "pg/base/corpus_query.h"
#include "pg/base/errors.h"
#include "pg/embed/embed.h"
#include "pg/model/model_session.h"

PG_FUNCTION_INFO_V1(corpq_mine_pairs);

/* corpq.mine_pairs()'s arguments, in order (89_embed.sql). */
static const char *const arg_names[] = {"model", "src_query", "tgt_query", "options"};

static const CorpqColumn columns[] = {
	{"id", CORPQ_COLUMN_INTEGER}, {"sentence", CORPQ_COLUMN_TEXT}
};

/* rows per fetch, embedded together: 1000 vectors of dimension 768 are 3 MB */
#define READ_BATCH 1000

/* One side being read: where its vectors go and what it left out. */
typedef struct SentenceSide
{
	CorpqModelSession *session;		/* its current model: the encoder */
	const CorpqEmbedArgs *args;
	CorpqVectorSet *set;
	int			dim;
	int64		rows;			/* rows with an id and a sentence */
	int64		too_long;		/* of them, left out (on_too_long null) */
} SentenceSide;

/* Embed a batch of (id, sentence) rows into the side's set. */
static void
embed_batch(void *arg, const CorpqBatch *b)
{
	SentenceSide *side = arg;
	CorpqEmbedRow *rows = palloc0(sizeof(CorpqEmbedRow) * Max(b->n, 1));
	int64	   *ids = palloc(sizeof(int64) * Max(b->n, 1));
	float	   *vecs;
	int			n = 0;

	for (uint64 i = 0; i < b->n; i++)
	{
		/* a row without an id or a sentence takes no part, as in mine_vectors */
		if (!corpq_batch_int64(b, i, 1, &ids[n]) ||
			!corpq_batch_text(b, i, 2, &rows[n].text, &rows[n].len))
			continue;
		n++;
	}
	vecs = palloc(sizeof(float) * (Size) Max(n, 1) * side->dim);
	corpq_embed_rows(side->session, side->args, rows, n, vecs);
	for (int i = 0; i < n; i++)
	{
		if (rows[i].null)
			side->too_long++;
		else
			corpq_vector_set_add(side->set, ids[i], vecs + (Size) i * side->dim, side->dim);
	}
	side->rows += n;
}

/* Read query's sentences into set, embedded, and finish the set. */
static void
read_side(CorpqModelSession *s, const CorpqEmbedArgs *args, CorpqVectorSet *set, const char *query)
{
	CorpqQuerySpec spec = {
		.what = set->what, .columns = columns, .min_columns = 2, .max_columns = 2,
		.example = "SELECT id, sentence FROM my_sentences", .need_rows = false
	};
	SentenceSide side = {.session = s, .args = args, .set = set, .dim = corpq_embed_dim(s)};

	corpq_query_stream(query, &spec, READ_BATCH, embed_batch, &side);
	if (side.too_long > 0)
		ereport(NOTICE,
				(errmsg(INT64_FORMAT " of " INT64_FORMAT " %s sentences are longer than model \"%s\" accepts: they are left out",
						side.too_long, side.rows, set->what, s->cur->spec),
				 errhint("The option \"on_too_long\": \"error\" stops at the first one and names the limit.")));
	corpq_vector_set_finish(set);
}

Datum
corpq_mine_pairs(PG_FUNCTION_ARGS)
{
	CorpqMinePairsOptions o;
	CorpqModelSession *s;
	CorpqVectorSet src,
				tgt;

	/* not STRICT: a NULL model or query is an error, not an empty result */
	for (int i = 0; i < 3; i++)
		corpq_require_arg(fcinfo, i, arg_names[i]);
	corpq_mine_pairs_options_parse(PG_ARGISNULL(3) ? NULL : PG_GETARG_JSONB_P(3), &o);
	corpq_require_utf8();
	InitMaterializedSRF(fcinfo, 0);

	/* the version of the call's start, for both sides */
	s = corpq_model_session_create(CurrentMemoryContext);
	corpq_model_session_use(s, text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	corpq_embed_require_encoder(s, "corpq.mine_pairs");
	corpq_vector_set_init(&src, "source", NULL, o.mine.k);
	read_side(s, &o.embed, &src, text_to_cstring(PG_GETARG_TEXT_PP(1)));
	corpq_vector_set_init(&tgt, "target", &src, o.mine.k);
	read_side(s, &o.embed, &tgt, text_to_cstring(PG_GETARG_TEXT_PP(2)));
	corpq_mine_sets(&src, &tgt, &o.mine, corpq_mine_put_pair, fcinfo->resultinfo);
	return (Datum) 0;
}
