/*
 * Training and dev corpora: a query returning (src, tgt) or (src, tgt,
 * label) streamed through an SPI cursor with the job owner's privileges,
 * each side segmented and encoded with the model's vocabularies into one
 * id array (no per-token SQL).
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/memutils.h"

#include "pg/base/corpus_query.h"
#include "pg/train/train.h"

/* Rows fetched from the cursor at a time. */
#define BATCH_ROWS 1000

static const CorpqColumn columns[] = {
	{"src", CORPQ_COLUMN_TEXT}, {"tgt", CORPQ_COLUMN_TEXT}, {"label", CORPQ_COLUMN_TEXT}
};

/* The corpus or dev query: (src, tgt[, label]); what names it in messages. */
static CorpqQuerySpec
query_spec(const char *what)
{
	CorpqQuerySpec spec = {
		.what = what, .columns = columns, .min_columns = 2, .max_columns = 3,
		.example = "SELECT src, tgt, domain FROM my_bitext"
	};

	return spec;
}

int
train_check_query(const char *query, const char *what)
{
	CorpqQuerySpec spec = query_spec(what);

	return corpq_query_check(query, &spec);
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
	CorpqJob   *job;
	const char *what;
	CorpqVocab *sv;
	CorpqVocab *tv;
	int			max_positions;
	MemoryContext cxt;			/* the corpus's */
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

/* One row of the query (in the batch context). */
static void
read_row(Builder *b, const CorpqBatch *batch, uint64 r)
{
	TrainCorpus *c = b->c;
	const char *s,
			   *t,
			   *l;
	int			s_len,
				t_len,
				l_len;
	int32	   *src,
			   *tgt;
	int			n,
				m;
	MemoryContext old;
	int			label;
	const char *name;

	c->rows++;
	if (!corpq_batch_text(batch, r, 1, &s, &s_len) || !corpq_batch_text(batch, r, 2, &t, &t_len))
	{
		c->null_rows++;
		return;
	}
	src = corpq_vocab_encode_text(b->sv, s, s_len, &n);
	tgt = corpq_vocab_encode_text(b->tv, t, t_len, &m);
	/* </s> is appended to both sides: each must fit max_positions with it */
	if (n + 1 > b->max_positions || m + 1 > b->max_positions)
	{
		c->too_long++;
		return;
	}
	/* a NULL label is the default one */
	name = batch->n_columns == 3 && corpq_batch_text(batch, r, 3, &l, &l_len) ?
		pnstrdup(l, l_len) : TRAIN_DEFAULT_LABEL;
	old = MemoryContextSwitchTo(b->cxt);
	label = intern_label(b, name);
	add_pair(b, src, n, tgt, m, label);
	MemoryContextSwitchTo(old);
}

static void
read_batch(void *arg, const CorpqBatch *batch)
{
	Builder    *b = arg;

	for (uint64 i = 0; i < batch->n; i++)
		read_row(b, batch, i);
	corpq_job_progress(b->job, "reading", (double) b->c->rows, 0, "rows",
					   psprintf("{\"query\": \"%s\", \"pairs\": %ld, \"too_long\": " INT64_FORMAT "}",
								b->what, b->c->n_pairs, b->c->too_long), false);
}

void
train_read_corpus(CorpqJob *job, const char *query, const char *what,
				  CorpqVocab *sv, CorpqVocab *tv, int max_positions,
				  TrainCorpus *c, MemoryContext cxt)
{
	CorpqQuerySpec spec = query_spec(what);
	Builder		b;

	memset(c, 0, sizeof(*c));
	memset(&b, 0, sizeof(b));
	b.c = c;
	b.job = job;
	b.what = what;
	b.sv = sv;
	b.tv = tv;
	b.max_positions = max_positions;
	b.cxt = cxt;
	b.cap_pairs = 16;
	b.cap_ids = 1024;
	c->off = MemoryContextAllocHuge(cxt, sizeof(int64) * b.cap_pairs);
	c->src_len = MemoryContextAllocHuge(cxt, sizeof(int) * b.cap_pairs);
	c->tgt_len = MemoryContextAllocHuge(cxt, sizeof(int) * b.cap_pairs);
	c->label = MemoryContextAllocHuge(cxt, sizeof(int) * b.cap_pairs);
	c->ids = MemoryContextAllocHuge(cxt, sizeof(int32) * b.cap_ids);
	(void) corpq_query_stream(query, &spec, BATCH_ROWS, read_batch, &b);
}
