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
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "pg/base/corpus_query.h"
#include "pg/base/errors.h"
#include "pg/classifier/classifier.h"
#include "pg/embed/embed.h"
#include "pg/mining/mining.h"
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
	CorpqSentenceFile *texts;	/* with a classifier: the sentences kept */
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
		{
			corpq_vector_set_add(side->set, ids[i], vecs + (Size) i * side->dim, side->dim);
			if (side->texts)
				corpq_sentence_file_add(side->texts, ids[i], rows[i].text, rows[i].len);
		}
	}
	side->rows += n;
}

/* Read query's sentences into set, embedded, and finish the set. */
static void
read_side(CorpqModelSession *s, const CorpqEmbedArgs *args, CorpqVectorSet *set,
		  CorpqSentenceFile *texts, const char *query)
{
	CorpqQuerySpec spec = {
		.what = set->what, .columns = columns, .min_columns = 2, .max_columns = 2,
		.example = "SELECT id, sentence FROM my_sentences", .need_rows = false
	};
	SentenceSide side = {.session = s, .args = args, .set = set, .dim = corpq_embed_dim(s),
	.texts = texts};

	corpq_query_stream(query, &spec, READ_BATCH, embed_batch, &side);
	if (side.too_long > 0)
		ereport(NOTICE,
				(errmsg(INT64_FORMAT " of " INT64_FORMAT " %s sentences are longer than model \"%s\" accepts: they are left out",
						side.too_long, side.rows, set->what, s->cur->spec),
				 errhint("The option \"on_too_long\": \"error\" stops at the first one and names the limit.")));
	corpq_vector_set_finish(set);
	if (texts)
		corpq_sentence_file_finish(texts);
}

/* The re-ranking's state: the sets (ids), the sentences, the classifier, the result. */
typedef struct Judge
{
	const CorpqVectorSet *src;
	const CorpqVectorSet *tgt;
	CorpqSentenceFile *src_texts;
	CorpqSentenceFile *tgt_texts;
	ClassifierScorer *scorer;
	double		min_quality;
	ReturnSetInfo *rsinfo;
	MemoryContext per_source;	/* reset after each source */
} Judge;

/* One row of the result: (src_id, tgt_id, cosine, margin, quality). */
static void
put_row(ReturnSetInfo *r, int64 src_id, int64 tgt_id, double cosine, double margin,
		double quality, bool quality_null)
{
	Datum		values[5] = {Int64GetDatum(src_id), Int64GetDatum(tgt_id),
		Float8GetDatum(cosine), Float8GetDatum(margin), Float8GetDatum(quality)};
	bool		nulls[5] = {false, false, false, false, quality_null};

	tuplestore_putvalues(r->setResult, r->setDesc, values, nulls);
}

/* A pair of corpq_mine_sets (no classifier): its row, quality NULL. */
static void
put_pair(void *arg, int64 src_id, int64 tgt_id, double cosine, double margin)
{
	put_row(arg, src_id, tgt_id, cosine, margin, 0, true);
}

/* A source's candidates judged: the best probability, of equal ones the first (larger margin). */
static void
judge_source(void *arg, const cq_mine_pair *c, int nc)
{
	Judge	   *j = arg;
	MemoryContext old = MemoryContextSwitchTo(j->per_source);
	text	   *src = corpq_sentence_file_get(j->src_texts, c[0].src);
	int			best = -1;
	double		best_p = 0;

	for (int q = 0; q < nc; q++)
	{
		text	   *tgt = corpq_sentence_file_get(j->tgt_texts, c[q].tgt);
		double		p;

		CHECK_FOR_INTERRUPTS();
		if (classifier_scorer_prob(j->scorer, src, tgt, &p) && (best < 0 || p > best_p))
		{
			best = q;
			best_p = p;
		}
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(j->per_source);
	if (best >= 0 && best_p >= j->min_quality)
		put_row(j->rsinfo, j->src->ids[c[best].src], j->tgt->ids[c[best].tgt],
				c[best].cosine, c[best].margin, best_p, false);
}

Datum
corpq_mine_pairs(PG_FUNCTION_ARGS)
{
	CorpqMinePairsOptions o;
	CorpqModelSession *s;
	CorpqVectorSet src,
				tgt;
	CorpqSentenceFile src_texts,
				tgt_texts;
	Judge		j = {0};
	bool		judged;

	/* not STRICT: a NULL model or query is an error, not an empty result */
	for (int i = 0; i < 3; i++)
		corpq_require_arg(fcinfo, i, arg_names[i]);
	corpq_mine_pairs_options_parse(PG_ARGISNULL(3) ? NULL : PG_GETARG_JSONB_P(3), &o);
	corpq_require_utf8();
	InitMaterializedSRF(fcinfo, 0);
	judged = o.classifier != NULL;

	/* the versions of the call's start: the encoder for both sides, the classifier */
	s = corpq_model_session_create(CurrentMemoryContext);
	corpq_model_session_use(s, text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	corpq_embed_require_encoder(s, "corpq.mine_pairs");
	if (judged)
	{
		j.scorer = classifier_scorer_open(classifier_pin(o.classifier), CurrentMemoryContext);
		corpq_sentence_file_init(&src_texts);
		corpq_sentence_file_init(&tgt_texts);
	}
	corpq_vector_set_init(&src, "source", NULL, o.mine.k);
	read_side(s, &o.embed, &src, judged ? &src_texts : NULL, text_to_cstring(PG_GETARG_TEXT_PP(1)));
	corpq_vector_set_init(&tgt, "target", &src, o.mine.k);
	read_side(s, &o.embed, &tgt, judged ? &tgt_texts : NULL, text_to_cstring(PG_GETARG_TEXT_PP(2)));
	if (!judged)
	{
		corpq_mine_sets(&src, &tgt, &o.mine, put_pair, fcinfo->resultinfo);
		return (Datum) 0;
	}
	j.src = &src;
	j.tgt = &tgt;
	j.src_texts = &src_texts;
	j.tgt_texts = &tgt_texts;
	j.min_quality = o.min_quality;
	j.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	j.per_source = AllocSetContextCreate(CurrentMemoryContext, "mine_pairs judging",
										 ALLOCSET_DEFAULT_SIZES);
	corpq_mine_sets_candidates(&src, &tgt, &o.mine, o.classifier_k,
							   corpq_sentence_file_bytes(src.n) + corpq_sentence_file_bytes(tgt.n),
							   judge_source, &j);
	corpq_sentence_file_close(&src_texts);
	corpq_sentence_file_close(&tgt_texts);
	classifier_scorer_close(j.scorer);
	MemoryContextDelete(j.per_source);
	return (Datum) 0;
}
