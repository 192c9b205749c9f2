/*
 * Sets of (id, vector) to mine (embed.h): read from a user query or added by
 * a caller that computed the vectors, bounded by work_mem while they grow,
 * then ordered by id and normalised.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/buffile.h"
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
	/* in a file: the ids and, while it is ordered, the (id, row) pairs */
	if (s->file)
		return (Size) s->cap * 3 * sizeof(int64);
	return (Size) s->cap * row_bytes(s->dim);
}

double
corpq_mine_floor_bytes(double n, double m, int k, int dim)
{
	cq_mine_options one;

	cq_mine_options_default(&one);
	one.k = k;
	one.block_rows = one.block_cols = 1;
	return n * (8.0 * k + 8 + 2 * sizeof(int64) + sizeof(cq_mine_pair))	/* list, mean, id and
																		 * its sort, pair */
		+ m * (8.0 * k + 8 + 2 * sizeof(int64) + sizeof(int32))	/* list, mean, id, best
																 * source */
		+ 3.0 * CORPQ_VECTOR_FILE_BYTES		/* a set's files while it is ordered, the other's */
		+ 8.0 * dim + (double) cq_mine_knn_block_bytes(1, 1, dim, &one);	/* the
																		 * smallest blocks */
}

void
corpq_vector_set_init(CorpqVectorSet *s, const char *what, const CorpqVectorSet *other, int k)
{
	memset(s, 0, sizeof(*s));
	s->what = what;
	s->other = other;
	s->k = k;
	s->cxt = CurrentMemoryContext;
}

/* What mining must hold whatever happens, with rows vectors in this set. */
static double
floor_with(const CorpqVectorSet *s, double rows)
{
	return s->other ? corpq_mine_floor_bytes(s->other->n, rows, s->k, s->dim)
		: corpq_mine_floor_bytes(rows, 0, s->k, s->dim);
}

/* The other set's vectors while they are in memory (its ids: in the floor). */
static double
other_vectors(const CorpqVectorSet *s)
{
	const CorpqVectorSet *o = s->other;

	return o && !o->file ? (double) o->cap * o->dim * sizeof(float) : 0;
}

static void
too_big(const CorpqVectorSet *s, double need)
{
	const CorpqVectorSet *o = s->other;

	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("mining needs more than work_mem (%d kB) in memory", work_mem),
			 errdetail("Reading %d %s vectors of dimension %d%s with k = %d needs %.0f kB: "
					   "past work_mem the vectors go to a temporary file, but the k-NN lists "
					   "(8 (k + 1) bytes a vector), the ids and the pairs stay in memory.",
					   s->n + 1, s->what, s->dim,
					   o ? psprintf(" after %d %s vectors", o->n, o->what) : "",
					   s->k, ceil(need / 1024)),
			 errhint("Raise work_mem for this query, lower k, or mine sets this large with "
					 "approximate neighbours (docs/embeddings.md, pgvector).")));
}

/* A new temporary file in the set's context. */
static BufFile *
new_file(const CorpqVectorSet *s)
{
	MemoryContext old = MemoryContextSwitchTo(s->cxt);
	BufFile    *f = BufFileCreateTemp(false);

	MemoryContextSwitchTo(old);
	return f;
}

/* Write rows vectors of the set's dimension from v to f. */
static void
write_rows(const CorpqVectorSet *s, BufFile *f, const float *v, Size rows)
{
	BufFileWrite(f, (void *) v, rows * s->dim * sizeof(float));
}

/* Read rows vectors of the set's dimension from f into v, or ERROR. */
static void
read_rows(const CorpqVectorSet *s, BufFile *f, float *v, Size rows)
{
	Size		want = rows * s->dim * sizeof(float);

	if (BufFileRead(f, v, want) != want)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read %zu %s vectors from a temporary file", rows, s->what)));
}

/* Go on in a file: the rows held so far are written to it, their memory freed. */
static void
to_file(CorpqVectorSet *s)
{
	s->file = new_file(s);
	/* none yet when the other set left no room for even one row in memory */
	if (s->vecs)
	{
		write_rows(s, s->file, s->vecs, s->n);
		pfree(s->vecs);
		s->vecs = NULL;
	}
}

/*
 * Room for one more row, within work_mem with the other set.  In memory the
 * arrays double; while repalloc copies them the old and the new both exist,
 * and both are counted, so the bound holds at every moment; a set that would
 * pass it goes on in a file, where only its ids grow.  What must stay in
 * memory whatever the blocks (corpq_mine_floor_bytes) is counted in both
 * cases: past it, ERROR.
 */
static void
grow(CorpqVectorSet *s)
{
	double		limit = (double) work_mem * 1024,
				must = floor_with(s, (double) s->n + 1),
				per_row_must = floor_with(s, (double) s->n + 2) - must,
				avail = limit - other_vectors(s) - must;
	int			cap = s->cap > 0 ? s->cap * 2 : 256;
	double		most;

	if (avail < 0 || s->n >= INT_MAX / 2)
		too_big(s, must + other_vectors(s));
	/* no more rows than the floor allows: the next row past it is refused */
	most = (double) s->n + 1 + floor(avail / per_row_must);
	if (cap > most)
		cap = (int) most;
	if (!s->file)
	{
		double		per_row = (double) s->dim * sizeof(float) + sizeof(int64);
		/*
		 * the largest cap with the old and the new arrays (while repalloc
		 * copies) and the floor of cap rows within the limit
		 */
		double		fit = floor((avail - per_row * s->cap + per_row_must * (s->n + 1)) /
								(per_row + per_row_must));

		if (fit < (double) s->n + 1)
			to_file(s);
		else if (cap > fit)
			cap = (int) fit;
	}
	if (s->ids == NULL)
		s->ids = MemoryContextAllocExtended(s->cxt, sizeof(int64) * cap, MCXT_ALLOC_HUGE);
	else
		s->ids = repalloc_huge(s->ids, sizeof(int64) * cap);
	if (!s->file)
	{
		if (s->vecs == NULL)
			s->vecs = MemoryContextAllocExtended(s->cxt, sizeof(float) * s->dim * (Size) cap,
												 MCXT_ALLOC_HUGE);
		else
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
	if (s->file)
		write_rows(s, s->file, v, 1);
	else
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

/*
 * Order a set in a file: its rows read in id order (a seek each) into a
 * second file, normalised on the way; the first file is closed.
 */
static void
finish_file(CorpqVectorSet *s, IdRow *order)
{
	BufFile    *sorted = new_file(s);
	float	   *row = palloc(sizeof(float) * s->dim);
	size_t		bad = 0;
	cq_error	err;

	for (int i = 0; i < s->n; i++)
	{
		if (BufFileSeek(s->file, 0, (off_t) order[i].row * s->dim * sizeof(float), SEEK_SET) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not seek to %s vector %d of %d in a temporary file",
							s->what, (int) order[i].row + 1, s->n)));
		read_rows(s, s->file, row, 1);
		if (cq_mine_normalize(row, 1, s->dim, &bad, &err) != CQ_OK)
			corpq_core_error(&err, "Leave such rows out of the query.",
							 "embedding of %s id " INT64_FORMAT " cannot be normalised",
							 s->what, order[i].id);
		write_rows(s, sorted, row, 1);
		if (i % 1024 == 0)
			CHECK_FOR_INTERRUPTS();
	}
	pfree(row);
	BufFileClose(s->file);
	s->file = sorted;
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
	if (s->file)
	{
		finish_file(s, order);
		pfree(order);
		if (s->cap > s->n)
		{
			s->ids = repalloc_huge(s->ids, sizeof(int64) * s->n);
			s->cap = s->n;
		}
		return;
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

void
corpq_vector_set_spill(CorpqVectorSet *s)
{
	if (s->file || s->n == 0)
		return;
	to_file(s);
	corpq_vector_set_rewind(s);
}

void
corpq_vector_set_rewind(CorpqVectorSet *s)
{
	Assert(s->file);
	if (BufFileSeek(s->file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind the temporary file of the %s vectors", s->what)));
}

void
corpq_vector_set_next(CorpqVectorSet *s, float *dst, int rows)
{
	read_rows(s, s->file, dst, rows);
}

void
corpq_vector_set_close(CorpqVectorSet *s)
{
	if (s->file)
		BufFileClose(s->file);
	s->file = NULL;
}
