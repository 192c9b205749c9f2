/*
 * corpq.embed(model, sentence [, on_too_long]): a sentence's vector from an
 * encoder model (kind encoder, models/FORMAT.md "Encoder models"), on a
 * model name (STABLE) or a pinned version (IMMUTABLE).  The model is
 * resolved once per query through the scorer of model_score.h (the same
 * version for the whole query, the vocabulary loaded once); the vector is
 * cq_encode's, which gives a sentence the same bits alone or in any batch.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "nn/infer/encode.h"
#include "pg/base/base.h"
#include "pg/base/errors.h"
#include "pg/model/model_score.h"

PG_FUNCTION_INFO_V1(corpq_embed);
PG_FUNCTION_INFO_V1(corpq_embed_pinned);

/* ERROR unless the scorer's current model is an encoder model. */
static void
require_encoder(const CorpqScorer *s)
{
	if (s->cfg.kind != CQ_KIND_ENCODER)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" is not an encoder model", s->cur->spec),
				 errhint("corpq.embed needs a model created with \"kind\": \"encoder\"; "
						 "a translation model scores pairs (corpq.sent_prob).")));
}

/* Whether n tokens fit the encoder; false or an ERROR (on_too_long) if not. */
static bool
sentence_fits(const CorpqScorer *s, int n, CorpqTooLong on_too_long)
{
	int			most = cq_config_sentence_tokens(&s->cfg);

	if (n <= most)
		return true;
	if (on_too_long == CORPQ_TOO_LONG_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("sentence has %d tokens, model \"%s\" accepts at most %d",
						n, s->cur->spec, most),
				 errhint("The model's max_positions is %d, <s> and </s> included; split longer sentences or filter them out.",
						 s->cfg.max_positions)));
	return false;
}

/* The scorer's workspace grown to bytes (within corpq.max_batch_mb). */
static void
ensure_workspace(CorpqScorer *s, Size bytes)
{
	if (bytes > corpq_batch_bytes_limit())
		corpq_batch_too_large(1, "sentence", bytes);
	if (bytes <= s->ws_bytes)
		return;
	if (s->ws)
		pfree(s->ws);
	s->ws = NULL;
	s->ws = MemoryContextAllocHuge(s->cxt, bytes);
	s->ws_bytes = bytes;
}

static Datum
embed(FunctionCallInfo fcinfo, bool pinned)
{
	CorpqScorer *s = corpq_scorer_cached(fcinfo);
	text	   *sentence = PG_GETARG_TEXT_PP(1);
	CorpqTooLong on_too_long = corpq_too_long_arg(fcinfo, 2);
	cq_sentence one = {0};
	const cq_model *m;
	cq_error	err = {0};
	cq_code		st;
	float	   *vec;
	Datum	   *elems;
	int			d;

	corpq_require_utf8();
	corpq_scorer_use(s, text_to_cstring(PG_GETARG_TEXT_PP(0)), pinned);
	require_encoder(s);
	one.ids = corpq_vocab_encode_text(s->src_vocab, VARDATA_ANY(sentence),
									  VARSIZE_ANY_EXHDR(sentence), &one.len);
	if (!sentence_fits(s, one.len, on_too_long))
		PG_RETURN_NULL();
	corpq_blas_ensure();
	ensure_workspace(s, cq_encode_sentences_bytes(&s->cfg, &one, 1));
	/* looked up on every call: anything run since may have evicted it */
	m = corpq_model_get(&s->cur->ref);
	d = m->cfg.d_model;
	vec = palloc(sizeof(float) * d);
	st = cq_encode(m, &one, 1, NULL, s->ws, s->ws_bytes, vec, &err);
	if (st != CQ_OK)
		corpq_core_error(&err, NULL, "could not embed the sentence");
	elems = palloc(sizeof(Datum) * d);
	for (int i = 0; i < d; i++)
		elems[i] = Float4GetDatum(vec[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, d, FLOAT4OID, sizeof(float4), true,
										  TYPALIGN_INT));
}

Datum
corpq_embed(PG_FUNCTION_ARGS)
{
	return embed(fcinfo, false);
}

Datum
corpq_embed_pinned(PG_FUNCTION_ARGS)
{
	return embed(fcinfo, true);
}
