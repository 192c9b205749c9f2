/*
 * corpq.score(model, corpus, what, ...): score a whole corpus query (id,
 * src, tgt) in batches.  Rows are read in chunks (base/corpus_query.h); a
 * chunk is encoded, ordered by length so that a batch holds sentences of
 * similar length (smaller attention blocks), scored batch by batch, and
 * returned in the query's order.  A pair's result does not depend on its
 * batch (the forward packs pairs without padding, and dropout masks are keyed
 * by the pair's content), so score() returns exactly what the per-row
 * functions return.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/tuplestore.h"

#include "pg/base/errors.h"
#include "pg/base/base.h"
#include "pg/base/corpus_query.h"
#include "pg/model/model_catalog.h"
#include "pg/model/model_score.h"

PG_FUNCTION_INFO_V1(corpq_score);

typedef struct ChunkRow
{
	int64		id;
	bool		id_null;
	bool		pair_null;		/* src or tgt NULL: score NULL */
	cq_pair		pair;
	double		score;
} ChunkRow;

/* corpq.score()'s arguments, in order (75_scoring.sql). */
static const char *const arg_names[] = {"model", "corpus", "what", "batch_size", "measure", "passes", "seed"};

static CorpqScoreWhat
parse_what(const char *what)
{
	if (strcmp(what, "sent_prob") == 0)
		return CORPQ_SCORE_SENT_PROB;
	if (strcmp(what, "sent_logprob") == 0)
		return CORPQ_SCORE_SENT_LOGPROB;
	if (strcmp(what, "uncertainty") == 0)
		return CORPQ_SCORE_UNCERTAINTY;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown score \"%s\"", what),
			 errdetail("Valid scores: sent_prob, sent_logprob, uncertainty.")));
	pg_unreachable();
}

static const CorpqColumn corpus_columns[] = {
	{"id", CORPQ_COLUMN_INTEGER}, {"src", CORPQ_COLUMN_TEXT}, {"tgt", CORPQ_COLUMN_TEXT}
};

static const CorpqQuerySpec corpus_spec = {
	.what = "corpus", .columns = corpus_columns, .min_columns = 3, .max_columns = 3,
	.example = "SELECT id, src, tgt FROM my_corpus"
};

/* Pair indexes by the pairs' lengths, then by index. */
static int
cmp_length(const void *a, const void *b, void *arg)
{
	const cq_pair *const *pairs = arg;
	int			i = *(const int *) a;
	int			j = *(const int *) b;
	int			li = pairs[i]->src_len + pairs[i]->tgt_len;
	int			lj = pairs[j]->src_len + pairs[j]->tgt_len;

	return li != lj ? (li < lj ? -1 : 1) : (i < j ? -1 : i > j);
}

void
corpq_scorer_score(CorpqScorer *s, const CorpqScoreArgs *a, const cq_pair *const *pairs,
				   int n, double *out)
{
	int		   *order = palloc(Max(n, 1) * sizeof(int));
	const cq_pair **in_order = palloc(Max(n, 1) * sizeof(cq_pair *));
	int			cap = Min(a->batch_size, Max(n, 1));	/* a batch never exceeds the pairs */
	cq_pair    *batch = palloc(cap * sizeof(cq_pair));
	double	   *res = palloc(cap * sizeof(double));
	/* the K passes' buffers of an uncertainty (model_score.h) */
	Size		extra = a->what == CORPQ_SCORE_UNCERTAINTY ? (Size) a->passes * 2 * sizeof(float) : 0;

	/* similar lengths together: smaller attention blocks, the same results */
	for (int i = 0; i < n; i++)
		order[i] = i;
	qsort_arg(order, n, sizeof(int), cmp_length, (void *) pairs);
	for (int i = 0; i < n; i++)
		in_order[i] = pairs[order[i]];
	for (int b = 0, nb; b < n; b += nb)
	{
		nb = corpq_scorer_batch_cut(s, in_order + b, n - b, a->batch_size, extra);
		for (int i = 0; i < nb; i++)
			batch[i] = *in_order[b + i];
		if (a->what == CORPQ_SCORE_UNCERTAINTY)
			corpq_scorer_uncertainty(s, batch, nb, a->measure, a->passes, a->seed, res);
		else
		{
			corpq_scorer_forward(s, batch, nb, NULL);
			for (int i = 0; i < nb; i++)
				res[i] = a->what == CORPQ_SCORE_SENT_PROB
					? exp(s->out.sent_logp[i] / s->out.sent_count[i])
					: s->out.sent_logp[i];
		}
		for (int i = 0; i < nb; i++)
			out[order[b + i]] = res[i];
	}
}

/* Score the non-NULL rows of a chunk. */
static void
score_chunk(CorpqScorer *s, const CorpqScoreArgs *a, ChunkRow *rows, int n)
{
	const cq_pair **pairs = palloc(Max(n, 1) * sizeof(cq_pair *));
	double	   *res = palloc(Max(n, 1) * sizeof(double));
	int			m = 0;

	for (int i = 0; i < n; i++)
		if (!rows[i].pair_null)
			pairs[m++] = &rows[i].pair;
	corpq_scorer_score(s, a, pairs, m, res);
	for (int i = 0, k = 0; i < n; i++)
		if (!rows[i].pair_null)
			rows[i].score = res[k++];
}

/* What the batch function needs: the scorer, the arguments, the result. */
typedef struct ScoreRun
{
	CorpqScorer *s;
	const CorpqScoreArgs *a;
	ChunkRow   *rows;			/* [chunk] */
	ReturnSetInfo *rsinfo;
} ScoreRun;

/* Encode a chunk of the corpus (in the batch context), score it, return it. */
static void
score_batch(void *arg, const CorpqBatch *batch)
{
	ScoreRun   *r = arg;
	ChunkRow   *rows = r->rows;
	int			n = (int) batch->n;

	for (int i = 0; i < n; i++)
	{
		const char *src,
				   *tgt;
		int			src_len,
					tgt_len;

		rows[i].id_null = !corpq_batch_int64(batch, i, 1, &rows[i].id);
		if (rows[i].id_null)
			rows[i].id = 0;
		rows[i].pair_null = !corpq_batch_text(batch, i, 2, &src, &src_len) ||
			!corpq_batch_text(batch, i, 3, &tgt, &tgt_len);
		if (!rows[i].pair_null)
			corpq_scorer_encode(r->s, src, src_len, tgt, tgt_len, &rows[i].pair);
	}
	score_chunk(r->s, r->a, rows, n);
	for (int i = 0; i < n; i++)
	{
		Datum		values[2] = {Int64GetDatum(rows[i].id), Float8GetDatum(rows[i].score)};
		bool		nulls[2] = {rows[i].id_null, rows[i].pair_null};

		tuplestore_putvalues(r->rsinfo->setResult, r->rsinfo->setDesc, values, nulls);
	}
}

Datum
corpq_score(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *model;
	char	   *query;
	CorpqScoreArgs a;
	CorpqScorer *s;
	ScoreRun	run;
	int			chunk;

	/* not STRICT: a NULL argument is an error, not an empty result */
	for (int i = 0; i < PG_NARGS(); i++)
		corpq_require_arg(fcinfo, i, arg_names[i]);
	model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	a.what = parse_what(text_to_cstring(PG_GETARG_TEXT_PP(2)));
	a.batch_size = PG_GETARG_INT32(3);
	if (a.batch_size < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch_size must be at least 1, got %d", a.batch_size)));
	a.measure = corpq_measure_from_name(text_to_cstring(PG_GETARG_TEXT_PP(4)));
	a.passes = PG_GETARG_INT32(5);
	if (a.what == CORPQ_SCORE_UNCERTAINTY)
		corpq_check_passes(a.passes);
	a.seed = (uint64) PG_GETARG_INT64(6);
	corpq_require_utf8();

	InitMaterializedSRF(fcinfo, 0);
	s = corpq_scorer_create(CurrentMemoryContext);
	corpq_scorer_use(s, model, false);
	/*
	 * Whole batches per chunk, and at least 1024 rows to sort by length; at
	 * most 32768 rows of text held at once, whatever batch_size says.
	 */
	chunk = Min(Max(1024, Min(a.batch_size, 1 << 16) * 8), 32768);
	run.s = s;
	run.a = &a;
	run.rows = MemoryContextAllocHuge(s->cxt, (Size) chunk * sizeof(ChunkRow));
	run.rsinfo = rsinfo;
	(void) corpq_query_stream(query, &corpus_spec, chunk, score_batch, &run);
	return (Datum) 0;
}
