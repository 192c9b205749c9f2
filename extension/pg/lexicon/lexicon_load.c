/*
 * Loading a lexicon for the per-row SQL functions: one row of
 * corpq.lexicon_models (vocabularies, counts, entropies; the serialised
 * models only when a function aligns), cached in fn_extra for the query.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "align/lexicon_io.h"
#include "pg/base/catalog.h"
#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/lexicon/lexicon.h"

/* Elements of a one-dimensional array column (no NULLs expected). */
static Datum *
array_elems(HeapTuple tup, TupleDesc desc, int col, Oid elt, int *n)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);
	Datum	   *elems;
	bool	   *nulls;

	if (isnull)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("lexicon model row has a NULL column %d", col)));
	deconstruct_array(DatumGetArrayTypeP(d), elt,
					  elt == TEXTOID ? -1 : 8, elt == TEXTOID ? false : FLOAT8PASSBYVAL,
					  elt == TEXTOID ? TYPALIGN_INT : TYPALIGN_DOUBLE,
					  &elems, &nulls, n);
	for (int i = 0; i < *n; i++)
		if (nulls[i])
			ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
							errmsg("lexicon model row has a NULL element in column %d", col)));
	return elems;
}

/* Vocabulary whose ids are the array positions. */
static cq_vocab *
vocab_from(Datum *words, int n, const char *name)
{
	cq_error err = {0};
	cq_vocab   *v;

	if (cq_vocab_create(&v, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not load lexicon \"%s\"", name);
	for (int i = 0; i < n; i++)
	{
		text	   *t = DatumGetTextPP(words[i]);
		int32		id;

		if (cq_vocab_intern(v, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &id, &err) != CQ_OK)
			corpq_core_error(&err, NULL, "could not load lexicon \"%s\"", name);
		if (id != i)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("lexicon \"%s\" has a duplicate or invalid token at position %d", name, i + 1)));
	}
	return v;
}

static LexLoaded *
load(const char *name, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "corpq lexicon", ALLOCSET_DEFAULT_SIZES);
	LexLoaded  *lx = MemoryContextAllocZero(cxt, sizeof(LexLoaded));
	HeapTuple	tup;
	TupleDesc	desc;
	MemoryContext old;
	Datum	   *src,
			   *tgt,
			   *counts,
			   *links,
			   *entropy;
	int			n_src,
				n_tgt,
				n_counts,
				n_links,
				n_entropy;
	char	   *options;

	lx->cxt = cxt;
	lx->name = MemoryContextStrdup(cxt, name);
	SPI_connect();
	tup = corpq_catalog_row(&corpq_kind_lexicon,
							"SELECT l.options::text, m.src_tokens, m.tgt_tokens, m.src_counts, "
							"m.src_links, m.src_entropy FROM corpq.lexicons l "
							"JOIN corpq.lexicon_models m ON m.lexicon OPERATOR(pg_catalog.=) l.name "
							"WHERE l.name OPERATOR(pg_catalog.=) $1",
							name);
	desc = SPI_tuptable->tupdesc;
	options = SPI_getvalue(tup, desc, 1);
	src = array_elems(tup, desc, 2, TEXTOID, &n_src);
	tgt = array_elems(tup, desc, 3, TEXTOID, &n_tgt);
	counts = array_elems(tup, desc, 4, INT8OID, &n_counts);
	links = array_elems(tup, desc, 5, INT8OID, &n_links);
	entropy = array_elems(tup, desc, 6, FLOAT8OID, &n_entropy);
	if (n_counts != n_src || n_links != n_src || n_entropy != n_src)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("lexicon \"%s\" has arrays of different lengths", name)));

	old = MemoryContextSwitchTo(cxt);
	lexicon_options_parse(DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(options))),
						  &lx->opt);
	lx->src_vocab = vocab_from(src, n_src, name);
	lx->tgt_vocab = vocab_from(tgt, n_tgt, name);
	lx->src_counts = palloc(Max(n_src, 1) * sizeof(int64));
	lx->dict.n_src = n_src;
	lx->dict.n_tgt = n_tgt;
	lx->dict.row_links = palloc(Max(n_src, 1) * sizeof(int64_t));
	lx->dict.entropy = palloc(Max(n_src, 1) * sizeof(double));
	for (int i = 0; i < n_src; i++)
	{
		lx->src_counts[i] = DatumGetInt64(counts[i]);
		lx->src_total += lx->src_counts[i];
		lx->dict.row_links[i] = DatumGetInt64(links[i]);
		lx->dict.entropy[i] = DatumGetFloat8(entropy[i]);
	}
	MemoryContextSwitchTo(old);
	SPI_finish();
	lx->seg = corpq_segmenter_load(lx->opt.bpe, cxt);
	return lx;
}

static void
load_model(LexLoaded *lx)
{
	HeapTuple	row;
	bool		isnull;
	bytea	   *blob;
	MemoryContext old;
	cq_error err = {0};
	cq_code		rc;

	SPI_connect();
	row = corpq_catalog_row(&corpq_kind_lexicon,
							"SELECT model FROM corpq.lexicon_models "
							"WHERE lexicon OPERATOR(pg_catalog.=) $1",
							lx->name);
	blob = DatumGetByteaPP(SPI_getbinval(row, SPI_tuptable->tupdesc, 1, &isnull));
	old = MemoryContextSwitchTo(lx->cxt);
	rc = cq_lexicon_deserialize(VARDATA_ANY(blob), VARSIZE_ANY_EXHDR(blob), &lx->model, &err);
	MemoryContextSwitchTo(old);
	if (rc != CQ_OK)
	{
		/* it was valid when the job stored it */
		if (err.code != CQ_ENOMEM)
			err.code = CQ_ECORRUPT;
		corpq_core_error(&err, NULL, "lexicon \"%s\" has an invalid model", lx->name);
	}
	if (lx->model.src_vocab != lx->dict.n_src || lx->model.tgt_vocab != lx->dict.n_tgt)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("lexicon \"%s\" has a model of other vocabularies than its token lists", lx->name)));
	SPI_finish();
	lx->have_model = true;
}

LexLoaded *
lexicon_cached(FunctionCallInfo fcinfo, const char *name, bool with_model)
{
	LexLoaded  *lx = fcinfo->flinfo->fn_extra;

	if (lx != NULL && strcmp(lx->name, name) != 0)
	{
		MemoryContextDelete(lx->cxt);
		fcinfo->flinfo->fn_extra = lx = NULL;
	}
	if (lx == NULL)
	{
		lx = load(name, fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = lx;
	}
	if (with_model && !lx->have_model)
		load_model(lx);
	return lx;
}

int32 *
lexicon_encode(LexLoaded *lx, bool source, const char *text, int len, int *n)
{
	const cq_tokens *t = lexicon_tokenize(lx->seg, lx->opt.lowercase, text, len);
	cq_vocab   *v = source ? lx->src_vocab : lx->tgt_vocab;
	int32	   *ids = palloc(Max(t->n, 1) * sizeof(int32));

	for (size_t i = 0; i < t->n; i++)
	{
		size_t		tl;
		const char *ts = cq_tokens_get(t, i, &tl);

		ids[i] = cq_vocab_lookup(v, ts, tl);
	}
	*n = (int) t->n;
	return ids;
}
