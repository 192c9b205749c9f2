/*
 * Training and dev corpora: a query returning (src, tgt) or (src, tgt,
 * label) streamed through an SPI cursor with the job owner's privileges,
 * each side segmented and encoded with the model's vocabularies into one
 * id array (no per-token SQL).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"

#include "pg/train/train.h"

/* Rows fetched from the cursor at a time. */
#define BATCH_ROWS 1000

static void
bad_query(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("%s query must be a single SELECT", what),
			 errhint("Pass a query such as 'SELECT src, tgt FROM my_bitext' or 'SELECT src, tgt, domain FROM my_bitext'.")));
}

/* One SELECT of 2 or 3 text columns; returns the column count. */
static int
check_plan(SPIPlanPtr plan, const char *what)
{
	List	   *sources = SPI_plan_get_plan_sources(plan);
	CachedPlanSource *ps;
	ListCell   *lc;
	TupleDesc	d;

	if (list_length(sources) != 1)
		bad_query(what);
	ps = linitial(sources);
	if (ps->commandTag != CMDTAG_SELECT || ps->resultDesc == NULL)
		bad_query(what);
	foreach(lc, ps->query_list)
	{
		Query	   *q = lfirst_node(Query, lc);

		if (q->commandType != CMD_SELECT || q->utilityStmt != NULL ||
			q->hasModifyingCTE || q->rowMarks != NIL)
			bad_query(what);
	}
	d = ps->resultDesc;
	if (d->natts < 2 || d->natts > 3)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s query must return two or three text columns (src, tgt[, label])", what),
				 errdetail("It returns %d columns.", d->natts)));
	for (int i = 0; i < d->natts; i++)
	{
		Oid			t = getBaseType(TupleDescAttr(d, i)->atttypid);

		if (t != TEXTOID && t != VARCHAROID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s query must return two or three text columns (src, tgt[, label])", what),
					 errdetail("Column %d has type %s.", i + 1,
							   format_type_be(TupleDescAttr(d, i)->atttypid)),
					 errhint("Cast the columns to text.")));
	}
	return d->natts;
}

void
train_check_query(const char *query, const char *what)
{
	SPIPlanPtr	plan;

	SPI_connect();
	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	(void) check_plan(plan, what);
	SPI_finish();
}

int
train_corpus_label(const TrainCorpus *c, const char *name)
{
	for (int i = 0; i < c->n_labels; i++)
		if (strcmp(c->labels[i], name) == 0)
			return i;
	return -1;
}

void
train_corpus_pair(const TrainCorpus *c, long i, cq_pair *p)
{
	p->src = c->ids + c->off[i];
	p->src_len = c->src_len[i];
	p->tgt = c->ids + c->off[i] + c->src_len[i];
	p->tgt_len = c->tgt_len[i];
	p->key = (uint64) i;
}

typedef struct Builder
{
	TrainCorpus *c;
	long		cap_pairs;
	int64		n_ids;
	int64		cap_ids;
	int			cap_labels;
} Builder;

static int
intern_label(Builder *b, const char *name)
{
	TrainCorpus *c = b->c;
	int			i = train_corpus_label(c, name);

	if (i >= 0)
		return i;
	if (c->n_labels == b->cap_labels)
	{
		b->cap_labels = Max(8, b->cap_labels * 2);
		c->labels = c->labels ? repalloc(c->labels, sizeof(char *) * b->cap_labels)
			: palloc(sizeof(char *) * b->cap_labels);
	}
	c->labels[c->n_labels] = pstrdup(name);
	return c->n_labels++;
}

/* Append one encoded pair (in the corpus context). */
static void
add_pair(Builder *b, const int32 *src, int n, const int32 *tgt, int m, int label)
{
	TrainCorpus *c = b->c;
	long		i = c->n_pairs;

	if (i == b->cap_pairs)
	{
		b->cap_pairs = Max(4096, b->cap_pairs * 2);
		c->off = repalloc_huge(c->off, sizeof(int64) * b->cap_pairs);
		c->src_len = repalloc_huge(c->src_len, sizeof(int) * b->cap_pairs);
		c->tgt_len = repalloc_huge(c->tgt_len, sizeof(int) * b->cap_pairs);
		c->label = repalloc_huge(c->label, sizeof(int) * b->cap_pairs);
	}
	if (b->n_ids + n + m > b->cap_ids)
	{
		b->cap_ids = Max(b->cap_ids * 2, b->n_ids + n + m);
		c->ids = repalloc_huge(c->ids, sizeof(int32) * b->cap_ids);
	}
	c->off[i] = b->n_ids;
	memcpy(c->ids + b->n_ids, src, sizeof(int32) * n);
	memcpy(c->ids + b->n_ids + n, tgt, sizeof(int32) * m);
	b->n_ids += n + m;
	c->src_len[i] = n;
	c->tgt_len[i] = m;
	c->label[i] = label;
	c->tgt_tokens += m;
	c->n_pairs++;
}

static void
read_row(Builder *b, HeapTuple tup, TupleDesc desc, CorpqVocab *sv, CorpqVocab *tv,
		 int max_positions, MemoryContext cxt)
{
	TrainCorpus *c = b->c;
	bool		n1,
				n2,
				n3 = true;
	Datum		d1 = SPI_getbinval(tup, desc, 1, &n1);
	Datum		d2 = SPI_getbinval(tup, desc, 2, &n2);
	Datum		d3 = desc->natts == 3 ? SPI_getbinval(tup, desc, 3, &n3) : (Datum) 0;
	text	   *s,
			   *t;
	int32	   *src,
			   *tgt;
	int			n,
				m;
	MemoryContext old;
	int			label;
	const char *name;

	c->rows++;
	if (n1 || n2)
	{
		c->null_rows++;
		return;
	}
	s = DatumGetTextPP(d1);
	t = DatumGetTextPP(d2);
	src = corpq_vocab_encode_text(sv, VARDATA_ANY(s), VARSIZE_ANY_EXHDR(s), &n);
	tgt = corpq_vocab_encode_text(tv, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &m);
	/* </s> is appended to both sides: each must fit max_positions with it */
	if (n + 1 > max_positions || m + 1 > max_positions)
	{
		c->too_long++;
		return;
	}
	name = n3 ? TRAIN_DEFAULT_LABEL : TextDatumGetCString(d3);
	old = MemoryContextSwitchTo(cxt);
	label = intern_label(b, name);
	add_pair(b, src, n, tgt, m, label);
	MemoryContextSwitchTo(old);
}

void
train_read_corpus(CorpqJob *job, const char *query, const char *what,
				  CorpqVocab *sv, CorpqVocab *tv, int max_positions,
				  TrainCorpus *c, MemoryContext cxt)
{
	SPIPlanPtr	plan;
	Portal		portal;
	Builder		b;
	MemoryContext rows_cxt = AllocSetContextCreate(CurrentMemoryContext, "corpq train rows",
												   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old;

	memset(c, 0, sizeof(*c));
	memset(&b, 0, sizeof(b));
	b.c = c;
	b.cap_pairs = 16;
	b.cap_ids = 1024;
	c->off = MemoryContextAllocHuge(cxt, sizeof(int64) * b.cap_pairs);
	c->src_len = MemoryContextAllocHuge(cxt, sizeof(int) * b.cap_pairs);
	c->tgt_len = MemoryContextAllocHuge(cxt, sizeof(int) * b.cap_pairs);
	c->label = MemoryContextAllocHuge(cxt, sizeof(int) * b.cap_pairs);
	c->ids = MemoryContextAllocHuge(cxt, sizeof(int32) * b.cap_ids);

	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	(void) check_plan(plan, what);
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, BATCH_ROWS);
		if (SPI_processed == 0)
			break;
		old = MemoryContextSwitchTo(rows_cxt);
		for (uint64 i = 0; i < SPI_processed; i++)
			read_row(&b, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, sv, tv,
					 max_positions, cxt);
		MemoryContextSwitchTo(old);
		MemoryContextReset(rows_cxt);
		SPI_freetuptable(SPI_tuptable);
		corpq_job_progress(job, "reading", (double) c->rows, 0, "rows",
						   psprintf("{\"query\": \"%s\", \"pairs\": %ld, \"too_long\": " INT64_FORMAT "}",
									what, c->n_pairs, c->too_long), false);
	}
	SPI_cursor_close(portal);
	MemoryContextDelete(rows_cxt);
}
