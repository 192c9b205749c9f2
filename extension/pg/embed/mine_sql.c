/*
 * corpq.mine_vectors(src_query, tgt_query, options): margin-based mining of
 * pairs from two queries returning (id, embedding real[]) (embed.h,
 * docs/embeddings.md).
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "pg/base/errors.h"
#include "pg/embed/embed.h"

PG_FUNCTION_INFO_V1(corpq_mine_vectors);

/* corpq.mine_vectors()'s arguments, in order (89_embed.sql). */
static const char *const arg_names[] = {"src_query", "tgt_query", "options"};

Datum
corpq_mine_vectors(PG_FUNCTION_ARGS)
{
	cq_mine_options o;
	CorpqVectorSet src,
				tgt;

	/* not STRICT: a NULL query is an error, not an empty result */
	for (int i = 0; i < 2; i++)
		corpq_require_arg(fcinfo, i, arg_names[i]);
	corpq_mine_options_parse(PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2), &o);
	InitMaterializedSRF(fcinfo, 0);

	corpq_vector_set_init(&src, "source", NULL, o.k);
	corpq_vector_set_read(&src, text_to_cstring(PG_GETARG_TEXT_PP(0)));
	corpq_vector_set_finish(&src);
	corpq_vector_set_init(&tgt, "target", &src, o.k);
	corpq_vector_set_read(&tgt, text_to_cstring(PG_GETARG_TEXT_PP(1)));
	corpq_vector_set_finish(&tgt);
	corpq_mine_sets(&src, &tgt, &o, corpq_mine_put_pair, fcinfo->resultinfo);
	return (Datum) 0;
}
