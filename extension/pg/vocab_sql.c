/*
 * SQL functions for vocabularies: corpq.vocab_build, vocab_encode,
 * vocab_decode, vocab_drop.  Vocabularies live in corpq.vocabularies and
 * corpq.vocabulary_tokens (one row per id, the catalog's token listing).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "pg/base/internal_sql.h"
#include "pg/corpq.h"
#include "pg/text_catalog.h"

PG_FUNCTION_INFO_V1(corpq_vocab_build);
PG_FUNCTION_INFO_V1(corpq_vocab_encode);
PG_FUNCTION_INFO_V1(corpq_vocab_decode);
PG_FUNCTION_INFO_V1(corpq_vocab_drop);

static void
require_arg(FunctionCallInfo fcinfo, int i, const char *what)
{
	if (PG_ARGISNULL(i))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
}

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
	int			rc = cq_count_tokens(&st->counts, t);

	MemoryContextSwitchTo(old);
	if (rc != CQ_TEXT_OK)
		corpq_text_error(rc, "could not count corpus tokens", NULL);
}

/* Insert the vocabulary row and one row per token id. */
static void
store_vocab(const char *name, const char *bpe, const cq_vocabulary *v,
			const cq_strmap *counts, int32 max_size, int32 min_count)
{
	int32		n = cq_vocabulary_size(v);
	Datum	   *toks = palloc(n * sizeof(Datum));
	Datum	   *cnts = palloc(n * sizeof(Datum));
	Oid			v_types[6] = {TEXTOID, TEXTOID, INT4OID, INT4OID, INT4OID, OIDOID};
	Datum		v_vals[6];
	char		v_nulls[6] = {' ', bpe ? ' ' : 'n', ' ', ' ', ' ', ' '};
	Oid			t_types[3] = {TEXTOID, TEXTARRAYOID, INT8ARRAYOID};
	Datum		t_vals[3];
	int			rc;

	for (int32 i = 0; i < n; i++)
	{
		size_t		len;
		const char *tok = cq_strmap_key(&v->map, i, &len);
		int64_t		e = cq_strmap_find(counts, tok, len);

		toks[i] = PointerGetDatum(cstring_to_text_with_len(tok, (int) len));
		cnts[i] = Int64GetDatum(i < CQ_VOCAB_N_SPECIAL || e < 0 ? 0 : counts->vals[e]);
	}
	v_vals[0] = CStringGetTextDatum(name);
	v_vals[1] = bpe ? CStringGetTextDatum(bpe) : (Datum) 0;
	v_vals[2] = Int32GetDatum(n);
	v_vals[3] = Int32GetDatum(max_size);
	v_vals[4] = Int32GetDatum(min_count);
	v_vals[5] = ObjectIdGetDatum(GetUserId());
	t_vals[0] = v_vals[0];
	t_vals[1] = PointerGetDatum(construct_array(toks, n, TEXTOID, -1, false, TYPALIGN_INT));
	t_vals[2] = PointerGetDatum(construct_array(cnts, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));

	SPI_connect();
	rc = corpq_sql_as_owner("INSERT INTO corpq.vocabularies (name, bpe, size, max_size, min_count, owner) "
							"VALUES ($1, $2, $3, $4, $5, $6::pg_catalog.regrole)",
							6, v_types, v_vals, v_nulls, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	rc = corpq_sql_as_owner("INSERT INTO corpq.vocabulary_tokens (vocabulary, id, token, count) "
							"SELECT $1, (u.o OPERATOR(pg_catalog.-) 1)::pg_catalog.int4, u.t, u.c "
							"FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3)) WITH ORDINALITY AS u(t, c, o)",
							3, t_types, t_vals, NULL, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	SPI_finish();
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
	cq_text_err err = {0};
	int			rc;
	int32		size;

	require_arg(fcinfo, 0, "name");
	require_arg(fcinfo, 1, "corpus");
	require_arg(fcinfo, 3, "max_size");
	require_arg(fcinfo, 4, "min_count");
	max_size = PG_GETARG_INT32(3);
	min_count = PG_GETARG_INT32(4);
	if (max_size < CQ_VOCAB_N_SPECIAL + 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_size must be at least %d", CQ_VOCAB_N_SPECIAL + 1),
				 errdetail("The size includes the four reserved tokens <s>, <pad>, </s> and <unk>.")));
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
	corpq_check_new_name("vocabulary", "corpq.vocabularies", "corpq.vocab_drop", name);
	query = text_to_cstring(PG_GETARG_TEXT_PP(1));

	st.cxt = AllocSetContextCreate(CurrentMemoryContext, "corpq vocab_build",
								   ALLOCSET_DEFAULT_SIZES);
	st.seg = corpq_segmenter_load(bpe, st.cxt);
	old = MemoryContextSwitchTo(st.cxt);
	rc = cq_strmap_init(&st.counts, 1 << 16);
	MemoryContextSwitchTo(old);
	if (rc != CQ_TEXT_OK)
		corpq_text_error(rc, "out of memory", NULL);
	corpq_scan_corpus(query, count_row, &st);
	if (st.counts.n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("corpus contains no words"),
				 errdetail("Every row is NULL, empty or whitespace.")));

	old = MemoryContextSwitchTo(st.cxt);
	rc = cq_vocabulary_build(&v, &st.counts, max_size, min_count, &err);
	MemoryContextSwitchTo(old);
	if (rc != CQ_TEXT_OK)
		corpq_text_error(rc, "could not build the vocabulary", err.msg);
	size = cq_vocabulary_size(&v);
	store_vocab(name, bpe, &v, &st.counts, max_size, min_count);
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
	cq_text_err err = {0};
	int			rc;

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
	rc = cq_vocabulary_decode(&v->vocab, ids, n, &out, &len, &err);
	if (rc == CQ_TEXT_ERANGE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("token id out of range for vocabulary \"%s\"", name),
				 errdetail("%s", err.msg)));
	if (rc != CQ_TEXT_OK)
		corpq_text_error(rc, "could not decode ids", err.msg);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(out, (int) len));
}

/* corpq.vocab_drop(name) */
Datum
corpq_vocab_drop(PG_FUNCTION_ARGS)
{
	char	   *name;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	int			rc;
	char	   *owner;
	char	   *users;
	bool		isnull;

	require_arg(fcinfo, 0, "name");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	values[0] = CStringGetTextDatum(name);
	SPI_connect();
	rc = corpq_sql_as_caller("SELECT owner::pg_catalog.text, owner::pg_catalog.oid FROM corpq.vocabularies "
							 "WHERE name OPERATOR(pg_catalog.=) $1",
							 1, argtypes, values, NULL, false, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	if (SPI_processed == 0)
		corpq_undefined_name("vocabulary", "corpq.vocabularies", name);
	owner = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (!corpq_caller_is_member(DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
															   SPI_tuptable->tupdesc, 2, &isnull))))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to drop vocabulary \"%s\"", name),
				 errdetail("The vocabulary is owned by role %s.", owner),
				 errhint("Only members of the owning role can drop or replace a vocabulary.")));

	/* any role's model may use it: name them rather than fail on the foreign key */
	rc = corpq_sql_as_caller("SELECT pg_catalog.string_agg(name OPERATOR(pg_catalog.||) "
							 "CASE WHEN pg_catalog.pg_has_role(current_user, owner, 'MEMBER') THEN '' "
							 "ELSE pg_catalog.format(' (owned by %s)', owner) END, ', ' ORDER BY name) "
							 "FROM corpq.model_catalog "
							 "WHERE src_vocab OPERATOR(pg_catalog.=) $1 OR tgt_vocab OPERATOR(pg_catalog.=) $1",
							 1, argtypes, values, NULL, false, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	users = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (users != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot drop vocabulary \"%s\" because models use it", name),
				 errdetail("Models using it: %s.", users),
				 errhint("Drop those models first with corpq.model_drop(), or ask their owners to.")));

	rc = corpq_sql_as_owner("DELETE FROM corpq.vocabularies WHERE name OPERATOR(pg_catalog.=) $1",
							1, argtypes, values, NULL, 0);
	if (rc != SPI_OK_DELETE)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	SPI_finish();
	PG_RETURN_VOID();
}
