/*
 * Writing lexicons in the catalog: a trained lexicon, inside the job's final
 * transaction (an existing version is deleted, cascading to its rows, and the
 * new one inserted, so readers switch atomically at commit; row sets go in
 * batches of arrays through unnest(), not one INSERT per row), and
 * corpq.lexicon_drop().  Rows carry the job's owner and are written as the
 * catalog owner after the checks (base/internal_sql.h).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "align/lexicon_io.h"
#include "pg/base/catalog.h"
#include "pg/base/internal_sql.h"
#include "pg/lexicon/lexicon.h"

#define BATCH 10000
#define MAX_COLS 4

/*
 * fast_align's ttable output keeps, per conditioning word, the entries with
 * t >= 10^beam * max t of the row; its default beam is -4.
 */
#define TTABLE_BEAM 1e-4

/*
 * The stored models keep t >= 1e-7: a dropped entry then scores the unseen
 * 1e-9 instead, changing a token's sum over source words by < n * 1e-7,
 * while the model shrinks several times (it is loaded per query by align()).
 */
#define MODEL_MIN_PROB 1e-7

typedef struct Batch
{
	CorpqJob   *job;
	const char *sql;			/* $1 lexicon, $2.. one array per column */
	const char *lexicon;
	const char *direction;		/* extra text parameter, or NULL */
	int			ncols;
	Oid			types[MAX_COLS];
	Datum	   *vals[MAX_COLS];
	bool	   *nulls[MAX_COLS];
	int			n;
	int64		written;
	int64		total;			/* for progress */
	MemoryContext cxt;			/* per-batch values */
} Batch;

static void
batch_init(Batch *b, CorpqJob *job, const char *lexicon, const char *sql,
		   int ncols, const Oid *types, int64 total)
{
	memset(b, 0, sizeof(*b));
	b->job = job;
	b->lexicon = lexicon;
	b->sql = sql;
	b->ncols = ncols;
	b->total = total;
	for (int c = 0; c < ncols; c++)
	{
		b->types[c] = types[c];
		b->vals[c] = palloc(BATCH * sizeof(Datum));
		b->nulls[c] = palloc0(BATCH * sizeof(bool));
	}
	b->cxt = AllocSetContextCreate(CurrentMemoryContext, "lexicon batch",
								   ALLOCSET_DEFAULT_SIZES);
}

static void
batch_flush(Batch *b)
{
	Oid			argtypes[2 + MAX_COLS];
	Datum		args[2 + MAX_COLS];
	int			nargs = 0;
	int			dims[1];
	int			lbs[1] = {1};
	int			rc;
	MemoryContext old;

	if (b->n == 0)
		return;
	old = MemoryContextSwitchTo(b->cxt);
	dims[0] = b->n;
	argtypes[nargs] = TEXTOID;
	args[nargs++] = CStringGetTextDatum(b->lexicon);
	if (b->direction)
	{
		argtypes[nargs] = TEXTOID;
		args[nargs++] = CStringGetTextDatum(b->direction);
	}
	for (int c = 0; c < b->ncols; c++)
	{
		int16		len;
		bool		byval;
		char		align;

		get_typlenbyvalalign(b->types[c], &len, &byval, &align);
		argtypes[nargs] = get_array_type(b->types[c]);
		args[nargs++] = PointerGetDatum(construct_md_array(b->vals[c], b->nulls[c], 1, dims, lbs,
														   b->types[c], len, byval, align));
	}
	rc = corpq_sql_as_owner(b->sql, nargs, argtypes, args, NULL, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "could not write lexicon rows: %s", SPI_result_code_string(rc));
	MemoryContextSwitchTo(old);
	b->written += b->n;
	b->n = 0;
	MemoryContextReset(b->cxt);
	corpq_job_progress(b->job, "writing", (double) b->written, (double) b->total,
					   "rows", NULL, false);
}

/* Start a row; returns its index into vals/nulls. */
static int
batch_row(Batch *b)
{
	if (b->n == BATCH)
		batch_flush(b);
	for (int c = 0; c < b->ncols; c++)
		b->nulls[c][b->n] = false;
	return b->n++;
}

static Datum
word_datum(Batch *b, cq_vocab *v, int32 id)
{
	MemoryContext old = MemoryContextSwitchTo(b->cxt);
	Datum		d = CStringGetTextDatum(cq_vocab_word(v, id));

	MemoryContextSwitchTo(old);
	return d;
}

/* Entries of one direction's table that fast_align would print. */
static int64
write_ttable(Batch *b, const cq_fa_model *md, bool reverse, cq_vocab *ev, cq_vocab *fv)
{
	const cq_ttable *t = &md->tt;
	int			ecol = reverse ? 1 : 0;
	int			fcol = reverse ? 0 : 1;
	int64		before = b->written + b->n;

	if (!md->probs_ready)
		return 0;
	b->direction = reverse ? "tgt-src" : "src-tgt";
	for (int32 e = 0; e <= t->n_e; e++)
	{
		double		maxp = 0;

		for (int64 q = t->row_off[e]; q < t->row_off[e + 1]; q++)
			maxp = Max(maxp, t->prob[q]);
		for (int64 q = t->row_off[e]; q < t->row_off[e + 1]; q++)
		{
			int			r;

			if (!(t->prob[q] > 0) || t->prob[q] < TTABLE_BEAM * maxp)
				continue;
			r = batch_row(b);
			if (e == t->n_e)
			{
				b->nulls[ecol][r] = true;
				b->vals[ecol][r] = (Datum) 0;
			}
			else
				b->vals[ecol][r] = word_datum(b, ev, e);
			b->vals[fcol][r] = word_datum(b, fv, t->col[q]);
			b->vals[2][r] = Float8GetDatum(Min(t->prob[q], 1.0));
		}
		if ((e & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	batch_flush(b);
	return b->written - before;
}

/* Name checks and removal of the previous version; returns the new version. */
static int
replace_previous(CorpqJob *job, const LexResult *r)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(r->name)};
	bool		isnull;
	int			version;

	if (corpq_sql_as_caller("SELECT version, owner::pg_catalog.oid "
							"FROM corpq.lexicons WHERE name OPERATOR(pg_catalog.=) $1",
							1, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.lexicons");
	if (SPI_processed == 0)
		return 1;
	version = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (!r->opt->replace)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("lexicon \"%s\" already exists", r->name),
				 errdetail("It was created while the job ran."),
				 errhint("Pass \"replace\": true in the options to replace it.")));
	if (!is_member_of_role(job->owner,
						   DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
														  SPI_tuptable->tupdesc, 2, &isnull))))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to replace lexicon \"%s\"", r->name),
				 errhint("Only members of the lexicon's owner role can replace it.")));
	if (corpq_sql_as_owner("DELETE FROM corpq.lexicons WHERE name OPERATOR(pg_catalog.=) $1",
						   1, argtypes, args, NULL, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete the previous version of lexicon \"%s\"", r->name);
	return version + 1;
}

static ArrayType *
words_array(cq_vocab *v)
{
	int32		n = cq_vocab_size(v);
	Datum	   *d = palloc(Max(n, 1) * sizeof(Datum));

	for (int32 i = 0; i < n; i++)
		d[i] = CStringGetTextDatum(cq_vocab_word(v, i));
	return construct_array(d, n, TEXTOID, -1, false, TYPALIGN_INT);
}

static ArrayType *
int8_array(const int64 *x, int32 n)
{
	Datum	   *d = palloc(Max(n, 1) * sizeof(Datum));

	for (int32 i = 0; i < n; i++)
		d[i] = Int64GetDatum(x ? x[i] : 0);
	return construct_array(d, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

static ArrayType *
float8_array(const double *x, int32 n)
{
	Datum	   *d = palloc(Max(n, 1) * sizeof(Datum));

	for (int32 i = 0; i < n; i++)
		d[i] = Float8GetDatum(x ? x[i] : 0.0);
	return construct_array(d, n, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

static void
write_header(CorpqJob *job, const LexResult *r, int version)
{
	const LexCorpus *c = r->corpus;
	Oid			t1[6] = {TEXTOID, INT4OID, TEXTOID, TEXTOID, INT8OID, OIDOID};
	Datum		a1[6];
	Oid			t2[7] = {TEXTOID, BYTEAOID, TEXTARRAYOID, TEXTARRAYOID, INT8ARRAYOID,
	INT8ARRAYOID, FLOAT8ARRAYOID};
	Datum		a2[7];
	size_t		size = cq_lexicon_serialized_size(r->lexicon, MODEL_MIN_PROB);
	bytea	   *blob;

	a1[0] = CStringGetTextDatum(r->name);
	a1[1] = Int32GetDatum(version);
	a1[2] = CStringGetTextDatum(lexicon_options_json(r->opt));
	a1[3] = CStringGetTextDatum(r->stats_json);
	a1[4] = Int64GetDatum(r->job_id);
	a1[5] = ObjectIdGetDatum(job->owner);
	if (corpq_sql_as_owner("INSERT INTO corpq.lexicons(name, version, options, stats, job, owner) "
						   "VALUES ($1, $2, $3::pg_catalog.jsonb, $4::pg_catalog.jsonb, $5, $6::pg_catalog.regrole)",
						   6, t1, a1, NULL, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into corpq.lexicons");

	if (size + VARHDRSZ > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("lexicon \"%s\" is too large to store: %zu bytes", r->name, size),
				 errhint("Train on fewer or shorter pairs, or with BPE to shrink the vocabularies.")));
	blob = palloc(VARHDRSZ + size);
	if (cq_lexicon_serialize(r->lexicon, MODEL_MIN_PROB, VARDATA(blob), size) != size)
		elog(ERROR, "could not serialise lexicon \"%s\"", r->name);
	SET_VARSIZE(blob, VARHDRSZ + size);
	a2[0] = a1[0];
	a2[1] = PointerGetDatum(blob);
	a2[2] = PointerGetDatum(words_array(c->src_vocab));
	a2[3] = PointerGetDatum(words_array(c->tgt_vocab));
	a2[4] = PointerGetDatum(int8_array(c->src_counts, c->bitext.src_vocab));
	a2[5] = PointerGetDatum(int8_array(r->dict->row_links, r->dict->row_links ? r->dict->n_src : c->bitext.src_vocab));
	a2[6] = PointerGetDatum(float8_array(r->dict->entropy, r->dict->entropy ? r->dict->n_src : c->bitext.src_vocab));
	if (corpq_sql_as_owner("INSERT INTO corpq.lexicon_models(lexicon, model, src_tokens, tgt_tokens, "
						   "src_counts, src_links, src_entropy) VALUES ($1, $2, $3, $4, $5, $6, $7)",
						   7, t2, a2, NULL, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into corpq.lexicon_models");
}

int64
lexicon_store(CorpqJob *job, const LexResult *r)
{
	const LexCorpus *c = r->corpus;
	const cq_lexdict *d = r->dict;
	Batch		b;
	int64		translations;
	int64		total = r->lexicon->fwd.tt.nnz + r->lexicon->rev.tt.nnz + 2 * d->nnz;
	static const Oid tt_types[3] = {TEXTOID, TEXTOID, FLOAT8OID};
	static const Oid dict_types[4] = {TEXTOID, TEXTOID, INT8OID, FLOAT8OID};
	static const Oid ent_types[3] = {TEXTOID, INT8OID, FLOAT8OID};

	write_header(job, r, replace_previous(job, r));

	batch_init(&b, job, r->name,
			   "INSERT INTO corpq.lexicon_translations(lexicon, direction, src, tgt, prob) "
			   "SELECT $1, $2, * FROM ROWS FROM (pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5))",
			   3, tt_types, total);
	translations = write_ttable(&b, &r->lexicon->fwd, false, c->src_vocab, c->tgt_vocab);
	translations += write_ttable(&b, &r->lexicon->rev, true, c->tgt_vocab, c->src_vocab);
	MemoryContextDelete(b.cxt);

	batch_init(&b, job, r->name,
			   "INSERT INTO corpq.lexicon_dictionary(lexicon, src, tgt, count, prob) "
			   "SELECT $1, * FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5))",
			   4, dict_types, total);
	for (int32 x = 0; x < d->n_src; x++)
		for (int64 q = d->row_off[x]; q < d->row_off[x + 1]; q++)
		{
			int			i = batch_row(&b);

			b.vals[0][i] = word_datum(&b, c->src_vocab, x);
			b.vals[1][i] = word_datum(&b, c->tgt_vocab, d->col[q]);
			b.vals[2][i] = Int64GetDatum(d->count[q]);
			b.vals[3][i] = Float8GetDatum(d->prob[q]);
		}
	batch_flush(&b);
	MemoryContextDelete(b.cxt);

	batch_init(&b, job, r->name,
			   "INSERT INTO corpq.lexicon_entropy(lexicon, src, links, entropy) "
			   "SELECT $1, * FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4))",
			   3, ent_types, total);
	for (int32 x = 0; x < d->n_src; x++)
	{
		int			i;

		if (d->row_links[x] <= 0)
			continue;
		i = batch_row(&b);
		b.vals[0][i] = word_datum(&b, c->src_vocab, x);
		b.vals[1][i] = Int64GetDatum(d->row_links[x]);
		b.vals[2][i] = Float8GetDatum(d->entropy[x]);
	}
	batch_flush(&b);
	MemoryContextDelete(b.cxt);
	return translations;
}

PG_FUNCTION_INFO_V1(corpq_lexicon_drop);

/* corpq.lexicon_drop(name): owner only; the trigger removes the row sets. */
Datum
corpq_lexicon_drop(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));

	corpq_catalog_drop(&corpq_kind_lexicon, name);
	PG_RETURN_BOOL(true);
}
