/*
 * The lexicon job's corpus: a (src, tgt) query streamed through an SPI
 * cursor, each side lowercased/segmented and its tokens interned into the
 * core's vocabularies (a hash map, no per-token SQL), as CSR arrays.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "pg/base/corpus_query.h"
#include "pg/base/errors.h"
#include "pg/lexicon/lexicon.h"

/* Rows fetched from the cursor at a time. */
#define BATCH_ROWS 1000

static const CorpqColumn columns[] = {{"src", CORPQ_COLUMN_TEXT}, {"tgt", CORPQ_COLUMN_TEXT}};

static const CorpqQuerySpec corpus_spec = {
	.what = "corpus", .columns = columns, .min_columns = 2, .max_columns = 2,
	.example = "SELECT src, tgt FROM my_bitext", .need_rows = true
};

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

void
lexicon_check_corpus_query(const char *query)
{
	(void) corpq_query_check(query, &corpus_spec);
}

typedef struct Reader
{
	LexCorpus  *c;
	CorpqJob   *job;
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
	cq_error	err;			/* filled by a failing call only */

	for (size_t i = 0; i < t->n; i++)
	{
		size_t		tl;
		const char *ts = cq_tokens_get(t, i, &tl);
		int32		id;

		if (cq_vocab_intern(v, ts, tl, &id, &err) != CQ_OK)
			corpq_core_error(&err, NULL, "could not read the corpus");
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

/* One batch of (src, tgt) rows: pairs with a NULL side are counted, not kept. */
static void
read_batch(void *arg, const CorpqBatch *b)
{
	Reader	   *r = arg;
	LexCorpus  *c = r->c;

	for (uint64 i = 0; i < b->n; i++)
	{
		const char *s,
				   *t;
		int			sl,
					tl;
		bool		have_s = corpq_batch_text(b, i, 1, &s, &sl);
		bool		have_t = corpq_batch_text(b, i, 2, &t, &tl);

		c->rows++;
		if (!have_s || !have_t)
		{
			c->null_rows++;
			continue;
		}
		c->src_tokens += add_side(r, c->src_vocab, &r->src, &r->src_off, true, s, sl);
		c->tgt_tokens += add_side(r, c->tgt_vocab, &r->tgt, &r->tgt_off, false, t, tl);
	}
	corpq_job_progress(r->job, "reading", (double) c->rows, 0, "rows",
					   psprintf("{\"src_vocab\": %d, \"tgt_vocab\": %d}",
								cq_vocab_size(c->src_vocab),
								cq_vocab_size(c->tgt_vocab)), false);
}

void
lexicon_read_corpus(CorpqJob *job, const char *query, const LexOptions *o,
					LexCorpus *c, MemoryContext cxt)
{
	Reader		r;
	MemoryContext old;
	cq_error err = {0};

	memset(&r, 0, sizeof(r));
	memset(c, 0, sizeof(*c));
	r.c = c;
	r.job = job;
	r.cxt = cxt;
	r.lowercase = o->lowercase;
	r.src.elt = r.tgt.elt = sizeof(int32);
	r.src_off.elt = r.tgt_off.elt = r.counts.elt = sizeof(int64);
	r.seg = corpq_segmenter_load(o->bpe, cxt);

	old = MemoryContextSwitchTo(cxt);
	if (cq_vocab_create(&c->src_vocab, &err) != CQ_OK ||
		cq_vocab_create(&c->tgt_vocab, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not read the corpus");
	*(int64 *) grow(&r.src_off, 1) = 0;
	*(int64 *) grow(&r.tgt_off, 1) = 0;
	r.src_off.n = r.tgt_off.n = 1;
	MemoryContextSwitchTo(old);

	corpq_query_stream(query, &corpus_spec, BATCH_ROWS, read_batch, &r);

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
