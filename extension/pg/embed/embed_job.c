/*
 * corpq.embed_job(model, corpus, target_table, options): submission in the
 * caller's backend, and the "embed" job, a row job (pg/jobs/row_job.h): the
 * corpus query's rows (id, sentence) are embedded in blocks -- each block's
 * sentences encoded, ordered by length and embedded batch by batch by
 * corpq_embed_rows (embed.h), the path of corpq.embed() -- and go into the
 * target as (id, embedding) in committed chunks, recorded in
 * corpq.row_job_chunks.  A sentence's vector does not depend on its batch, so
 * each equals corpq.embed(model@N, sentence) bit for bit and a job resumed
 * after a crash writes what an uninterrupted run writes.
 *
 * The vectors are real[]; the chunk's vectors reach the INSERT as an array
 * of corpq.real_vector (a domain over real[]: PostgreSQL has no arrays of
 * arrays), and a target column of a type real[] casts to on assignment
 * (pgvector's vector) takes them through that cast.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/base/options.h"
#include "pg/embed/embed.h"
#include "pg/jobs/row_job.h"

PG_FUNCTION_INFO_V1(corpq_embed_job);

/* ---- options ---- */


/* ---- the corpus and the target ---- */

static const CorpqColumn corpus_columns[] = {
	{"id", CORPQ_COLUMN_INTEGER}, {"sentence", CORPQ_COLUMN_TEXT}
};

static const CorpqQuerySpec corpus_spec = {
	.what = "corpus", .columns = corpus_columns, .min_columns = 2, .max_columns = 2,
	.example = "SELECT id, sentence FROM my_sentences ORDER BY id", .need_rows = false
};

static double embed_seconds(void *arg);
static void setup(CorpqRowJob *rj, void *arg);

static const char *const counters[] = {"embedded", "too_long", "tokens", NULL};

enum
{
	COUNT_EMBEDDED, COUNT_TOO_LONG, COUNT_TOKENS, N_COUNTS
};

static const CorpqRowJobKind kind = {
	.kind = "embed", .source = &corpus_spec, .target_example = "my_embeddings",
	.query_arg = "corpus", .counters = counters, .seconds = embed_seconds, .setup = setup,
	.phase = "embedding", .unit = "sentences", .done = "embedded"
};

/* corpq.real_vector, the domain over real[] the vectors travel as. */
static Oid
real_vector_type(void)
{
	Oid			nsp = corpq_schema_oid();
	Oid			type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
									   CStringGetDatum("real_vector"), ObjectIdGetDatum(nsp));

	if (!OidIsValid(type))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("type corpq.real_vector does not exist"),
				 errhint("The catalog is older than the library: ALTER EXTENSION corpq UPDATE.")));
	return type;
}

/* id bigint, then the vectors: real[], or a type real[] casts to on assignment. */
static void
target_columns(const char *column, CorpqRowJobColumn *c)
{
	memset(c, 0, sizeof(CorpqRowJobColumn) * 2);
	c[0].name = "id";
	c[0].type = INT8OID;
	c[0].type_name = "bigint";
	c[1].name = column;
	c[1].type = real_vector_type();
	c[1].type_name = "real[]";
	c[1].assign = true;
}

/* ---- submission ---- */

/*
 * At submission: ERROR unless the pinned model (given: as the caller named
 * it) is an encoder, read from the catalog (nothing is loaded); returns its
 * dimension.
 */
static int
encoder_dim(const char *model, const char *given)
{
	CorpqModelRef ref;
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	char	   *model_kind = NULL;
	int			d = 0;

	corpq_model_resolve(model, true, &ref);
	values[0] = Int64GetDatum(ref.id);
	SPI_connect();
	if (corpq_sql_as_caller("SELECT config OPERATOR(pg_catalog.->>) 'kind', "
							"(config OPERATOR(pg_catalog.->>) 'd_model')::pg_catalog.int4 "
							"FROM corpq.model_catalog WHERE id OPERATOR(pg_catalog.=) $1",
							1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.model_catalog");
	if (SPI_processed == 1)
	{
		bool		isnull;

		model_kind = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		d = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		if (isnull)
			d = 0;
	}
	if (model_kind == NULL || strcmp(model_kind, "encoder") != 0)
		corpq_embed_not_encoder(given, "corpq.embed_job");
	SPI_finish();
	return d;
}

/*
 * A target column of another type than real[] with a type modifier (pgvector's
 * vector(n), halfvec(n)) takes vectors of that dimension: ERROR at submission
 * rather than at the first chunk.
 */
typedef struct DimensionCheck
{
	const char *column;
	int			d;
} DimensionCheck;

static void
check_dimension(Oid target, const char *target_name, void *arg)
{
	const char *column = ((DimensionCheck *) arg)->column;
	int			d = ((DimensionCheck *) arg)->d;
	AttrNumber	att = get_attnum(target, column);
	Oid			type;
	int32		typmod;
	Oid			collation;

	get_atttypetypmodcoll(target, att, &type, &typmod, &collation);
	if (getBaseType(type) == FLOAT4ARRAYOID || typmod < 0 || d <= 0 || typmod == d)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("column %s of %s is of type %s, the model's vectors have %d dimensions",
					quote_identifier(column), target_name, format_type_with_typemod(type, typmod), d),
			 errhint("Give the column the model's dimension, or make it real[].")));
}

Datum
corpq_embed_job(PG_FUNCTION_ARGS)
{
	CorpqRowJobCall call;
	CorpqRowJobSubmit sub = {0};
	CorpqEmbedJobOptions o;
	CorpqRowJobColumn columns[2];
	DimensionCheck dim;

	corpq_row_job_call(fcinfo, &kind, &call);
	corpq_options_parse(&corpq_embed_job_options, call.options, &o);
	corpq_require_utf8();
	/* the version of now: a version committed while the job runs changes nothing */
	sub.model = corpq_model_pin(call.model);
	dim.column = o.column;
	dim.d = encoder_dim(sub.model, call.model);
	target_columns(o.column, columns);
	sub.columns = columns;
	sub.n_columns = 2;
	sub.skip_existing = o.skip_existing;
	sub.check_target = check_dimension;
	sub.arg = &dim;
	sub.options_json = corpq_options_json(&corpq_embed_job_options, &o);
	sub.threads = o.threads;
	sub.foreign_target = o.foreign_target;
	sub.version_column = o.version_column;
	{
		int64		id = corpq_row_job_submit(&kind, &call, &sub);

		/* skip_existing, no row missing: no job (row_job.h) */
		if (id == 0)
			PG_RETURN_NULL();
		PG_RETURN_INT64(id);
	}
}

/* ---- the job ---- */

/* One row of a block: the sentence as read. */
typedef struct BlockRow
{
	int64		id;
	uint64		mark;
	const char *text;			/* NULL: a NULL sentence */
	int			len;
} BlockRow;

typedef struct EmbedRun
{
	CorpqJob   *job;
	CorpqEmbedJobOptions o;
	char	   *model;			/* name@N */
	CorpqModelSession *session;
	int			dim;
	CorpqRowJob *rj;
	MemoryContext block_cxt;
	BlockRow   *rows;
	int			n;
} EmbedRun;

static double
embed_seconds(void *arg)
{
	return corpq_row_job_compute_seconds(((EmbedRun *) arg)->rj);
}

static void
read_rows(void *arg, const CorpqBatch *b, const uint64 *marks)
{
	EmbedRun   *r = arg;
	MemoryContext old = MemoryContextSwitchTo(r->block_cxt);

	for (uint64 i = 0; i < b->n; i++)
	{
		BlockRow   *row = &r->rows[r->n++];
		const char *s;
		int			len;

		(void) corpq_batch_int64(b, i, 1, &row->id);	/* never NULL: the row job checked */
		row->mark = marks[i];
		row->text = NULL;
		row->len = 0;
		/* the batch's values go with the fetch */
		if (corpq_batch_text(b, i, 2, &s, &len))
		{
			row->text = pnstrdup(s, len);
			row->len = len;
		}
	}
	MemoryContextSwitchTo(old);
}

/*
 * Embed the block's rows and put them into the target in the query's order
 * (chunks may commit): a NULL sentence and (on_too_long "null") one longer
 * than the model accepts get a NULL vector.
 */
static void
embed_block(EmbedRun *r)
{
	MemoryContext old = MemoryContextSwitchTo(r->block_cxt);
	CorpqEmbedArgs a = {.batch_size = r->o.batch_size, .on_too_long = r->o.on_too_long};
	CorpqEmbedRow *er = palloc0(sizeof(CorpqEmbedRow) * Max(r->n, 1));
	float	   *out = MemoryContextAllocHuge(r->block_cxt, sizeof(float) * Max(r->n, 1) * r->dim);

	for (int i = 0; i < r->n; i++)
	{
		er[i].text = r->rows[i].text;
		er[i].len = r->rows[i].len;
	}
	corpq_embed_rows(r->session, &a, er, r->n, out);
	MemoryContextSwitchTo(old);
	for (int i = 0; i < r->n; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, er[i].null};
		int64		counts[N_COUNTS] = {0};

		values[0] = Int64GetDatum(r->rows[i].id);
		values[1] = (Datum) 0;
		if (!er[i].null)
		{
			MemoryContextSwitchTo(corpq_row_job_memory(r->rj));
			values[1] = corpq_embed_array(out + (Size) i * r->dim, r->dim);
			MemoryContextSwitchTo(old);
		}
		counts[COUNT_EMBEDDED] = !er[i].null;
		counts[COUNT_TOO_LONG] = er[i].null && r->rows[i].text != NULL;
		counts[COUNT_TOKENS] = er[i].null ? 0 : er[i].tokens;
		corpq_row_job_put(r->rj, values, nulls, r->rows[i].mark, counts);
	}
}

/* In the job's first transaction: the target's columns, the pinned model. */
static void
setup(CorpqRowJob *rj, void *arg)
{
	EmbedRun   *r = arg;
	CorpqRowJobColumn columns[2];

	target_columns(r->o.column, columns);
	corpq_row_job_columns(rj, columns, 2);
	r->session = corpq_model_session_create(CurrentMemoryContext);
	corpq_model_session_use(r->session, r->model, true);
	corpq_embed_require_encoder(r->session, "corpq.embed_job");
	r->dim = corpq_embed_dim(r->session);
}

static char *
kind_members(EmbedRun *r)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "\"model\": ");
	escape_json(&b, r->model);
	appendStringInfoString(&b, ", \"column\": ");
	escape_json(&b, r->o.column);
	appendStringInfo(&b, ", \"dimension\": %d, \"embed_seconds\": %.3f, \"skip_existing\": %s",
					 r->dim, corpq_row_job_compute_seconds(r->rj),
					 r->o.skip_existing ? "true" : "false");
	return b.data;
}

static void
embed_job(CorpqJob *job)
{
	MemoryContext cxt = CurrentMemoryContext;
	EmbedRun   *r = palloc0(sizeof(EmbedRun));
	int			n_block;

	r->job = job;
	r->model = corpq_job_arg(job, "model");
	corpq_options_parse_text(&corpq_embed_job_options, corpq_job_arg(job, "options"), &r->o);
	n_block = corpq_embed_block_rows(r->o.batch_size);
	r->rows = MemoryContextAllocHuge(cxt, sizeof(BlockRow) * n_block);
	r->block_cxt = AllocSetContextCreate(cxt, "corpq embed block", ALLOCSET_DEFAULT_SIZES);
	r->rj = corpq_row_job_begin(job, &kind, r->o.chunk_rows, r->o.skip_existing, r);
	corpq_row_job_start(r->rj);

	/* block by block; a full chunk commits inside embed_block */
	corpq_job_xact_begin(cxt);
	MemoryContextSwitchTo(cxt);
	while (corpq_row_job_fetch(r->rj, n_block, read_rows, r) > 0)
	{
		embed_block(r);
		r->n = 0;
		MemoryContextReset(r->block_cxt);
		corpq_row_job_progress(r->rj, false);
	}
	corpq_row_job_finish(r->rj, kind_members(r));
	corpq_job_xact_commit(cxt);
}

void
corpq_embed_init(void)
{
	corpq_job_register_kind("embed", embed_job, true);
}
