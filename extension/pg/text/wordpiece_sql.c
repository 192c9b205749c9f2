/*
 * WordPiece segmenters (text/wordpiece.h) in the segmenter catalog:
 * corpq.wordpiece_import, and loading and running one for text.h.
 * A model is a corpq.bpe_models row with version 'wordpiece' and its
 * corpq.wordpiece_models row (tokens in id order, resolved options).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "pg/base/base.h"
#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/base/options.h"
#include "pg/text/text.h"

PG_FUNCTION_INFO_V1(corpq_wordpiece_import);


/* The core's options from o (pointing into o). */
static cq_wordpiece_options
core_options(const CorpqWordpieceOptions *o)
{
	cq_wordpiece_options c = {
		.lower_case = o->do_lower_case, .strip_accents = o->strip_accents,
		.tokenize_chinese_chars = o->tokenize_chinese_chars, .variant = o->variant,
		.max_input_chars_per_word = o->max_input_chars_per_word
	};

	for (int k = 0; k < CQ_WORDPIECE_N_SPECIAL; k++)
		c.special[k] = o->special[k][0] ? o->special[k] : NULL;
	return c;
}

/* Whether the object options has key. */
static bool
has_key(Jsonb *options, const char *key)
{
	JsonbValue	k;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	return findJsonbValueFromContainer(&options->root, JB_FOBJECT, &k) != NULL;
}

/* Every token of wp as a text[] in id order. */
static Datum
token_array(const cq_wordpiece *wp)
{
	int32		n = cq_wordpiece_size(wp);
	Datum	   *d = palloc(n * sizeof(Datum));

	for (int32 i = 0; i < n; i++)
	{
		size_t		len;
		const char *tok = cq_wordpiece_token(wp, i, &len);

		d[i] = PointerGetDatum(cstring_to_text_with_len(tok, (int) len));
		if ((i & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	return PointerGetDatum(construct_array(d, n, TEXTOID, -1, false, TYPALIGN_INT));
}

static void
store_wordpiece(const char *name, const cq_wordpiece *wp, const char *options_json)
{
	Oid			types[3] = {TEXTOID, INT4OID, OIDOID};
	Datum		vals[3];
	Oid			w_types[3] = {TEXTOID, TEXTOID, TEXTARRAYOID};
	Datum		w_vals[3];

	vals[0] = CStringGetTextDatum(name);
	vals[1] = Int32GetDatum(cq_wordpiece_size(wp));
	vals[2] = ObjectIdGetDatum(GetUserId());
	w_vals[0] = vals[0];
	w_vals[1] = CStringGetTextDatum(options_json);
	w_vals[2] = token_array(wp);
	SPI_connect();
	if (corpq_sql_as_owner("INSERT INTO corpq.bpe_models (name, version, n_merges, owner) "
						   "VALUES ($1, 'wordpiece', $2, $3::pg_catalog.regrole)",
						   3, types, vals, NULL, 0) != SPI_OK_INSERT ||
		corpq_sql_as_owner("INSERT INTO corpq.wordpiece_models (model, options, tokens) "
						   "VALUES ($1, $2::pg_catalog.jsonb, $3)",
						   3, w_types, w_vals, NULL, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not store WordPiece model \"%s\"", name);
	SPI_finish();
}

/*
 * corpq.wordpiece_import(name, vocab, options) -> tokens: a vocab.txt as a
 * segmenter, checked by loading it.  NULL options are the defaults.
 */
Datum
corpq_wordpiece_import(PG_FUNCTION_ARGS)
{
	char	   *name;
	text	   *vocab;
	Jsonb	   *options = PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2);
	CorpqWordpieceOptions o;
	cq_wordpiece_options co;
	cq_wordpiece *wp;
	cq_error	err = {0};
	int32		n;

	corpq_require_arg(fcinfo, 0, "name");
	corpq_require_arg(fcinfo, 1, "vocab");
	corpq_require_utf8();
	name = corpq_segmenter_new_name(fcinfo);
	vocab = PG_GETARG_TEXT_PP(1);
	corpq_options_parse(&corpq_wordpiece_options, options, &o);
	if (options == NULL || !has_key(options, "strip_accents"))
		o.strip_accents = o.do_lower_case;
	co = core_options(&o);
	if (cq_wordpiece_load(&co, VARDATA_ANY(vocab), VARSIZE_ANY_EXHDR(vocab), &wp, &err) != CQ_OK)
		corpq_core_error(&err, "Pass the text of a BERT vocab.txt (one token per line, the unknown token among them), "
						 "e.g. pg_read_file('DIR/vocab.txt'), and the options of its tokenizer_config.json.",
						 "invalid WordPiece vocabulary");
	n = cq_wordpiece_size(wp);
	store_wordpiece(name, wp, corpq_options_json(&corpq_wordpiece_options, &o));
	cq_wordpiece_free(wp);
	PG_RETURN_INT32(n);
}

/* The tokens of the stored array into seg->wp (allocated in seg->cxt). */
static void
load_tokens(CorpqSegmenter *seg, const char *name, ArrayType *tokens)
{
	ArrayIterator it = array_create_iterator(tokens, 0, NULL);
	Datum		d;
	bool		isnull;
	cq_error	err = {0};
	int64		i = 0;

	while (array_iterate(it, &d, &isnull))
	{
		text	   *t;
		MemoryContext old;
		cq_code		rc;

		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("WordPiece model \"%s\" has a NULL token", name)));
		t = DatumGetTextPP(d);
		old = MemoryContextSwitchTo(seg->cxt);
		rc = cq_wordpiece_add(seg->wp, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &err);
		MemoryContextSwitchTo(old);
		if (rc != CQ_OK)
			corpq_core_error(&err, NULL, "WordPiece model \"%s\" is invalid", name);
		if ((++i & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	array_free_iterator(it);
}

void
corpq_wordpiece_load(CorpqSegmenter *seg, const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	bool		isnull;
	CorpqWordpieceOptions o;
	cq_wordpiece_options co;
	cq_error	err = {0};
	MemoryContext old;
	cq_code		rc;

	if (corpq_sql_as_caller("SELECT options::pg_catalog.text, tokens FROM corpq.wordpiece_models "
							"WHERE model OPERATOR(pg_catalog.=) $1",
							1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("WordPiece model \"%s\" has no row in corpq.wordpiece_models", name)));
	corpq_options_parse_text(&corpq_wordpiece_options,
							 TextDatumGetCString(SPI_getbinval(SPI_tuptable->vals[0],
															   SPI_tuptable->tupdesc, 1, &isnull)),
							 &o);
	co = core_options(&o);
	old = MemoryContextSwitchTo(seg->cxt);
	rc = cq_wordpiece_new(&co, &seg->wp, &err);
	MemoryContextSwitchTo(old);
	if (rc != CQ_OK)
		corpq_core_error(&err, NULL, "WordPiece model \"%s\" is invalid", name);
	load_tokens(seg, name, DatumGetArrayTypeP(SPI_getbinval(SPI_tuptable->vals[0],
															SPI_tuptable->tupdesc, 2, &isnull)));
	if (cq_wordpiece_ready(seg->wp, &err) != CQ_OK)
	{
		err.code = CQ_ECORRUPT;
		corpq_core_error(&err, NULL, "WordPiece model \"%s\" is invalid", name);
	}
}

/* corpq.max_batch_mb, read by name: the setting is the model glue's. */
static int
max_batch_mb(void)
{
	const char *v = GetConfigOption("corpq.max_batch_mb", true, false);

	return v ? pg_strtoint32(v) : 256;
}

/*
 * Texts up to this many bytes keep the segmenter's scratch for the next
 * call; a longer one's work space is freed after it.
 */
#define KEEP_SCRATCH_BYTES (64 * 1024)

const cq_tokens *
corpq_wordpiece_segment(CorpqSegmenter *seg, const char *text, int len)
{
	cq_error	err = {0};
	MemoryContext old = MemoryContextSwitchTo(seg->cxt);
	volatile cq_code rc = CQ_OK;

	/*
	 * Segmentation holds the text several times over as code points and
	 * UTF-16 (about 20 bytes per input byte): its growth is bounded by
	 * corpq.max_batch_mb, and a long text's work space is not kept.
	 */
	corpq_core_budget_begin(max_batch_mb(), "corpq.max_batch_mb",
							psprintf("segmenting a text of %d bytes with WordPiece model \"%s\"",
									 len, seg->name));
	PG_TRY();
	{
		rc = cq_wordpiece_tokenize(seg->wp, text, (size_t) len, &seg->tokens, &err);
	}
	PG_FINALLY();
	{
		corpq_core_budget_end();
		if (len > KEEP_SCRATCH_BYTES)
			cq_wordpiece_release_scratch(seg->wp);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	if (rc != CQ_OK)
		corpq_core_error(&err, NULL, "could not segment text with WordPiece model \"%s\"",
						 seg->name);
	return &seg->tokens;
}
