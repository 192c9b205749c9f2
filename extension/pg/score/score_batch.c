/*
 * Scoring rows in batches: corpq_score_rows() (score.h), behind
 * corpq.score(model, corpus, what, ...) and a job's chunks.  The rows are
 * encoded, ordered by length so that a batch holds sentences of similar
 * length (smaller attention blocks), scored batch by batch, and their scores
 * put back in the rows' order.  A pair's result does not depend on its batch
 * (the forward packs pairs without padding, and dropout masks are keyed by
 * the pair's content), so score() returns exactly what the per-row
 * functions return.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "pg/base/errors.h"
#include "pg/base/base.h"
#include "pg/base/corpus_query.h"
#include "pg/model/model.h"
#include "pg/score/score.h"

PG_FUNCTION_INFO_V1(corpq_score);

CorpqScoreWhat
corpq_score_what_from_name(const char *what)
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

/* A row's encoded pair, for sorting by length. */
typedef struct Encoded
{
	cq_pair		pair;
	int			row;			/* index into the rows */
} Encoded;

static int
cmp_length(const void *a, const void *b)
{
	const Encoded *x = *(Encoded *const *) a;
	const Encoded *y = *(Encoded *const *) b;
	int			lx = x->pair.src_len + x->pair.tgt_len;
	int			ly = y->pair.src_len + y->pair.tgt_len;

	return lx != ly ? (lx < ly ? -1 : 1) : (x < y ? -1 : x > y);
}

/* Score order[0..m) batch_size pairs at a time; the results into the rows. */
static void
score_encoded(CorpqModelSession *s, const CorpqScoreArgs *a, Encoded **order, int m,
			  CorpqScoreRow *rows)
{
	const cq_pair **in_order = palloc(Max(m, 1) * sizeof(cq_pair *));
	int			cap = Min(a->batch_size, Max(m, 1));	/* a batch never exceeds the rows */
	cq_pair    *pairs = palloc(cap * sizeof(cq_pair));
	double	   *res = palloc(cap * sizeof(double));
	/* the K passes' buffers of an uncertainty (score.h) */
	Size		extra = a->what == CORPQ_SCORE_UNCERTAINTY ? (Size) a->passes * 2 * sizeof(float) : 0;

	for (int i = 0; i < m; i++)
		in_order[i] = &order[i]->pair;
	for (int b = 0, nb; b < m; b += nb)
	{
		nb = corpq_score_batch_cut(s, in_order + b, m - b, a->batch_size, extra);
		for (int i = 0; i < nb; i++)
			pairs[i] = order[b + i]->pair;
		if (a->what == CORPQ_SCORE_UNCERTAINTY)
			corpq_score_uncertainty(s, pairs, nb, a->measure, a->passes, a->seed, res);
		else
		{
			corpq_score_forward(s, pairs, nb, NULL);
			for (int i = 0; i < nb; i++)
				res[i] = a->what == CORPQ_SCORE_SENT_PROB
					? exp(s->out.sent_logp[i] / s->out.sent_count[i])
					: s->out.sent_logp[i];
		}
		for (int i = 0; i < nb; i++)
			rows[order[b + i]->row].score = res[i];
	}
}

void
corpq_score_rows(CorpqModelSession *s, const CorpqScoreArgs *a, CorpqScoreRow *rows, int n,
				 CorpqScoreCounts *counts)
{
	MemoryContext scratch = AllocSetContextCreate(CurrentMemoryContext, "corpq score rows",
												  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(scratch);
	Encoded    *enc = palloc(Max(n, 1) * sizeof(Encoded));
	Encoded   **order = palloc(Max(n, 1) * sizeof(Encoded *));
	int			m = 0;

	for (int i = 0; i < n; i++)
	{
		CorpqScoreRow *r = &rows[i];

		CHECK_FOR_INTERRUPTS();
		counts->rows++;
		r->null = true;
		if (r->src == NULL || r->tgt == NULL)
			counts->null_pairs++;
		else if (!corpq_model_session_encode(s, r->src, r->src_len, r->tgt, r->tgt_len,
									  a->on_too_long, &enc[m].pair))
			counts->too_long++;
		else
		{
			r->null = false;
			enc[m].row = i;
			order[m] = &enc[m];
			r->tokens = enc[m].pair.tgt_len + 1;
			counts->tokens += r->tokens;
			m++;
		}
	}
	counts->scored += m;
	qsort(order, m, sizeof(Encoded *), cmp_length);
	score_encoded(s, a, order, m, rows);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(scratch);
}

void
corpq_notice_too_long(const CorpqScoreCounts *counts, const char *what)
{
	if (counts->too_long == 0)
		return;
	ereport(NOTICE,
			(errmsg(INT64_FORMAT " of " INT64_FORMAT " pairs are longer than %s accepts: their scores are NULL",
					counts->too_long, counts->rows, what),
			 errhint("A last argument on_too_long 'error' stops at the first one and names the limit.")));
}

static const CorpqColumn corpus_columns[] = {
	{"id", CORPQ_COLUMN_INTEGER}, {"src", CORPQ_COLUMN_TEXT}, {"tgt", CORPQ_COLUMN_TEXT}
};

static const CorpqQuerySpec corpus_spec = {
	.what = "corpus", .columns = corpus_columns, .min_columns = 3, .max_columns = 3,
	.example = "SELECT id, src, tgt FROM my_corpus"
};

/* What the batch function needs: the scorer, the arguments, the result. */
typedef struct ScoreRun
{
	CorpqModelSession *s;
	const CorpqScoreArgs *a;
	CorpqScoreRow *rows;		/* [chunk] */
	CorpqScoreCounts counts;
	ReturnSetInfo *rsinfo;
} ScoreRun;

/* Score a chunk of the corpus (in the batch context), return it in order. */
static void
score_batch(void *arg, const CorpqBatch *batch)
{
	ScoreRun   *r = arg;
	CorpqScoreRow *rows = r->rows;
	int			n = (int) batch->n;

	for (int i = 0; i < n; i++)
	{
		if (!corpq_batch_text(batch, i, 2, &rows[i].src, &rows[i].src_len))
			rows[i].src = NULL;
		if (!corpq_batch_text(batch, i, 3, &rows[i].tgt, &rows[i].tgt_len))
			rows[i].tgt = NULL;
	}
	corpq_score_rows(r->s, r->a, rows, n, &r->counts);
	for (int i = 0; i < n; i++)
	{
		int64		id = 0;
		bool		id_null = !corpq_batch_int64(batch, i, 1, &id);
		Datum		values[2] = {Int64GetDatum(id), Float8GetDatum(rows[i].null ? 0 : rows[i].score)};
		bool		nulls[2] = {id_null, rows[i].null};

		tuplestore_putvalues(r->rsinfo->setResult, r->rsinfo->setDesc, values, nulls);
	}
}

/* corpq.score()'s arguments, in order (75_scoring.sql). */
static const char *const arg_names[] = {
	"model", "corpus", "what", "batch_size", "measure", "passes", "seed", "on_too_long"
};

static void
score_args(FunctionCallInfo fcinfo, CorpqScoreArgs *a)
{
	a->what = corpq_score_what_from_name(text_to_cstring(PG_GETARG_TEXT_PP(2)));
	a->batch_size = PG_GETARG_INT32(3);
	if (a->batch_size < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch_size must be at least 1, got %d", a->batch_size)));
	a->measure = corpq_measure_from_name(text_to_cstring(PG_GETARG_TEXT_PP(4)));
	a->passes = PG_GETARG_INT32(5);
	if (a->what == CORPQ_SCORE_UNCERTAINTY)
		corpq_check_passes(a->passes);
	a->seed = (uint64) PG_GETARG_INT64(6);
	a->on_too_long = corpq_too_long_arg(fcinfo, 7);
}

Datum
corpq_score(PG_FUNCTION_ARGS)
{
	char	   *model;
	char	   *query;
	CorpqScoreArgs a;
	ScoreRun	run = {0};
	int			chunk;

	/* not STRICT: a NULL argument is an error, not an empty result */
	for (int i = 0; i < PG_NARGS(); i++)
		corpq_require_arg(fcinfo, i, arg_names[i]);
	model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	score_args(fcinfo, &a);
	corpq_require_utf8();

	InitMaterializedSRF(fcinfo, 0);
	run.s = corpq_model_session_create(CurrentMemoryContext);
	corpq_model_session_use(run.s, model, false);
	/*
	 * Whole batches per chunk, and at least 1024 rows to sort by length; at
	 * most 32768 rows of text held at once, whatever batch_size says.
	 */
	chunk = Min(Max(1024, Min(a.batch_size, 1 << 16) * 8), 32768);
	run.a = &a;
	run.rows = MemoryContextAllocHuge(run.s->cxt, (Size) chunk * sizeof(CorpqScoreRow));
	run.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	(void) corpq_query_stream(query, &corpus_spec, chunk, score_batch, &run);
	corpq_notice_too_long(&run.counts, psprintf("model \"%s\"", run.s->cur->spec));
	return (Datum) 0;
}
