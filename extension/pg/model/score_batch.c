/*
 * corpq.score(model, corpus, what, ...): score a whole corpus query (id,
 * src, tgt) in batches.  Rows are read through an SPI cursor in chunks; a
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

#include "pg/base/base.h"
#include "pg/model/model_score.h"

PG_FUNCTION_INFO_V1(corpq_score);

typedef enum ScoreWhat
{
	SCORE_SENT_PROB,
	SCORE_SENT_LOGPROB,
	SCORE_UNCERTAINTY
} ScoreWhat;

typedef struct ChunkRow
{
	int64		id;
	bool		id_null;
	bool		pair_null;		/* src or tgt NULL: score NULL */
	cq_pair		pair;
	double		score;
} ChunkRow;

typedef struct ScoreArgs
{
	ScoreWhat	what;
	int			batch_size;
	cq_uncertainty measure;
	int			passes;
	uint64		seed;
} ScoreArgs;

/* corpq.score()'s arguments, in order (75_scoring.sql). */
static const char *const arg_names[] = {"model", "corpus", "what", "batch_size", "measure", "passes", "seed"};

static ScoreWhat
parse_what(const char *what)
{
	if (strcmp(what, "sent_prob") == 0)
		return SCORE_SENT_PROB;
	if (strcmp(what, "sent_logprob") == 0)
		return SCORE_SENT_LOGPROB;
	if (strcmp(what, "uncertainty") == 0)
		return SCORE_UNCERTAINTY;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown score \"%s\"", what),
			 errdetail("Valid scores: sent_prob, sent_logprob, uncertainty.")));
	pg_unreachable();
}

/* ERROR unless plan is one plain SELECT: before a cursor is opened on it. */
static void
check_corpus_plan(SPIPlanPtr plan)
{
	List	   *sources = SPI_plan_get_plan_sources(plan);
	bool		ok = list_length(sources) == 1;
	ListCell   *lc;

	if (ok)
	{
		CachedPlanSource *ps = linitial(sources);

		ok = ps->commandTag == CMDTAG_SELECT && ps->resultDesc != NULL;
		foreach(lc, ps->query_list)
		{
			Query	   *q = lfirst_node(Query, lc);

			if (q->commandType != CMD_SELECT || q->utilityStmt != NULL ||
				q->hasModifyingCTE || q->rowMarks != NIL)
				ok = false;
		}
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("corpus query must be a single SELECT"),
				 errhint("Pass a query such as 'SELECT id, src, tgt FROM my_corpus'.")));
}

/* ERROR unless the corpus returns (integer, text, text). */
static void
check_corpus_columns(TupleDesc desc)
{
	bool		ok = desc->natts == 3;

	for (int i = 0; ok && i < 3; i++)
	{
		Oid			t = getBaseType(TupleDescAttr(desc, i)->atttypid);

		ok = i == 0 ? (t == INT8OID || t == INT4OID || t == INT2OID)
			: (t == TEXTOID || t == VARCHAROID);
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("corpus query must return the columns (id bigint, src text, tgt text)"),
				 errhint("Cast the columns, e.g. 'SELECT id::bigint, src::text, tgt::text FROM my_corpus'.")));
}

static int64
get_id(Datum d, Oid type)
{
	if (type == INT8OID)
		return DatumGetInt64(d);
	if (type == INT4OID)
		return DatumGetInt32(d);
	return DatumGetInt16(d);
}

static int	cmp_length(const void *a, const void *b);

static int
cmp_length(const void *a, const void *b)
{
	const ChunkRow *x = *(ChunkRow *const *) a;
	const ChunkRow *y = *(ChunkRow *const *) b;
	int			lx = x->pair.src_len + x->pair.tgt_len;
	int			ly = y->pair.src_len + y->pair.tgt_len;

	return lx != ly ? (lx < ly ? -1 : 1) : (x < y ? -1 : x > y);
}

/* Score the non-NULL rows of a chunk, batch_size pairs at a time in length order. */
static void
score_chunk(CorpqScorer *s, const ScoreArgs *a, ChunkRow *rows, int n)
{
	ChunkRow  **order = palloc(n * sizeof(ChunkRow *));
	int			cap = Min(a->batch_size, Max(n, 1));	/* a batch never exceeds the chunk */
	cq_pair    *pairs = palloc(cap * sizeof(cq_pair));
	double	   *res = palloc(cap * sizeof(double));
	int			m = 0;

	for (int i = 0; i < n; i++)
		if (!rows[i].pair_null)
			order[m++] = &rows[i];
	qsort(order, m, sizeof(ChunkRow *), cmp_length);
	for (int b = 0, nb; b < m; b += nb)
	{
		long		src_pos = 0,
					tgt_pos = 0;

		/* up to batch_size pairs, within the core's positions per batch */
		for (nb = 0; b + nb < m && nb < a->batch_size; nb++)
		{
			src_pos += order[b + nb]->pair.src_len + 1;
			tgt_pos += order[b + nb]->pair.tgt_len + 1;
			if (nb > 0 && (src_pos > CQ_MAX_BATCH_POSITIONS || tgt_pos > CQ_MAX_BATCH_POSITIONS))
				break;
		}

		for (int i = 0; i < nb; i++)
			pairs[i] = order[b + i]->pair;
		if (a->what == SCORE_UNCERTAINTY)
			corpq_scorer_uncertainty(s, pairs, nb, a->measure, a->passes, a->seed, res);
		else
		{
			corpq_scorer_forward(s, pairs, nb, NULL);
			for (int i = 0; i < nb; i++)
				res[i] = a->what == SCORE_SENT_PROB
					? exp(s->out.sent_logp[i] / s->out.sent_count[i])
					: s->out.sent_logp[i];
		}
		for (int i = 0; i < nb; i++)
			order[b + i]->score = res[i];
	}
}

/* Copy and encode the fetched rows into rows[] (ids in CurrentMemoryContext). */
static int
read_chunk(CorpqScorer *s, ChunkRow *rows)
{
	TupleDesc	desc = SPI_tuptable->tupdesc;
	Oid			id_type = getBaseType(TupleDescAttr(desc, 0)->atttypid);
	int			n = (int) SPI_processed;

	for (int i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		bool		null_src,
					null_tgt;
		Datum		id = SPI_getbinval(tup, desc, 1, &rows[i].id_null);
		Datum		src = SPI_getbinval(tup, desc, 2, &null_src);
		Datum		tgt = SPI_getbinval(tup, desc, 3, &null_tgt);

		rows[i].id = rows[i].id_null ? 0 : get_id(id, id_type);
		rows[i].pair_null = null_src || null_tgt;
		if (!rows[i].pair_null)
		{
			text	   *st = DatumGetTextPP(src);
			text	   *tt = DatumGetTextPP(tgt);

			corpq_scorer_encode(s, VARDATA_ANY(st), VARSIZE_ANY_EXHDR(st),
								VARDATA_ANY(tt), VARSIZE_ANY_EXHDR(tt), &rows[i].pair);
		}
	}
	return n;
}

Datum
corpq_score(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *model;
	char	   *query;
	ScoreArgs	a;
	CorpqScorer *s;
	MemoryContext chunk_cxt,
				old;
	SPIPlanPtr	plan;
	Portal		portal;
	ChunkRow   *rows;
	int			chunk;

	/* not STRICT: a NULL argument is an error, not an empty result */
	for (int i = 0; i < PG_NARGS(); i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument %s of corpq.score() must not be null", arg_names[i])));
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
	if (a.what == SCORE_UNCERTAINTY)
		corpq_check_passes(a.passes);
	a.seed = (uint64) PG_GETARG_INT64(6);
	corpq_require_utf8();

	InitMaterializedSRF(fcinfo, 0);
	s = corpq_scorer_create(CurrentMemoryContext);
	corpq_scorer_use(s, model, false);
	/* whole batches per chunk, and at least 1024 rows to sort by length */
	chunk = Max(1024, Min(a.batch_size, 1 << 16) * 8);
	chunk_cxt = AllocSetContextCreate(CurrentMemoryContext, "corpq score chunk",
									  ALLOCSET_DEFAULT_SIZES);
	rows = MemoryContextAllocHuge(s->cxt, (Size) chunk * sizeof(ChunkRow));

	SPI_connect();
	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	check_corpus_plan(plan);
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	check_corpus_columns(portal->tupDesc);
	for (;;)
	{
		int			n;

		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, chunk);
		if (SPI_processed == 0)
			break;
		old = MemoryContextSwitchTo(chunk_cxt);
		n = read_chunk(s, rows);
		SPI_freetuptable(SPI_tuptable);
		score_chunk(s, &a, rows, n);
		MemoryContextSwitchTo(old);
		for (int i = 0; i < n; i++)
		{
			Datum		values[2] = {Int64GetDatum(rows[i].id), Float8GetDatum(rows[i].score)};
			bool		nulls[2] = {rows[i].id_null, rows[i].pair_null};

			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		MemoryContextReset(chunk_cxt);
	}
	SPI_cursor_close(portal);
	SPI_finish();
	return (Datum) 0;
}
