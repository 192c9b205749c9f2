/*
 * SQL functions for vocabularies: corpq.vocab_build, vocab_encode,
 * vocab_decode, vocab_drop, and vocab_export / vocab_import for copies
 * between servers.  Vocabularies live in corpq.vocabularies and
 * corpq.vocabulary_tokens (one row per id, the catalog's token listing).
 */
#include "postgres.h"

#include <errno.h>

#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/base/base.h"
#include "pg/text/text.h"

/*
 * The largest vocabulary corpq stores: twice the largest of public
 * translation models (NLLB, M2M-100, mBART, mT5: about 256,000 tokens).  Its
 * rows, its map and the embeddings of a model over it stay within a few
 * hundred MB.  vocab_import also bounds the document it is given, checked
 * before it is read (a 1M-token document took 41 s and 436 MB to store).
 */
#define VOCAB_MAX_TOKENS (1 << 19)
#define VOCAB_MAX_DOC_MB 64
/* vocab_build's max_size when it is NULL (its default) */
#define VOCAB_DEFAULT_SIZE 32000

PG_FUNCTION_INFO_V1(corpq_vocab_build);
PG_FUNCTION_INFO_V1(corpq_vocab_encode);
PG_FUNCTION_INFO_V1(corpq_vocab_decode);
PG_FUNCTION_INFO_V1(corpq_vocab_drop);

typedef struct CountState
{
	MemoryContext cxt;
	CorpqSegmenter *seg;
	cq_strmap	counts;
} CountState;

static void
count_row(void *arg, const char *text, int len)
{
	CountState *st = arg;
	const cq_tokens *t = corpq_segment(st->seg, text, len);
	MemoryContext old = MemoryContextSwitchTo(st->cxt);
	cq_code		rc = cq_count_tokens(&st->counts, t);

	MemoryContextSwitchTo(old);
	if (rc != CQ_OK)
		corpq_core_fail(rc, "could not count corpus tokens", NULL);
}

/* Insert the vocabulary row and one row per token id (counts[id]). */
static void
store_vocab(const char *name, const char *bpe, const cq_vocabulary *v,
			const int64 *counts, int32 max_size, int32 min_count)
{
	int32		n = cq_vocabulary_size(v);
	Datum	   *toks = palloc(n * sizeof(Datum));
	Datum	   *cnts = palloc(n * sizeof(Datum));
	Oid			v_types[6] = {TEXTOID, TEXTOID, INT4OID, INT4OID, INT4OID, OIDOID};
	Datum		v_vals[6];
	char		v_nulls[6] = {' ', bpe ? ' ' : 'n', ' ', ' ', ' ', ' '};
	Oid			t_types[2] = {TEXTARRAYOID, INT8ARRAYOID};
	Datum		t_vals[2];

	for (int32 i = 0; i < n; i++)
	{
		size_t		len;
		const char *tok = cq_strmap_key(&v->map, i, &len);

		toks[i] = PointerGetDatum(cstring_to_text_with_len(tok, (int) len));
		cnts[i] = Int64GetDatum(counts[i]);
	}
	v_vals[0] = CStringGetTextDatum(name);
	v_vals[1] = bpe ? CStringGetTextDatum(bpe) : (Datum) 0;
	v_vals[2] = Int32GetDatum(n);
	v_vals[3] = Int32GetDatum(max_size);
	v_vals[4] = Int32GetDatum(min_count);
	v_vals[5] = ObjectIdGetDatum(GetUserId());
	t_vals[0] = PointerGetDatum(construct_array(toks, n, TEXTOID, -1, false, TYPALIGN_INT));
	t_vals[1] = PointerGetDatum(construct_array(cnts, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	corpq_catalog_store("INSERT INTO corpq.vocabularies (name, bpe, size, max_size, min_count, owner) "
						"VALUES ($1, $2, $3, $4, $5, $6::pg_catalog.regrole)",
						6, v_types, v_vals, v_nulls,
						"corpq.vocabulary_tokens (vocabulary, id, token, count)", t_types, t_vals);
}

/* corpq.vocab_build(name, corpus, bpe, max_size, min_count) -> size */
Datum
corpq_vocab_build(PG_FUNCTION_ARGS)
{
	char	   *name;
	char	   *query;
	char	   *bpe = NULL;
	int32		max_size;
	int32		min_count;
	CountState	st;
	MemoryContext old;
	cq_vocabulary	v;
	cq_error err = {0};
	cq_code		rc;
	int32		size;
	int64	   *counts;
	bool		size_asked = !PG_ARGISNULL(3);

	corpq_require_arg(fcinfo, 0, "name");
	corpq_require_arg(fcinfo, 1, "corpus");
	corpq_require_arg(fcinfo, 4, "min_count");
	/* NULL (the default): up to VOCAB_DEFAULT_SIZE, and no NOTICE when fewer */
	max_size = size_asked ? PG_GETARG_INT32(3) : VOCAB_DEFAULT_SIZE;
	min_count = PG_GETARG_INT32(4);
	if (max_size < CQ_VOCAB_N_SPECIAL + 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_size must be at least %d", CQ_VOCAB_N_SPECIAL + 1),
				 errdetail("The size includes the four reserved tokens <s>, <pad>, </s> and <unk>.")));
	if (max_size > VOCAB_MAX_TOKENS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("max_size must be at most %d, the largest vocabulary corpq stores", VOCAB_MAX_TOKENS)));
	if (min_count < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("min_count must be at least 1")));
	if (!PG_ARGISNULL(2))
	{
		bpe = text_to_cstring(PG_GETARG_TEXT_PP(2));
		if (strcmp(bpe, CORPQ_WHITESPACE) == 0)
			bpe = NULL;			/* stored as NULL: whitespace segmentation */
	}
	corpq_require_utf8();
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	corpq_check_new_name(&corpq_kind_vocabulary, name);
	query = text_to_cstring(PG_GETARG_TEXT_PP(1));

	st.cxt = AllocSetContextCreate(CurrentMemoryContext, "corpq vocab_build",
								   ALLOCSET_DEFAULT_SIZES);
	st.seg = corpq_segmenter_load(bpe, st.cxt);
	corpq_count_corpus(query, &st.counts, st.cxt, count_row, &st);

	old = MemoryContextSwitchTo(st.cxt);
	rc = cq_vocabulary_build(&v, &st.counts, max_size, min_count, &err);
	MemoryContextSwitchTo(old);
	if (rc != CQ_OK)
		corpq_core_error(&err, NULL, "could not build the vocabulary");
	size = cq_vocabulary_size(&v);
	counts = palloc(sizeof(int64) * size);
	for (int32 i = 0; i < size; i++)
	{
		size_t		len;
		const char *tok = cq_strmap_key(&v.map, i, &len);
		int64_t		e = cq_strmap_find(&st.counts, tok, len);

		counts[i] = i < CQ_VOCAB_N_SPECIAL || e < 0 ? 0 : st.counts.vals[e];
	}
	store_vocab(name, bpe, &v, counts, max_size, min_count);

	/*
	 * Fewer tokens than asked: every symbol seen min_count times is in (the
	 * build stops only at max_size), so say how many the corpus has and what
	 * would give more, rather than return a smaller size without a word.
	 */
	if (size_asked && size < max_size)
	{
		int32		frequent = size - CQ_VOCAB_N_SPECIAL;
		int64		rare = 0;
		int64		distinct;

		for (size_t e = 0; e < st.counts.n; e++)
			rare += st.counts.vals[e] < min_count;
		distinct = frequent + rare;

		ereport(NOTICE,
				(errmsg("vocabulary \"%s\" has %d tokens, fewer than the %d asked for", name, size, max_size),
				 bpe ? errdetail("The corpus has only %lld distinct symbols as segmented by BPE model \"%s\", %d of them seen at least min_count (%d) times; the size counts the %d reserved tokens.",
								 (long long) distinct, bpe, frequent, min_count, CQ_VOCAB_N_SPECIAL)
				 : errdetail("The corpus has only %lld distinct whitespace-separated words, %d of them seen at least min_count (%d) times; the size counts the %d reserved tokens.",
							 (long long) distinct, frequent, min_count, CQ_VOCAB_N_SPECIAL),
				 rare > 0 ? errhint("A lower min_count keeps more of the corpus's symbols.")
				 : bpe ? errhint("A BPE segmentation has at most about its merges plus its characters as symbols: learn more merges (corpq.bpe_learn) for a larger vocabulary.")
				 : errhint("Only a larger corpus gives a larger vocabulary.")));
	}
	MemoryContextDelete(st.cxt);
	PG_RETURN_INT32(size);
}

/* corpq.vocab_encode(vocab, sentence) -> int4[] */
Datum
corpq_vocab_encode(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	text	   *sentence = PG_GETARG_TEXT_PP(1);
	CorpqVocab *v = corpq_vocab_cached(fcinfo, name);
	int			n;
	int32	   *ids = corpq_vocab_encode_text(v, VARDATA_ANY(sentence),
											  VARSIZE_ANY_EXHDR(sentence), &n);
	Datum	   *d;

	if (n == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(INT4OID));
	d = palloc(n * sizeof(Datum));
	for (int i = 0; i < n; i++)
		d[i] = Int32GetDatum(ids[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(d, n, INT4OID, 4, true, TYPALIGN_INT));
}

/* corpq.vocab_decode(vocab, ids) -> detokenised text */
Datum
corpq_vocab_decode(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(1);
	CorpqVocab *v = corpq_vocab_cached(fcinfo, name);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int32	   *ids;
	char	   *out;
	size_t		len;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("ids must be a one-dimensional array")));
	deconstruct_array(arr, INT4OID, 4, true, TYPALIGN_INT, &elems, &nulls, &n);
	ids = palloc((n ? n : 1) * sizeof(int32));
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("ids must not contain nulls")));
		ids[i] = DatumGetInt32(elems[i]);
	}
	out = corpq_vocab_text(v, ids, n, &len);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(out, (int) len));
}

/* corpq.vocab_drop(name) */
Datum
corpq_vocab_drop(PG_FUNCTION_ARGS)
{
	char	   *name;

	corpq_require_arg(fcinfo, 0, "name");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	corpq_catalog_drop(&corpq_kind_vocabulary, name);
	PG_RETURN_VOID();
}

/* ---- copies between servers: vocab_export / vocab_import ---- */

PG_FUNCTION_INFO_V1(corpq_vocab_export);
PG_FUNCTION_INFO_V1(corpq_vocab_import);

/* corpq.vocab_export(name) -> {"bpe", "max_size", "min_count", "tokens", "counts"} */
Datum
corpq_vocab_export(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	bool		isnull;
	Datum		doc;
	Jsonb	   *out;
	MemoryContext caller = CurrentMemoryContext;

	SPI_connect();
	doc = corpq_catalog_value(&corpq_kind_vocabulary,
							  "pg_catalog.jsonb_build_object("
							  "'bpe', c.bpe, 'max_size', c.max_size, 'min_count', c.min_count, "
							  "'tokens', (SELECT pg_catalog.jsonb_agg(t.token ORDER BY t.id) FROM corpq.vocabulary_tokens t "
							  "  WHERE t.vocabulary OPERATOR(pg_catalog.=) c.name), "
							  "'counts', (SELECT pg_catalog.jsonb_agg(t.count ORDER BY t.id) FROM corpq.vocabulary_tokens t "
							  "  WHERE t.vocabulary OPERATOR(pg_catalog.=) c.name))",
							  name, &isnull);
	MemoryContextSwitchTo(caller);
	out = DatumGetJsonbPCopy(doc);
	SPI_finish();
	PG_RETURN_JSONB_P(out);
}

static void
bad_document(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid vocabulary document: %s", what),
			 errhint("Pass what corpq.vocab_export() returned on the source server.")));
}

/* The value of key in object doc, NULL when absent or JSON null. */
static JsonbValue *
doc_key(Jsonb *doc, const char *key)
{
	JsonbValue	k;
	JsonbValue *v;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	v = findJsonbValueFromContainer(&doc->root, JB_FOBJECT, &k);
	return v == NULL || v->type == jbvNull ? NULL : v;
}

/* A JSON integer in [lo, hi]. */
static int64
doc_int(JsonbValue *v, int64 lo, int64 hi, const char *what)
{
	char	   *text;
	char	   *end;
	long long	x;

	if (v == NULL || v->type != jbvNumeric)
		bad_document(what);
	text = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
	errno = 0;
	x = strtoll(text, &end, 10);
	if (errno != 0 || *end != '\0' || x < lo || x > hi)
		bad_document(what);
	return (int64) x;
}

/* The array under key: its container and length. */
static JsonbContainer *
doc_array(Jsonb *doc, const char *key, int *n, const char *what)
{
	JsonbValue *v = doc_key(doc, key);

	if (v == NULL || v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		bad_document(what);
	*n = (int) JsonContainerSize(v->val.binary.data);
	return v->val.binary.data;
}

/* The kind of a loaded segmenter, as a document's key names it. */
static const char *
segmenter_key(const CorpqSegmenter *seg)
{
	return seg->spm ? "spm" : seg->wp ? "wordpiece" : "bpe";
}

/*
 * The segmenter a vocabulary document's "spm" or "wordpiece" names: a
 * SentencePiece or WordPiece model already stored with corpq.spm_import or
 * corpq.wordpiece_import (corpq-convert writes the model's file name there;
 * the user replaces it with the imported name).
 */
static char *
typed_segmenter(const char *key, JsonbValue *v)
{
	bool		wordpiece = strcmp(key, "wordpiece") == 0;
	const char *kind = wordpiece ? "WordPiece" : "SentencePiece";
	char	   *name;
	CorpqSegmenter *seg;

	if (v->type != jbvString || v->val.string.len == 0)
		bad_document(psprintf("\"%s\" must name a %s model stored with corpq.%s_import",
							  key, kind, key));
	name = pnstrdup(v->val.string.val, v->val.string.len);
	if (!corpq_catalog_exists(&corpq_kind_bpe, name))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("%s model \"%s\" does not exist", kind, name),
				 wordpiece
				 ? errhint("Store the vocab.txt first, e.g. SELECT corpq.wordpiece_import('%s', pg_read_file('DIR/%s'), "
						   "pg_read_file('DIR/wordpiece.json')::jsonb), "
						   "or set \"wordpiece\" to the name you imported it under.", name, name)
				 : errhint("Store the model file first, e.g. SELECT corpq.spm_import('%s', pg_read_binary_file('DIR/%s')), "
						   "or set \"spm\" to the name you imported it under.", name, name)));
	seg = corpq_segmenter_load(name, CurrentMemoryContext);
	if (strcmp(segmenter_key(seg), key) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a %s model, not a %s model", name,
						seg->spm ? "SentencePiece" : seg->wp ? "WordPiece" : "BPE", kind),
				 errhint("Pass it as \"%s\".", segmenter_key(seg))));
	corpq_segmenter_free(seg);
	return name;
}

/* ERROR when the document's stored size, read before decompressing it, is too large. */
static void
check_document_size(Datum doc)
{
	Size		size = toast_raw_datum_size(doc);

	if (size > (Size) VOCAB_MAX_DOC_MB * 1024 * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("vocabulary document of %zu MB exceeds the limit of %d MB",
						(size + (1 << 20) - 1) >> 20, VOCAB_MAX_DOC_MB),
				 errdetail("A vocabulary holds at most %d tokens.", VOCAB_MAX_TOKENS)));
}

static void
too_many_tokens(int n)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("vocabulary document has %d tokens, more than the limit of %d", n, VOCAB_MAX_TOKENS),
			 errdetail("corpq stores vocabularies of at most %d tokens, twice the largest of public "
					   "translation models.", VOCAB_MAX_TOKENS)));
}

/*
 * The segmenter of a document (NULL: whitespace): "bpe" names any stored
 * segmenter (what vocab_export writes), "spm" or "wordpiece" one of that
 * kind (what corpq-convert writes); at most one of them.
 */
static char *
doc_segmenter(Jsonb *doc)
{
	static const char *const typed[] = {"spm", "wordpiece"};
	JsonbValue *bpe_v = doc_key(doc, "bpe");
	const char *key = bpe_v ? "bpe" : NULL;
	JsonbValue *v = NULL;
	char	   *bpe;

	for (int i = 0; i < lengthof(typed); i++)
	{
		JsonbValue *t = doc_key(doc, typed[i]);

		if (t == NULL)
			continue;
		if (key != NULL)
			bad_document(psprintf("a document has \"%s\" or \"%s\", not both", key, typed[i]));
		key = typed[i];
		v = t;
	}
	if (v != NULL)
		return typed_segmenter(key, v);
	if (bpe_v == NULL)
		return NULL;
	if (bpe_v->type != jbvString)
		bad_document("\"bpe\" must be a BPE model name or null");
	bpe = pnstrdup(bpe_v->val.string.val, bpe_v->val.string.len);
	if (strcmp(bpe, CORPQ_WHITESPACE) == 0)
		return NULL;
	/* an unknown name errors, listing the existing ones */
	corpq_segmenter_free(corpq_segmenter_load(bpe, CurrentMemoryContext));
	return bpe;
}

/*
 * corpq.vocab_import(name, vocabulary jsonb) -> size: store a vocabulary
 * exported from another server with the same ids (rebuilding it from a shard
 * would give other ids), owned by the caller.  The tokens must start with the
 * four reserved ones and appear once each; the segmenter must exist here.
 */
Datum
corpq_vocab_import(PG_FUNCTION_ARGS)
{
	char	   *name;
	Jsonb	   *doc;
	char	   *bpe;
	JsonbContainer *tokens,
			   *counts_c = NULL;
	int			n,
				n_counts = 0;
	int64	   *counts;
	int32		max_size,
				min_count;
	cq_vocabulary v;
	cq_error err = {0};
	MemoryContext cxt,
				old;

	corpq_require_arg(fcinfo, 0, "name");
	corpq_require_arg(fcinfo, 1, "vocabulary");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	check_document_size(PG_GETARG_DATUM(1));
	doc = PG_GETARG_JSONB_P(1);
	corpq_require_utf8();
	if (!JB_ROOT_IS_OBJECT(doc))
		bad_document("it must be a JSON object");
	corpq_check_new_name(&corpq_kind_vocabulary, name);

	tokens = doc_array(doc, "tokens", &n, "\"tokens\" must be an array of strings");
	if (n < CQ_VOCAB_N_SPECIAL + 1)
		bad_document("\"tokens\" must hold the four reserved tokens and at least one more");
	if (n > VOCAB_MAX_TOKENS)
		too_many_tokens(n);
	bpe = doc_segmenter(doc);
	if (doc_key(doc, "counts") != NULL)
	{
		counts_c = doc_array(doc, "counts", &n_counts, "\"counts\" must be an array of integers >= 0");
		if (n_counts != n)
			bad_document("\"counts\" must have one entry per token");
	}
	max_size = (int32) (doc_key(doc, "max_size") ? doc_int(doc_key(doc, "max_size"), n, PG_INT32_MAX,
																  "\"max_size\" must be an integer >= the number of tokens")
						: n);
	min_count = (int32) (doc_key(doc, "min_count") ? doc_int(doc_key(doc, "min_count"), 1, PG_INT32_MAX,
																	"\"min_count\" must be an integer >= 1")
						 : 1);

	cxt = AllocSetContextCreate(CurrentMemoryContext, "corpq vocab_import", ALLOCSET_DEFAULT_SIZES);
	counts = palloc0(sizeof(int64) * n);
	old = MemoryContextSwitchTo(cxt);
	if (cq_vocabulary_init(&v) != CQ_OK)
		corpq_core_fail(CQ_ENOMEM, "out of memory", NULL);
	MemoryContextSwitchTo(old);
	for (int i = 0; i < n; i++)
	{
		JsonbValue *t = getIthJsonbValueFromContainer(tokens, i);
		cq_code		rc;

		if (t == NULL || t->type != jbvString || t->val.string.len == 0)
			bad_document("\"tokens\" must be an array of non-empty strings");
		if (i < CQ_VOCAB_N_SPECIAL &&
			(t->val.string.len != (int) strlen(cq_vocabulary_specials[i]) ||
			 memcmp(t->val.string.val, cq_vocabulary_specials[i], t->val.string.len) != 0))
			bad_document("\"tokens\" must start with <s>, <pad>, </s>, <unk>");
		old = MemoryContextSwitchTo(cxt);
		rc = cq_vocabulary_add(&v, t->val.string.val, t->val.string.len, &err);
		MemoryContextSwitchTo(old);
		if (rc != CQ_OK)
			corpq_core_error(&err, NULL, "invalid vocabulary document");
		if (counts_c)
			counts[i] = doc_int(getIthJsonbValueFromContainer(counts_c, i), 0, PG_INT64_MAX,
								"\"counts\" must be an array of integers >= 0");
		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	store_vocab(name, bpe, &v, counts, max_size, min_count);
	MemoryContextDelete(cxt);
	PG_RETURN_INT32(n);
}
