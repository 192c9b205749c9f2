/*
 * corpq.embed(model, sentence [, on_too_long]): a sentence's vector from an
 * encoder model (kind encoder, models/FORMAT.md "Encoder models"), on a
 * model name (STABLE) or a pinned version (IMMUTABLE).  The model is
 * resolved once per query through the scorer of model_score.h (the same
 * version for the whole query, the vocabulary loaded once); the vector is
 * corpq_embed_rows' (embed.h), the path of every caller that embeds, which
 * gives a sentence the same bits alone or in any batch.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "pg/embed/embed.h"
#include "pg/model/model_score.h"

PG_FUNCTION_INFO_V1(corpq_embed);
PG_FUNCTION_INFO_V1(corpq_embed_pinned);

static Datum
embed(FunctionCallInfo fcinfo, bool pinned)
{
	CorpqScorer *s = corpq_scorer_cached(fcinfo);
	text	   *sentence = PG_GETARG_TEXT_PP(1);
	CorpqEmbedArgs a = {.batch_size = 1, .on_too_long = corpq_too_long_arg(fcinfo, 2)};
	CorpqEmbedRow row = {.text = VARDATA_ANY(sentence), .len = VARSIZE_ANY_EXHDR(sentence)};
	float	   *vec;
	Datum	   *elems;
	int			d;

	corpq_scorer_use(s, text_to_cstring(PG_GETARG_TEXT_PP(0)), pinned);
	corpq_embed_require_encoder(s, "corpq.embed");
	d = corpq_embed_dim(s);
	vec = palloc(sizeof(float) * d);
	corpq_embed_rows(s, &a, &row, 1, vec);
	if (row.null)
		PG_RETURN_NULL();
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
