/*
 * corpq.translate(model, src, options) and corpq.translate_nbest(...): one
 * sentence, on a model name (STABLE) or a pinned version (IMMUTABLE).
 *
 * The sentence's sampling stream is keyed by its content (corpq_ids_key of
 * its source token ids), so a call gives the same result in every backend
 * and parallel worker; translate_rows() and jobs key it by the row id.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "pg/translate/translate.h"

PG_FUNCTION_INFO_V1(corpq_translate);
PG_FUNCTION_INFO_V1(corpq_translate_pinned);
PG_FUNCTION_INFO_V1(corpq_translate_nbest);
PG_FUNCTION_INFO_V1(corpq_translate_nbest_pinned);

/* Per call site (fn_extra): the engine and the last options parsed. */
typedef struct OneCall
{
	CorpqTranslateEngine *e;
	Jsonb	   *options;		/* copy of the jsonb the options came from */
	CorpqTranslateOptions o;
	/* what the callback writes */
	FunctionCallInfo fcinfo;
	text	   *best;
} OneCall;

static void take_best(void *arg, const CorpqTranslated *t);
static void take_nbest(void *arg, const CorpqTranslated *t);

static OneCall *
one_call(FunctionCallInfo fcinfo, CorpqTranslatedFn fn)
{
	OneCall    *c = fcinfo->flinfo->fn_extra;

	if (c == NULL)
	{
		c = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(OneCall));
		c->e = corpq_translate_engine_create(fcinfo->flinfo->fn_mcxt, fn, c);
		fcinfo->flinfo->fn_extra = c;
	}
	return c;
}

/* Parse the options unless they are the bytes parsed last time. */
static void
use_options(FunctionCallInfo fcinfo, OneCall *c, Jsonb *j)
{
	if (c->options && VARSIZE(c->options) == VARSIZE(j) &&
		memcmp(c->options, j, VARSIZE(j)) == 0)
		return;
	if (c->options)
		pfree(c->options);
	c->options = NULL;
	corpq_translate_options_parse(CORPQ_TRANSLATE_ONE, j, &c->o);
	c->options = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, VARSIZE(j));
	memcpy(c->options, j, VARSIZE(j));
}

/* Translate argument 1 with the model of argument 0; fn gets the sentence. */
static void
translate_one(FunctionCallInfo fcinfo, bool pinned, CorpqTranslatedFn fn)
{
	OneCall    *c = one_call(fcinfo, fn);
	text	   *src = PG_GETARG_TEXT_PP(1);
	int32	   *ids;
	int			n;

	corpq_require_utf8();
	use_options(fcinfo, c, PG_GETARG_JSONB_P(2));
	/* a call that an error interrupted (caught by the caller) left sentences behind */
	corpq_translate_reset(c->e);
	corpq_translate_engine_use(c->e, text_to_cstring(PG_GETARG_TEXT_PP(0)), pinned, &c->o, 1);
	ids = corpq_translate_encode(c->e, VARDATA_ANY(src), VARSIZE_ANY_EXHDR(src), &n);
	c->fcinfo = fcinfo;
	c->best = NULL;
	if (ids == NULL)
		return;					/* too long, skip_too_long: NULL, no rows */
	corpq_translate_add(c->e, 0, corpq_ids_key(0, ids, n), ids, n, 0);
	corpq_translate_run(c->e, true);
}

static void
take_best(void *arg, const CorpqTranslated *t)
{
	OneCall    *c = arg;

	if (t->n_hyps > 0)
		c->best = corpq_translate_text(c->e, &t->hyps[0]);
}

static Datum
translate_best(FunctionCallInfo fcinfo, bool pinned)
{
	OneCall    *c;

	translate_one(fcinfo, pinned, take_best);
	c = fcinfo->flinfo->fn_extra;
	if (c->best == NULL)
		PG_RETURN_NULL();		/* no hypothesis with a finite score */
	PG_RETURN_TEXT_P(c->best);
}

Datum
corpq_translate(PG_FUNCTION_ARGS)
{
	return translate_best(fcinfo, false);
}

Datum
corpq_translate_pinned(PG_FUNCTION_ARGS)
{
	return translate_best(fcinfo, true);
}

/* One row per hypothesis: rank, text, score, per-token log-probabilities, finished. */
static void
take_nbest(void *arg, const CorpqTranslated *t)
{
	OneCall    *c = arg;
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) c->fcinfo->resultinfo;

	for (int h = 0; h < t->n_hyps; h++)
	{
		const cq_hypothesis *hyp = &t->hyps[h];
		Datum	   *lps = palloc(sizeof(Datum) * (hyp->len + 1));
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};

		for (int i = 0; i <= hyp->len; i++)
			lps[i] = Float8GetDatum(hyp->token_logprobs[i]);
		values[0] = Int32GetDatum(h + 1);
		values[1] = PointerGetDatum(corpq_translate_text(c->e, hyp));
		values[2] = Float8GetDatum(hyp->score);
		values[3] = PointerGetDatum(construct_array(lps, hyp->len + 1, FLOAT8OID, 8,
													FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		values[4] = BoolGetDatum(hyp->finished);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

static Datum
translate_nbest(FunctionCallInfo fcinfo, bool pinned)
{
	InitMaterializedSRF(fcinfo, 0);
	translate_one(fcinfo, pinned, take_nbest);
	return (Datum) 0;
}

Datum
corpq_translate_nbest(PG_FUNCTION_ARGS)
{
	return translate_nbest(fcinfo, false);
}

Datum
corpq_translate_nbest_pinned(PG_FUNCTION_ARGS)
{
	return translate_nbest(fcinfo, true);
}
