/*
 * Sets of (id, vector) to mine (embed.h): read from a user query or added by
 * a caller that computed the vectors, bounded by work_mem while they grow,
 * then ordered by id and normalised.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"

#include "pg/base/corpus_query.h"
#include "pg/base/errors.h"
#include "pg/embed/embed.h"

static const CorpqColumn columns[] = {
	{"id", CORPQ_COLUMN_INTEGER}, {"embedding", CORPQ_COLUMN_NAMED, "real[]"}
};

/* rows per fetch: a batch of 256-dimension vectors is 1 MB */
#define READ_BATCH 1000

/* vector, id, and the (id, row) pair of the sort */
static Size
row_bytes(int dim)
{
	return (Size) dim * sizeof(float) + sizeof(int64) + 2 * sizeof(int64);
}

Size
corpq_vector_set_bytes(const CorpqVectorSet *s)
{
	return (Size) s->cap * row_bytes(s->dim);
}

void
corpq_vector_set_init(CorpqVectorSet *s, const char *what, const CorpqVectorSet *other)
{
	memset(s, 0, sizeof(*s));
	s->what = what;
	s->other = other;
	s->cxt = CurrentMemoryContext;
}

static void
too_big(const CorpqVectorSet *s, Size need)
{
	const CorpqVectorSet *o = s->other;

	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("the vectors to mine need more than work_mem (%d kB)", work_mem),
			 errdetail("Reading %d %s vectors of dimension %d%s takes %zu kB "
					   "(a set growing is copied to an array twice its size).",
					   s->n + 1, s->what, s->dim,
					   o ? psprintf(" after %d %s vectors", o->n, o->what) : "",
					   (need + 1023) / 1024),
			 errhint("Raise work_mem for this query, or mine sets this large with "
					 "approximate neighbours (docs/embeddings.md, pgvector).")));
}

/*
 * Room for one more row, within work_mem with the other set.  The arrays
 * double; while repalloc copies them the old and the new both exist, and
 * both are counted, so the bound holds at every moment.
 */
static void
grow(CorpqVectorSet *s)
{
	Size		limit = (Size) work_mem * 1024,
				held = s->other ? corpq_vector_set_bytes(s->other) : 0,
				per_row = row_bytes(s->dim),
				fit = limit > held ? (limit - held) / per_row : 0;
	Size		old = s->cap;
	int			cap = s->cap > 0 ? s->cap * 2 : 256;

	if (old + s->n + 1 > fit || s->n >= INT_MAX / 2)
		too_big(s, held + (old + s->n + 1) * per_row);
	if (old + cap > fit)
		cap = (int) (fit - old);
	if (s->ids == NULL)
	{
		s->ids = MemoryContextAllocExtended(s->cxt, sizeof(int64) * cap, MCXT_ALLOC_HUGE);
		s->vecs = MemoryContextAllocExtended(s->cxt, sizeof(float) * s->dim * (Size) cap,
											 MCXT_ALLOC_HUGE);
	}
	else
	{
		s->ids = repalloc_huge(s->ids, sizeof(int64) * cap);
		s->vecs = repalloc_huge(s->vecs, sizeof(float) * s->dim * (Size) cap);
	}
	s->cap = cap;
}

void
corpq_vector_set_add(CorpqVectorSet *s, int64 id, const float *v, int dim)
{
	int			want = s->dim ? s->dim : s->other ? s->other->dim : 0;

	if (want != 0 && dim != want)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("embedding of %s id " INT64_FORMAT " has %d dimensions, not %d",
						s->what, id, dim, want),
				 errdetail("Every embedding to mine must have the dimension of the first one read.")));
	s->dim = dim;
	if (s->n == s->cap)
		grow(s);
	s->ids[s->n] = id;
	memcpy(s->vecs + (Size) s->n * dim, v, sizeof(float) * dim);
	s->n++;
}

/* The floats of one embedding, or ERROR naming its id. */
static const float *
embedding_floats(const CorpqVectorSet *s, int64 id, ArrayType *a, int *dim)
{
	if (ARR_NDIM(a) == 0 || (ARR_NDIM(a) == 1 && ARR_DIMS(a)[0] == 0))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("embedding of %s id " INT64_FORMAT " is empty", s->what, id)));
	if (ARR_NDIM(a) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("embedding of %s id " INT64_FORMAT " is a %d-dimensional array, not a vector",
						s->what, id, ARR_NDIM(a))));
	if (ARR_HASNULL(a) && array_contains_nulls(a))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("embedding of %s id " INT64_FORMAT " has a NULL element", s->what, id)));
	Assert(ARR_ELEMTYPE(a) == FLOAT4OID);
	*dim = ARR_DIMS(a)[0];
	return (const float *) ARR_DATA_PTR(a);
}

static void
add_batch(void *arg, const CorpqBatch *b)
{
	CorpqVectorSet *s = arg;

	for (uint64 i = 0; i < b->n; i++)
	{
		int64		id;
		Datum		d;
		int			dim;
		const float *v;

		/* a row without an id or an embedding takes no part, as in an aggregate */
		if (!corpq_batch_int64(b, i, 1, &id) || !corpq_batch_datum(b, i, 2, &d))
			continue;
		v = embedding_floats(s, id, DatumGetArrayTypeP(d), &dim);
		corpq_vector_set_add(s, id, v, dim);
	}
}

void
corpq_vector_set_read(CorpqVectorSet *s, const char *query)
{
	CorpqQuerySpec spec = {
		.what = s->what, .columns = columns, .min_columns = 2, .max_columns = 2,
		.example = "SELECT id, embedding FROM my_sentences", .need_rows = false
	};
	corpq_query_stream(query, &spec, READ_BATCH, add_batch, s);
}

/* ---- finishing: order by id, normalise ---- */

typedef struct IdRow
{
	int64		id;
	int64		row;
} IdRow;

static int
by_id(const void *a, const void *b)
{
	int64		x = ((const IdRow *) a)->id,
				y = ((const IdRow *) b)->id;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* Move row order[i].row to place i, in place, one cycle at a time. */
static void
permute(CorpqVectorSet *s, IdRow *order)
{
	float	   *tmp = palloc(sizeof(float) * s->dim);
	Size		bytes = sizeof(float) * s->dim;

	for (int i = 0; i < s->n; i++)
	{
		int			j = i;

		if (order[i].row < 0)
			continue;			/* placed by an earlier cycle */
		memcpy(tmp, s->vecs + (Size) i * s->dim, bytes);
		while (order[j].row != i)
		{
			int			from = (int) order[j].row;

			memcpy(s->vecs + (Size) j * s->dim, s->vecs + (Size) from * s->dim, bytes);
			order[j].row = -1;
			j = from;
		}
		memcpy(s->vecs + (Size) j * s->dim, tmp, bytes);
		order[j].row = -1;
		CHECK_FOR_INTERRUPTS();
	}
	pfree(tmp);
}

void
corpq_vector_set_finish(CorpqVectorSet *s)
{
	IdRow	   *order;
	size_t		bad = 0;
	cq_error	err;

	if (s->n == 0)
		return;
	order = palloc_extended(sizeof(IdRow) * s->n, MCXT_ALLOC_HUGE);
	for (int i = 0; i < s->n; i++)
		order[i] = (IdRow) {s->ids[i], i};
	qsort(order, s->n, sizeof(IdRow), by_id);
	for (int i = 0; i < s->n; i++)
	{
		if (i > 0 && order[i].id == order[i - 1].id)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("id " INT64_FORMAT " occurs twice in the %s query", order[i].id, s->what),
					 errhint("A mined pair names its vectors by id: give each vector its own.")));
		s->ids[i] = order[i].id;
	}
	permute(s, order);
	pfree(order);
	/* give back what the doubling left over: the other set may need it */
	if (s->cap > s->n)
	{
		s->ids = repalloc_huge(s->ids, sizeof(int64) * s->n);
		s->vecs = repalloc_huge(s->vecs, sizeof(float) * s->dim * (Size) s->n);
		s->cap = s->n;
	}
	if (cq_mine_normalize(s->vecs, s->n, s->dim, &bad, &err) != CQ_OK)
		corpq_core_error(&err, "Leave such rows out of the query.",
						 "embedding of %s id " INT64_FORMAT " cannot be normalised",
						 s->what, s->ids[bad]);
}
