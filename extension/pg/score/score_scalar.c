/*
 * Per-pair scoring functions: sent_prob, sent_logprob, token_scores,
 * uncertainty -- each on a model name (text, STABLE) or a pinned version
 * (corpq.pinned_model, IMMUTABLE); both are stored as text.  A pair longer
 * than the model accepts gives NULL (no rows for token_scores), or an ERROR
 * when an overload's last argument, on_too_long, says 'error'; the calls
 * without it (the 0.1.0 signatures) have fewer arguments.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "pg/base/base.h"
#include "pg/score/score.h"

PG_FUNCTION_INFO_V1(corpq_sent_prob);
PG_FUNCTION_INFO_V1(corpq_sent_prob_pinned);
PG_FUNCTION_INFO_V1(corpq_sent_logprob);
PG_FUNCTION_INFO_V1(corpq_sent_logprob_pinned);
PG_FUNCTION_INFO_V1(corpq_token_scores);
PG_FUNCTION_INFO_V1(corpq_token_scores_pinned);
PG_FUNCTION_INFO_V1(corpq_uncertainty);
PG_FUNCTION_INFO_V1(corpq_uncertainty_pinned);

/*
 * The scorer on argument 0's model, with arguments 1 and 2 encoded into p;
 * NULL when the pair is too long for the model and argument too_long_arg
 * (on_too_long, when the call has it) says 'null'.
 */
static CorpqModelSession *
prepare(FunctionCallInfo fcinfo, bool pinned, int too_long_arg, cq_pair *p)
{
	CorpqModelSession *s = corpq_model_session_cached(fcinfo);
	text	   *src = PG_GETARG_TEXT_PP(1);
	text	   *tgt = PG_GETARG_TEXT_PP(2);
	CorpqTooLong on_too_long = corpq_too_long_arg(fcinfo, too_long_arg);

	corpq_require_utf8();
	corpq_model_session_use(s, text_to_cstring(PG_GETARG_TEXT_PP(0)), pinned);
	if (!corpq_model_session_encode(s, VARDATA_ANY(src), VARSIZE_ANY_EXHDR(src),
							 VARDATA_ANY(tgt), VARSIZE_ANY_EXHDR(tgt), on_too_long, p))
		return NULL;
	return s;
}

static Datum
sent_score(FunctionCallInfo fcinfo, bool pinned, bool prob)
{
	cq_pair		p;
	CorpqModelSession *s = prepare(fcinfo, pinned, 3, &p);
	double		logp;

	if (s == NULL)
		PG_RETURN_NULL();
	corpq_score_forward(s, &p, 1, NULL);
	logp = s->out.sent_logp[0];
	PG_RETURN_FLOAT8(prob ? exp(logp / s->out.sent_count[0]) : logp);
}

Datum
corpq_sent_prob(PG_FUNCTION_ARGS)
{
	return sent_score(fcinfo, false, true);
}

Datum
corpq_sent_prob_pinned(PG_FUNCTION_ARGS)
{
	return sent_score(fcinfo, true, true);
}

Datum
corpq_sent_logprob(PG_FUNCTION_ARGS)
{
	return sent_score(fcinfo, false, false);
}

Datum
corpq_sent_logprob_pinned(PG_FUNCTION_ARGS)
{
	return sent_score(fcinfo, true, false);
}

static text *
vocab_token(CorpqVocab *v, int32 id)
{
	size_t		len;
	const char *tok = cq_strmap_key(&v->vocab.map, (size_t) id, &len);

	return cstring_to_text_with_len(tok, (int) len);
}

/* One row per scored target position: the subword (or </s>), its log p, the prediction. */
static Datum
token_scores(FunctionCallInfo fcinfo, bool pinned)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	cq_pair		p;
	CorpqModelSession *s;
	const cq_tokens *toks;

	InitMaterializedSRF(fcinfo, 0);
	s = prepare(fcinfo, pinned, 3, &p);
	if (s == NULL)
		return (Datum) 0;		/* too long: no rows, as for a NULL side */
	toks = &s->tgt_vocab->seg->tokens;	/* the target's subwords, from encoding it */
	Assert((int) toks->n == p.tgt_len);
	corpq_score_forward(s, &p, 1, NULL);
	for (int t = 0; t <= p.tgt_len; t++)
	{
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};

		values[0] = Int32GetDatum(t + 1);
		values[1] = t < p.tgt_len
			? PointerGetDatum(cstring_to_text_with_len(toks->buf + toks->off[t], toks->len[t]))
			: CStringGetTextDatum("</s>");
		values[2] = Float8GetDatum(s->out.logp[t]);
		values[3] = PointerGetDatum(vocab_token(s->tgt_vocab, s->out.argmax[t]));
		values[4] = Float8GetDatum(s->out.p_max[t]);
		values[5] = Float8GetDatum(s->out.entropy[t]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

Datum
corpq_token_scores(PG_FUNCTION_ARGS)
{
	return token_scores(fcinfo, false);
}

Datum
corpq_token_scores_pinned(PG_FUNCTION_ARGS)
{
	return token_scores(fcinfo, true);
}

static Datum
uncertainty(FunctionCallInfo fcinfo, bool pinned)
{
	cq_uncertainty measure = corpq_measure_from_name(text_to_cstring(PG_GETARG_TEXT_PP(3)));
	int32		passes = PG_GETARG_INT32(4);
	uint64		seed = (uint64) PG_GETARG_INT64(5);
	cq_pair		p;
	CorpqModelSession *s;
	double		r;

	corpq_check_passes(passes);
	s = prepare(fcinfo, pinned, 6, &p);
	if (s == NULL)
		PG_RETURN_NULL();
	corpq_score_uncertainty(s, &p, 1, measure, passes, seed, &r);
	PG_RETURN_FLOAT8(r);
}

Datum
corpq_uncertainty(PG_FUNCTION_ARGS)
{
	return uncertainty(fcinfo, false);
}

Datum
corpq_uncertainty_pinned(PG_FUNCTION_ARGS)
{
	return uncertainty(fcinfo, true);
}
