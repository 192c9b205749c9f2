/*
 * Loading a named vocabulary (and the segmenter it was built with) from the
 * corpq catalog, and encoding and decoding text with it.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "pg/base/internal_sql.h"
#include "pg/base/base.h"
#include "pg/base/errors.h"
#include "pg/text/text.h"

/*
 * v->vocab from the catalog's rows (read through SPI, allocated in v->cxt),
 * and *bpe_name (NULL: whitespace) in v->cxt.
 */
static void
read_tokens(CorpqVocab *v, const char *name, char **bpe_name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	int			rc;
	bool		isnull;
	MemoryContext old;
	cq_error err = {0};
	cq_code		st;

	*bpe_name = NULL;
	values[0] = CStringGetTextDatum(name);
	SPI_connect();
	{
		Datum		d = corpq_catalog_value(&corpq_kind_vocabulary, "c.bpe", name, &isnull);

		if (!isnull)
			*bpe_name = MemoryContextStrdup(v->cxt, TextDatumGetCString(d));
	}
	if (v->vocab.map.slots != NULL)
	{
		/* the token table is given (an attached copy): only the segmenter's name */
		SPI_finish();
		return;
	}
	rc = corpq_sql_as_caller("SELECT id, token FROM corpq.vocabulary_tokens "
							 "WHERE vocabulary OPERATOR(pg_catalog.=) $1 ORDER BY id",
							 1, argtypes, values, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));

	old = MemoryContextSwitchTo(v->cxt);
	if (cq_vocabulary_init(&v->vocab) != CQ_OK)
		corpq_core_fail(CQ_ENOMEM, "out of memory", NULL);
	MemoryContextSwitchTo(old);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		int32		id = DatumGetInt32(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		text	   *t = DatumGetTextPP(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));

		if (id != (int32) i)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("vocabulary \"%s\" has no token with id %d", name, (int) i)));
		old = MemoryContextSwitchTo(v->cxt);
		st = cq_vocabulary_add(&v->vocab, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &err);
		MemoryContextSwitchTo(old);
		if (st != CQ_OK)
		{
			/* every token was checked when it was stored */
			if (st != CQ_ENOMEM)
				err.code = CQ_ECORRUPT;
			corpq_core_error(&err, NULL, "vocabulary \"%s\" is invalid", name);
		}
		if ((i & 65535) == 65535)
			CHECK_FOR_INTERRUPTS();
	}
	SPI_finish();
}

/* A vocabulary object with its token table (tokens, or read when NULL) and segmenter. */
static CorpqSegmenter *
plain_segmenter(const char *name, MemoryContext parent, void *arg)
{
	return corpq_segmenter_load(name, parent);
}

static CorpqVocab *
load(const char *name, const cq_vocabulary *tokens, CorpqSegmenterLoader seg_load, void *arg,
	 MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "corpq vocabulary",
											  ALLOCSET_DEFAULT_SIZES);
	CorpqVocab *v = MemoryContextAllocZero(cxt, sizeof(CorpqVocab));
	char	   *bpe_name;

	v->cxt = cxt;
	v->name = MemoryContextStrdup(cxt, name);
	if (tokens)
		v->vocab = *tokens;
	read_tokens(v, name, &bpe_name);
	v->seg = seg_load(bpe_name, cxt, arg);
	return v;
}

CorpqVocab *
corpq_vocab_load(const char *name, MemoryContext parent)
{
	return load(name, NULL, plain_segmenter, NULL, parent);
}

CorpqVocab *
corpq_vocab_wrap(const char *name, const cq_vocabulary *tokens, MemoryContext parent)
{
	Assert(tokens->map.slots != NULL);
	return load(name, tokens, plain_segmenter, NULL, parent);
}

CorpqVocab *
corpq_vocab_load_with(const char *name, const cq_vocabulary *tokens,
					  CorpqSegmenterLoader seg_load, void *arg, MemoryContext parent)
{
	Assert(tokens == NULL || tokens->map.slots != NULL);
	return load(name, tokens, seg_load ? seg_load : plain_segmenter, arg, parent);
}

void
corpq_vocab_identity(const char *name, CorpqVocabIdentity *id)
{
	bool		isnull;
	HeapTuple	row;

	SPI_connect();
	row = corpq_catalog_row(&corpq_kind_vocabulary,
							"SELECT c.tableoid, c.xmin::pg_catalog.text::pg_catalog.int8, "
							"c.created, "
							"c.size FROM corpq.vocabularies c WHERE c.name OPERATOR(pg_catalog.=) $1",
							name);
	id->catalog = DatumGetObjectId(SPI_getbinval(row, SPI_tuptable->tupdesc, 1, &isnull));
	id->xmin = DatumGetInt64(SPI_getbinval(row, SPI_tuptable->tupdesc, 2, &isnull));
	id->created = (int64) DatumGetTimestampTz(SPI_getbinval(row, SPI_tuptable->tupdesc, 3, &isnull));
	id->size = DatumGetInt32(SPI_getbinval(row, SPI_tuptable->tupdesc, 4, &isnull));
	SPI_finish();
}

void
corpq_segmenter_identity(const char *name, CorpqVocabIdentity *id, bool *wordpiece)
{
	bool		isnull;
	HeapTuple	row;

	SPI_connect();
	row = corpq_catalog_row(&corpq_kind_bpe,
							"SELECT c.tableoid, c.xmin::pg_catalog.text::pg_catalog.int8, "
							"c.created, c.n_merges, c.version OPERATOR(pg_catalog.=) 'wordpiece' "
							"FROM corpq.bpe_models c WHERE c.name OPERATOR(pg_catalog.=) $1",
							name);
	id->catalog = DatumGetObjectId(SPI_getbinval(row, SPI_tuptable->tupdesc, 1, &isnull));
	id->xmin = DatumGetInt64(SPI_getbinval(row, SPI_tuptable->tupdesc, 2, &isnull));
	id->created = (int64) DatumGetTimestampTz(SPI_getbinval(row, SPI_tuptable->tupdesc, 3, &isnull));
	id->size = DatumGetInt32(SPI_getbinval(row, SPI_tuptable->tupdesc, 4, &isnull));
	*wordpiece = DatumGetBool(SPI_getbinval(row, SPI_tuptable->tupdesc, 5, &isnull));
	SPI_finish();
}

void
corpq_vocab_free(CorpqVocab *v)
{
	if (v)
		MemoryContextDelete(v->cxt);
}

int32 *
corpq_vocab_encode_text(CorpqVocab *v, const char *text, int len, int *n_ids)
{
	const cq_tokens *t = corpq_segment(v->seg, text, len);
	int32	   *ids = palloc((t->n ? t->n : 1) * sizeof(int32));

	cq_vocabulary_encode(&v->vocab, t, ids);
	*n_ids = (int) t->n;
	return ids;
}

char *
corpq_vocab_text(CorpqVocab *v, const int32 *ids, int n, size_t *len)
{
	char	   *joined;
	size_t		jlen;
	cq_error terr = {0};
	cq_code		rc = cq_vocabulary_join(&v->vocab, ids, (size_t) n, &joined, &jlen, &terr);
	const char *text;
	cq_error	err = {0};
	char	   *out;

	/* an id the vocabulary does not have is a bad argument, not a numeric overflow */
	if (rc == CQ_ERANGE)
		corpq_core_error_code(&terr, ERRCODE_INVALID_PARAMETER_VALUE, NULL,
							  "token id out of range for vocabulary \"%s\"", v->name);
	if (rc != CQ_OK)
		corpq_core_error(&terr, NULL, "could not decode ids");
	if (!v->seg->spm)
	{
		*len = v->seg->wp ? cq_wordpiece_undo_inplace(joined, jlen)
			: cq_bpe_undo_inplace(joined, jlen);
		joined[*len] = '\0';
		return joined;
	}
	if (cq_spm_decode(v->seg->spm, joined, jlen, &text, len, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not detokenise with SentencePiece model \"%s\"",
						 v->seg->name);
	out = pnstrdup(text, *len);
	pfree(joined);
	return out;
}
