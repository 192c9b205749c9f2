/*
 * Segmenters: a named BPE, SentencePiece or WordPiece model loaded from the
 * corpq catalog into one object, and text segmented with it.  The
 * WordPiece loader lives with its SQL functions (wordpiece_sql.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "pg/base/internal_sql.h"
#include "pg/base/base.h"
#include "pg/base/errors.h"
#include "pg/text/text.h"

/* Words kept in a segmenter's cache before it is emptied. */
#define SEGMENT_CACHE_WORDS 100000

static bool
is_whitespace_name(const char *name)
{
	return name == NULL || strcmp(name, CORPQ_WHITESPACE) == 0;
}

static void
free_spm(void *arg)
{
	cq_spm_free((cq_spm *) arg);
}

/*
 * Load the SentencePiece model of name into seg->spm (C++ heap, freed when
 * seg->cxt is).  Called inside the caller's SPI connection.
 */
static void
load_spm(CorpqSegmenter *seg, const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	bool		isnull;
	bytea	   *proto;
	cq_error	err = {0};
	MemoryContextCallback *cb;

	if (corpq_sql_as_caller("SELECT proto FROM corpq.spm_models WHERE model OPERATOR(pg_catalog.=) $1",
							1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("SentencePiece model \"%s\" has no stored model in corpq.spm_models", name)));
	proto = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	cb = MemoryContextAlloc(seg->cxt, sizeof(MemoryContextCallback));
	/* checked again at every load: a model stored before the check, or changed
	 * since, never reaches the library (text/spm_check.h) */
	if (cq_spm_load(VARDATA_ANY(proto), VARSIZE_ANY_EXHDR(proto), &seg->spm, &err) != CQ_OK)
	{
		if (err.code != CQ_ENOMEM)
			err.code = CQ_ECORRUPT;
		corpq_core_error(&err, "Its owner can drop it with corpq.bpe_drop() and import a valid model with corpq.spm_import().",
						 "SentencePiece model \"%s\" is invalid", name);
	}
	cb->func = free_spm;
	cb->arg = seg->spm;
	MemoryContextRegisterResetCallback(seg->cxt, cb);
}

/* Read the merges of name into seg->bpe (allocated in seg->cxt). */
static void
load_bpe_rows(CorpqSegmenter *seg, const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	int			rc;
	int			version;
	bool		isnull;
	char	   *vtext;
	MemoryContext old;
	cq_error err = {0};
	cq_code		st;

	values[0] = CStringGetTextDatum(name);
	SPI_connect();
	vtext = TextDatumGetCString(corpq_catalog_value(&corpq_kind_bpe, "c.version", name, &isnull));
	if (strcmp(vtext, "sentencepiece") == 0)
	{
		load_spm(seg, name);
		SPI_finish();
		return;
	}
	if (strcmp(vtext, "wordpiece") == 0)
	{
		corpq_wordpiece_load(seg, name);
		SPI_finish();
		return;
	}
	version = strcmp(vtext, "0.1") == 0 ? 1 : 2;

	rc = corpq_sql_as_caller("SELECT left_symbol, right_symbol FROM corpq.bpe_merges "
							 "WHERE model OPERATOR(pg_catalog.=) $1 ORDER BY rank",
							 1, argtypes, values, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));

	old = MemoryContextSwitchTo(seg->cxt);
	seg->bpe = palloc0(sizeof(cq_bpe));
	if (cq_bpe_init(seg->bpe, version) != CQ_OK)
		corpq_core_fail(CQ_ENOMEM, "out of memory", NULL);
	MemoryContextSwitchTo(old);

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		text	   *l = DatumGetTextPP(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		text	   *r = DatumGetTextPP(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));

		old = MemoryContextSwitchTo(seg->cxt);
		st = cq_bpe_add_merge(seg->bpe, VARDATA_ANY(l), VARSIZE_ANY_EXHDR(l),
							  VARDATA_ANY(r), VARSIZE_ANY_EXHDR(r), &err);
		MemoryContextSwitchTo(old);
		if (st != CQ_OK)
		{
			/* every merge was checked when it was stored */
			if (st != CQ_ENOMEM)
				err.code = CQ_ECORRUPT;
			corpq_core_error(&err, NULL, "BPE model \"%s\" has an invalid merge", name);
		}
	}
	SPI_finish();
}

/* An empty segmenter named name (whitespace for NULL) in a new child of parent. */
static CorpqSegmenter *
new_segmenter(const char *name, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "corpq segmenter",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	CorpqSegmenter *seg = palloc0(sizeof(CorpqSegmenter));

	corpq_require_utf8();
	seg->cxt = cxt;
	seg->name = pstrdup(is_whitespace_name(name) ? CORPQ_WHITESPACE : name);
	cq_tokens_init(&seg->tokens);
	if (cq_bpe_cache_init(&seg->cache, SEGMENT_CACHE_WORDS) != CQ_OK)
		corpq_core_fail(CQ_ENOMEM, "out of memory", NULL);
	MemoryContextSwitchTo(old);
	return seg;
}

CorpqSegmenter *
corpq_segmenter_load(const char *name, MemoryContext parent)
{
	CorpqSegmenter *seg = new_segmenter(name, parent);

	if (!is_whitespace_name(name))
		load_bpe_rows(seg, name);
	return seg;
}

CorpqSegmenter *
corpq_segmenter_attach_wordpiece(const char *name, const void *base, Size bytes,
								 MemoryContext parent)
{
	CorpqSegmenter *seg = new_segmenter(name, parent);
	MemoryContext old = MemoryContextSwitchTo(seg->cxt);
	cq_error	err = {0};
	cq_code		rc;

	/* the model's own parts (options, specials, later its scratch) live in seg->cxt */
	rc = cq_wordpiece_attach(base, (size_t) bytes, &seg->wp, &err);
	MemoryContextSwitchTo(old);
	if (rc == CQ_OK)
		return seg;
	ereport(NOTICE,
			(errmsg("could not attach the shared copy of WordPiece segmenter \"%s\": %s; loading a private copy",
					name, err.msg)));
	corpq_segmenter_free(seg);
	return NULL;
}

void
corpq_segmenter_free(CorpqSegmenter *seg)
{
	if (seg)
		MemoryContextDelete(seg->cxt);
}

const cq_tokens *
corpq_segment(CorpqSegmenter *seg, const char *text, int len)
{
	MemoryContext old;
	cq_code		rc;

	if (seg->wp)
		return corpq_wordpiece_segment(seg, text, len);
	if (seg->spm)
	{
		const char *pieces;
		size_t		n;
		cq_error	err = {0};

		/* the pieces, space-joined, are then whitespace tokens */
		if (cq_spm_encode(seg->spm, text, (size_t) len, &pieces, &n, &err) != CQ_OK)
			corpq_core_error(&err, NULL, "could not segment text with SentencePiece model \"%s\"",
							 seg->name);
		text = pieces;
		len = (int) n;
	}
	old = MemoryContextSwitchTo(seg->cxt);
	rc = cq_bpe_tokenize(seg->bpe, &seg->cache, text, len, &seg->tokens);

	MemoryContextSwitchTo(old);
	if (rc != CQ_OK)
		corpq_core_fail(rc, "could not segment text", NULL);
	return &seg->tokens;
}
