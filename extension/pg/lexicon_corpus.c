/*
 * The lexicon job's corpus: a (src, tgt) query streamed through an SPI
 * cursor, each side lowercased/segmented and its tokens interned into the
 * core's vocabularies (a hash map, no per-token SQL), as CSR arrays.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"

#include "pg/lexicon_catalog.h"

/* Rows fetched from the cursor at a time. */
#define BATCH_ROWS 1000

/* A growing array in the job's context. */
typedef struct Growing
{
	void	   *v;
	int64		n;
	int64		cap;
	size_t		elt;
} Growing;

static void *
grow(Growing *g, int64 extra)
{
	if (g->n + extra > g->cap)
	{
		int64		cap = Max(g->cap * 2, Max(g->n + extra, 4096));

		g->v = g->v ? repalloc_huge(g->v, cap * g->elt)
			: MemoryContextAllocHuge(CurrentMemoryContext, cap * g->elt);
		g->cap = cap;
	}
	return (char *) g->v + g->n * g->elt;
}

static void
check_plan(SPIPlanPtr plan)
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
		if (ok)
		{
			TupleDesc	d = ps->resultDesc;

			for (int i = 0; i < d->natts; i++)
			{
				Oid			t = getBaseType(TupleDescAttr(d, i)->atttypid);

				if (t != TEXTOID && t != VARCHAROID)
					ereport(ERROR,
							(errcode(ERRCODE_DATATYPE_MISMATCH),
							 errmsg("corpus query must return two text columns (src, tgt)"),
							 errdetail("Column %d has type %s.", i + 1,
									   format_type_be(TupleDescAttr(d, i)->atttypid)),
							 errhint("Cast the columns to text.")));
			}
			if (d->natts != 2)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("corpus query must return two text columns (src, tgt)"),
						 errdetail("It returns %d columns.", d->natts)));
		}
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("corpus query must be a single SELECT"),
				 errhint("Pass a query such as 'SELECT src, tgt FROM my_bitext'.")));
}

void
lexicon_check_corpus_query(const char *query)
{
	SPIPlanPtr	plan;

	SPI_connect();
	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	check_plan(plan);
	SPI_finish();
}

typedef struct Reader
{
	LexCorpus  *c;
	MemoryContext cxt;
	CorpqSegmenter *seg;
	bool		lowercase;
	Growing		src,
				src_off,
				tgt,
				tgt_off,
				counts;
} Reader;

/* Intern one side's tokens into ids; returns the number of tokens. */
static int64
add_side(Reader *r, cq_vocab *v, Growing *ids, Growing *off, bool count,
		 const char *text, int len)
{
	const cq_tokens *t = lexicon_tokenize(r->seg, r->lowercase, text, len);
	MemoryContext old = MemoryContextSwitchTo(r->cxt);
	int32	   *dst = grow(ids, t->n);

	for (size_t i = 0; i < t->n; i++)
	{
		size_t		tl;
		const char *ts = cq_tokens_get(t, i, &tl);
		int32		id = cq_vocab_intern(v, ts, tl);

		if (id < 0)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory interning corpus tokens")));
		dst[i] = id;
		if (count)
		{
			if (id >= r->counts.n)
			{
				int64	   *cnt = grow(&r->counts, id + 1 - r->counts.n);

				memset(cnt, 0, (id + 1 - r->counts.n) * sizeof(int64));
				r->counts.n = id + 1;
			}
			((int64 *) r->counts.v)[id]++;
		}
	}
	ids->n += t->n;
	*(int64 *) grow(off, 1) = ids->n;
	off->n++;
	MemoryContextSwitchTo(old);
	return t->n;
}

void
lexicon_read_corpus(CorpqJob *job, const char *query, const LexOptions *o,
					LexCorpus *c, MemoryContext cxt)
{
	SPIPlanPtr	plan;
	Portal		portal;
	Reader		r;
	MemoryContext old;
	cq_align_error err = {0};

	memset(&r, 0, sizeof(r));
	memset(c, 0, sizeof(*c));
	r.c = c;
	r.cxt = cxt;
	r.lowercase = o->lowercase;
	r.src.elt = r.tgt.elt = sizeof(int32);
	r.src_off.elt = r.tgt_off.elt = r.counts.elt = sizeof(int64);
	r.seg = corpq_segmenter_load(o->bpe, cxt);

	old = MemoryContextSwitchTo(cxt);
	c->src_vocab = cq_vocab_create(&err);
	c->tgt_vocab = cq_vocab_create(&err);
	if (!c->src_vocab || !c->tgt_vocab)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	*(int64 *) grow(&r.src_off, 1) = 0;
	*(int64 *) grow(&r.tgt_off, 1) = 0;
	r.src_off.n = r.tgt_off.n = 1;
	MemoryContextSwitchTo(old);

	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	check_plan(plan);
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, BATCH_ROWS);
		if (SPI_processed == 0)
			break;
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			bool		n1,
						n2;
			Datum		d1 = SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &n1);
			Datum		d2 = SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &n2);
			text	   *s,
					   *t;

			c->rows++;
			if (n1 || n2)
			{
				c->null_rows++;
				continue;
			}
			s = DatumGetTextPP(d1);
			t = DatumGetTextPP(d2);
			c->src_tokens += add_side(&r, c->src_vocab, &r.src, &r.src_off, true,
									  VARDATA_ANY(s), VARSIZE_ANY_EXHDR(s));
			c->tgt_tokens += add_side(&r, c->tgt_vocab, &r.tgt, &r.tgt_off, false,
									  VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
		}
		SPI_freetuptable(SPI_tuptable);
		corpq_job_progress(job, "reading", (double) c->rows, 0, "rows",
						   psprintf("{\"src_vocab\": %d, \"tgt_vocab\": %d}",
									cq_vocab_size(c->src_vocab),
									cq_vocab_size(c->tgt_vocab)), false);
	}
	SPI_cursor_close(portal);
	if (c->rows == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("corpus query returned no rows")));

	/* counts may be shorter than the vocabulary only when it is empty */
	old = MemoryContextSwitchTo(cxt);
	if (r.counts.n < cq_vocab_size(c->src_vocab))
	{
		int64		missing = cq_vocab_size(c->src_vocab) - r.counts.n;

		memset(grow(&r.counts, missing), 0, missing * sizeof(int64));
		r.counts.n += missing;
	}
	c->src_counts = r.counts.v ? r.counts.v : grow(&r.counts, 1);
	c->bitext.n_pairs = r.src_off.n - 1;
	c->bitext.src = r.src.v ? r.src.v : grow(&r.src, 1);
	c->bitext.src_off = r.src_off.v;
	c->bitext.tgt = r.tgt.v ? r.tgt.v : grow(&r.tgt, 1);
	c->bitext.tgt_off = r.tgt_off.v;
	c->bitext.src_vocab = cq_vocab_size(c->src_vocab);
	c->bitext.tgt_vocab = cq_vocab_size(c->tgt_vocab);
	MemoryContextSwitchTo(old);
}
