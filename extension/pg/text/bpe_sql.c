/*
 * SQL functions for BPE models: corpq.bpe_learn, bpe_import, bpe_export,
 * bpe_apply, bpe_tokens, bpe_drop.  Models live in corpq.bpe_models and
 * corpq.bpe_merges; everything is written in the caller's transaction.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/base/base.h"
#include "pg/text/text.h"
#include "text/bpe_learn.h"

PG_FUNCTION_INFO_V1(corpq_bpe_learn);
PG_FUNCTION_INFO_V1(corpq_bpe_import);
PG_FUNCTION_INFO_V1(corpq_bpe_export);
PG_FUNCTION_INFO_V1(corpq_bpe_apply);
PG_FUNCTION_INFO_V1(corpq_bpe_tokens);
PG_FUNCTION_INFO_V1(corpq_bpe_drop);
PG_FUNCTION_INFO_V1(corpq_spm_import);

/* One side (left or right) of every merge as a text[]. */
static ArrayType *
merge_side_array(const cq_bpe *bpe, const int32_t *side)
{
	Datum	   *d;

	if (bpe->n_merges == 0)
		return construct_empty_array(TEXTOID);
	d = palloc(bpe->n_merges * sizeof(Datum));
	for (int32 i = 0; i < bpe->n_merges; i++)
	{
		size_t		n;
		const char *s = cq_strmap_key(&bpe->syms, side[i], &n);

		d[i] = PointerGetDatum(cstring_to_text_with_len(s, (int) n));
	}
	return construct_array(d, bpe->n_merges, TEXTOID, -1, false, TYPALIGN_INT);
}

/* Insert the model row and its merges (min_frequency 0 = NULL: imported). */
static void
store_model(const char *name, const cq_bpe *bpe, int32 min_frequency)
{
	Oid			m_types[5] = {TEXTOID, TEXTOID, INT4OID, INT4OID, OIDOID};
	Datum		m_vals[5];
	char		m_nulls[5] = {' ', ' ', ' ', min_frequency > 0 ? ' ' : 'n', ' '};
	Oid			r_types[2] = {TEXTARRAYOID, TEXTARRAYOID};
	Datum		r_vals[2];

	m_vals[0] = CStringGetTextDatum(name);
	m_vals[1] = CStringGetTextDatum(bpe->version == 1 ? "0.1" : "0.2");
	m_vals[2] = Int32GetDatum(bpe->n_merges);
	m_vals[3] = Int32GetDatum(min_frequency);
	m_vals[4] = ObjectIdGetDatum(GetUserId());
	r_vals[0] = PointerGetDatum(merge_side_array(bpe, bpe->left));
	r_vals[1] = PointerGetDatum(merge_side_array(bpe, bpe->right));
	corpq_catalog_store("INSERT INTO corpq.bpe_models (name, version, n_merges, min_frequency, owner) "
						"VALUES ($1, $2, $3, $4, $5::pg_catalog.regrole)",
						5, m_types, m_vals, m_nulls,
						"corpq.bpe_merges (model, rank, left_symbol, right_symbol)", r_types, r_vals);
}

typedef struct LearnState
{
	MemoryContext cxt;
	cq_strmap	counts;
} LearnState;

static void
count_row(void *arg, const char *text, int len)
{
	LearnState *st = arg;
	MemoryContext old = MemoryContextSwitchTo(st->cxt);
	cq_code		rc = cq_count_words(&st->counts, text, len);

	MemoryContextSwitchTo(old);
	if (rc != CQ_OK)
		corpq_core_fail(rc, "could not count corpus words", NULL);
}

/* corpq.bpe_learn(name, corpus, merges, min_frequency) -> merges learned */
Datum
corpq_bpe_learn(PG_FUNCTION_ARGS)
{
	char	   *name;
	char	   *query;
	int32		merges;
	int32		min_frequency;
	LearnState	st;
	MemoryContext old;
	cq_bpe_learner *learner;
	cq_bpe		bpe;
	cq_error err = {0};
	cq_code		rc;
	bool		more = true;
	int32		learned;

	corpq_require_arg(fcinfo, 0, "name");
	corpq_require_arg(fcinfo, 1, "corpus");
	corpq_require_arg(fcinfo, 2, "merges");
	corpq_require_arg(fcinfo, 3, "min_frequency");
	merges = PG_GETARG_INT32(2);
	min_frequency = PG_GETARG_INT32(3);
	if (merges < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("merges must be at least 0")));
	if (min_frequency < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("min_frequency must be at least 1")));
	corpq_require_utf8();
	name = corpq_segmenter_new_name(fcinfo);
	query = text_to_cstring(PG_GETARG_TEXT_PP(1));

	st.cxt = AllocSetContextCreate(CurrentMemoryContext, "corpq bpe_learn",
								   ALLOCSET_DEFAULT_SIZES);
	corpq_count_corpus(query, &st.counts, st.cxt, count_row, &st);

	old = MemoryContextSwitchTo(st.cxt);
	rc = cq_bpe_learner_new(&st.counts, min_frequency, &learner, &err);
	MemoryContextSwitchTo(old);
	if (rc != CQ_OK)
		corpq_core_error(&err, NULL, "BPE learning failed");
	while (more && cq_bpe_learner_n_merges(learner) < merges)
	{
		CHECK_FOR_INTERRUPTS();
		old = MemoryContextSwitchTo(st.cxt);
		rc = cq_bpe_learner_step(learner, &more, &err);
		MemoryContextSwitchTo(old);
		if (rc != CQ_OK)
			corpq_core_error(&err, NULL, "BPE learning failed");
	}

	old = MemoryContextSwitchTo(st.cxt);
	rc = cq_bpe_learner_model(learner, &bpe, &err);
	MemoryContextSwitchTo(old);
	if (rc != CQ_OK)
		corpq_core_error(&err, NULL, "BPE learning failed");
	learned = bpe.n_merges;
	store_model(name, &bpe, min_frequency);
	MemoryContextDelete(st.cxt);
	PG_RETURN_INT32(learned);
}

/* corpq.bpe_import(name, codes) -> merges imported */
Datum
corpq_bpe_import(PG_FUNCTION_ARGS)
{
	char	   *name;
	text	   *codes;
	cq_bpe		bpe;
	cq_error err = {0};
	cq_code		rc;
	int32		n;

	corpq_require_arg(fcinfo, 0, "name");
	corpq_require_arg(fcinfo, 1, "codes");
	corpq_require_utf8();
	name = corpq_segmenter_new_name(fcinfo);
	codes = PG_GETARG_TEXT_PP(1);
	rc = cq_bpe_parse_codes(&bpe, VARDATA_ANY(codes), VARSIZE_ANY_EXHDR(codes), &err);
	/* text that is not subword-nmt's codes: the input's syntax, 22P02 */
	if (rc == CQ_EINVAL)
		corpq_core_error_code(&err, ERRCODE_INVALID_TEXT_REPRESENTATION,
							  "Codes are subword-nmt's format: an optional first line \"#version: 0.2\", then one merge \"left right\" per line.",
							  "invalid BPE codes");
	if (rc != CQ_OK)
		corpq_core_error(&err, NULL, "invalid BPE codes");
	n = bpe.n_merges;
	store_model(name, &bpe, 0);
	cq_bpe_free(&bpe);
	PG_RETURN_INT32(n);
}

/*
 * corpq.spm_import(name, model) -> pieces: a SentencePiece model as a
 * segmenter (corpq.bpe_models version 'sentencepiece', the bytes in
 * corpq.spm_models), checked (text/spm_check.h: bounds the library trusts,
 * the field named when one fails) and then loaded.
 */
Datum
corpq_spm_import(PG_FUNCTION_ARGS)
{
	char	   *name;
	bytea	   *model;
	cq_spm	   *m = NULL;
	cq_error	err = {0};
	int32		pieces;
	Oid			types[3] = {TEXTOID, INT4OID, OIDOID};
	Datum		vals[3];
	Oid			p_types[2] = {TEXTOID, BYTEAOID};
	Datum		p_vals[2];

	corpq_require_arg(fcinfo, 0, "name");
	corpq_require_arg(fcinfo, 1, "model");
	corpq_require_utf8();
	name = corpq_segmenter_new_name(fcinfo);
	model = PG_GETARG_BYTEA_PP(1);
	if (cq_spm_load(VARDATA_ANY(model), VARSIZE_ANY_EXHDR(model), &m, &err) != CQ_OK)
		corpq_core_error(&err, "Pass the bytes of a SentencePiece .model file, e.g. pg_read_binary_file('DIR/source.spm').",
						 "invalid SentencePiece model");
	pieces = cq_spm_pieces(m);
	cq_spm_free(m);
	vals[0] = CStringGetTextDatum(name);
	vals[1] = Int32GetDatum(pieces);
	vals[2] = ObjectIdGetDatum(GetUserId());
	p_vals[0] = vals[0];
	p_vals[1] = PointerGetDatum(model);
	SPI_connect();
	if (corpq_sql_as_owner("INSERT INTO corpq.bpe_models (name, version, n_merges, owner) "
						   "VALUES ($1, 'sentencepiece', $2, $3::pg_catalog.regrole)",
						   3, types, vals, NULL, 0) != SPI_OK_INSERT ||
		corpq_sql_as_owner("INSERT INTO corpq.spm_models (model, proto) VALUES ($1, $2)",
						   2, p_types, p_vals, NULL, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not store SentencePiece model \"%s\"", name);
	SPI_finish();
	PG_RETURN_INT32(pieces);
}

/* corpq.bpe_export(name) -> the subword-nmt codes file */
Datum
corpq_bpe_export(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	CorpqSegmenter *seg;
	char	   *codes;
	size_t		len;

	if (strcmp(name, CORPQ_WHITESPACE) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("whitespace segmentation has no BPE codes")));
	seg = corpq_segmenter_cached(fcinfo, name);
	if (seg->spm)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a SentencePiece model, which has no BPE codes", name)));
	if (seg->wp)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a WordPiece model, which has no BPE codes", name),
				 errhint("Its tokens and options are in corpq.wordpiece_models.")));
	codes = cq_bpe_write_codes(seg->bpe, &len);
	if (codes == NULL)
		corpq_core_fail(CQ_ENOMEM, "out of memory", NULL);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(codes, (int) len));
}

/* corpq.bpe_apply(name, sentence) -> "sub@@ word" */
Datum
corpq_bpe_apply(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	text	   *sentence = PG_GETARG_TEXT_PP(1);
	CorpqSegmenter *seg = corpq_segmenter_cached(fcinfo, name);
	const cq_tokens *t = corpq_segment(seg, VARDATA_ANY(sentence),
									   VARSIZE_ANY_EXHDR(sentence));
	size_t		total = 0;
	text	   *out;
	char	   *p;

	for (size_t i = 0; i < t->n; i++)
		total += t->len[i] + (i > 0);
	out = palloc(VARHDRSZ + total);
	SET_VARSIZE(out, VARHDRSZ + total);
	p = VARDATA(out);
	for (size_t i = 0; i < t->n; i++)
	{
		if (i > 0)
			*p++ = ' ';
		memcpy(p, t->buf + t->off[i], t->len[i]);
		p += t->len[i];
	}
	PG_RETURN_TEXT_P(out);
}

/* corpq.bpe_tokens(name, sentence) -> text[] of subwords */
Datum
corpq_bpe_tokens(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	text	   *sentence = PG_GETARG_TEXT_PP(1);
	CorpqSegmenter *seg = corpq_segmenter_cached(fcinfo, name);
	const cq_tokens *t = corpq_segment(seg, VARDATA_ANY(sentence),
									   VARSIZE_ANY_EXHDR(sentence));
	Datum	   *d;

	if (t->n == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(TEXTOID));
	d = palloc(t->n * sizeof(Datum));
	for (size_t i = 0; i < t->n; i++)
		d[i] = PointerGetDatum(cstring_to_text_with_len(t->buf + t->off[i], t->len[i]));
	PG_RETURN_ARRAYTYPE_P(construct_array(d, (int) t->n, TEXTOID, -1, false, TYPALIGN_INT));
}

/* corpq.bpe_drop(name) */
Datum
corpq_bpe_drop(PG_FUNCTION_ARGS)
{
	char	   *name;

	corpq_require_arg(fcinfo, 0, "name");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (strcmp(name, CORPQ_WHITESPACE) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_RESERVED_NAME),
				 errmsg("BPE name \"%s\" is reserved and cannot be dropped", CORPQ_WHITESPACE)));
	corpq_catalog_drop(&corpq_kind_bpe, name);
	PG_RETURN_VOID();
}
