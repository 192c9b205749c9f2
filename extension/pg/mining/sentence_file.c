/*
 * A side's sentences kept while mining for the classifier to judge
 * (mining.h): each sentence written to a temporary file as it is read (a
 * 4-byte length, then its bytes), its id and offset kept in memory; once
 * the side is read, the offsets are ordered by id, so that the i-th is the
 * sentence at position i of the side's vector set (which orders by id and
 * refuses duplicate ids).  A sentence is read back with one seek.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/buffile.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "pg/mining/mining.h"

void
corpq_sentence_file_init(CorpqSentenceFile *f)
{
	MemoryContext old;

	memset(f, 0, sizeof(*f));
	f->cxt = CurrentMemoryContext;
	old = MemoryContextSwitchTo(f->cxt);
	f->file = BufFileCreateTemp(false);
	MemoryContextSwitchTo(old);
}

void
corpq_sentence_file_add(CorpqSentenceFile *f, int64 id, const char *text, int len)
{
	int32		l = len;

	if (f->n == f->cap)
	{
		int			cap = Max(1024, f->cap * 2);

		if (f->ids == NULL)
		{
			f->ids = MemoryContextAllocHuge(f->cxt, sizeof(int64) * cap);
			f->offsets = MemoryContextAllocHuge(f->cxt, sizeof(int64) * (cap + 1));
			f->offsets[0] = 0;
		}
		else
		{
			f->ids = repalloc_huge(f->ids, sizeof(int64) * cap);
			f->offsets = repalloc_huge(f->offsets, sizeof(int64) * (cap + 1));
		}
		f->cap = cap;
	}
	BufFileWrite(f->file, &l, sizeof(l));
	BufFileWrite(f->file, (void *) text, len);
	f->ids[f->n] = id;
	/* offsets[n] is where this record starts; offsets[n + 1] the next */
	f->offsets[f->n + 1] = f->offsets[f->n] + (int64) sizeof(l) + len;
	f->n++;
}

typedef struct IdOffset
{
	int64		id;
	int64		offset;
} IdOffset;

static int
cmp_id(const void *a, const void *b)
{
	int64		x = ((const IdOffset *) a)->id,
				y = ((const IdOffset *) b)->id;

	return x < y ? -1 : x > y;
}

void
corpq_sentence_file_finish(CorpqSentenceFile *f)
{
	IdOffset   *order;

	if (f->n == 0)
		return;
	order = MemoryContextAllocHuge(f->cxt, sizeof(IdOffset) * f->n);
	for (int i = 0; i < f->n; i++)
		order[i] = (IdOffset) {f->ids[i], f->offsets[i]};
	qsort(order, f->n, sizeof(IdOffset), cmp_id);
	for (int i = 0; i < f->n; i++)
		f->offsets[i] = order[i].offset;
	pfree(order);
	pfree(f->ids);
	f->ids = NULL;
}

text *
corpq_sentence_file_get(CorpqSentenceFile *f, int i)
{
	int32		len;
	text	   *t;

	Assert(i >= 0 && i < f->n && f->ids == NULL);
	if (BufFileSeek(f->file, 0, (off_t) f->offsets[i], SEEK_SET) != 0 ||
		BufFileRead(f->file, &len, sizeof(len)) != sizeof(len) || len < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read sentence %d of %d from a temporary file", i + 1, f->n)));
	t = palloc(VARHDRSZ + len);
	SET_VARSIZE(t, VARHDRSZ + len);
	if (len > 0 && BufFileRead(f->file, VARDATA(t), len) != (size_t) len)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read sentence %d of %d from a temporary file", i + 1, f->n)));
	return t;
}

double
corpq_sentence_file_bytes(int n)
{
	return (double) sizeof(int64) * n + BLCKSZ + 1024;
}

void
corpq_sentence_file_close(CorpqSentenceFile *f)
{
	if (f->file)
		BufFileClose(f->file);
	f->file = NULL;
}
