/*
 * A one-column text corpus query, streamed row by row (text.h):
 * vocabulary counts and BPE learning read their corpus this way.
 */
#include "postgres.h"

#include "pg/base/corpus_query.h"
#include "pg/base/errors.h"
#include "pg/text/text.h"

/* Rows fetched from a corpus cursor at a time. */
#define CORPUS_BATCH 1000

static const CorpqColumn corpus_column = {NULL, CORPQ_COLUMN_TEXT};

static const CorpqQuerySpec corpus_spec = {
	.what = "corpus", .columns = &corpus_column, .min_columns = 1, .max_columns = 1,
	.example = "SELECT src FROM my_corpus", .need_rows = true
};

typedef struct CorpusScan
{
	CorpqRowFn	fn;
	void	   *arg;
	int64		non_null;
} CorpusScan;

static void
scan_batch(void *arg, const CorpqBatch *b)
{
	CorpusScan  *st = arg;
	const char *s;
	int			len;

	for (uint64 i = 0; i < b->n; i++)
		if (corpq_batch_text(b, i, 1, &s, &len))
		{
			st->fn(st->arg, s, len);
			st->non_null++;
		}
}

int64
corpq_scan_corpus(const char *query, CorpqRowFn fn, void *arg)
{
	CorpusScan	st = {fn, arg, 0};

	corpq_query_stream(query, &corpus_spec, CORPUS_BATCH, scan_batch, &st);
	return st.non_null;
}

void
corpq_count_corpus(const char *query, cq_strmap *counts, MemoryContext cxt,
				   CorpqRowFn fn, void *arg)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	cq_code		rc = cq_strmap_init(counts, 1 << 16);

	MemoryContextSwitchTo(old);
	if (rc != CQ_OK)
		corpq_core_fail(rc, "out of memory", NULL);
	corpq_scan_corpus(query, fn, arg);
	if (counts->n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("corpus contains no words"),
				 errdetail("Every row is NULL, empty or whitespace.")));
}
