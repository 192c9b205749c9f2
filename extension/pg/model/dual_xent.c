/*
 * corpq.dual_xent(): dual conditional cross-entropy filtering (Junczys-
 * Dowmunt, WMT 2018 parallel corpus filtering).  With the length-normalised
 * cross-entropies of a forward model A (src -> tgt) and a backward model B
 * (tgt -> src),
 *     H_A = -log P_A(tgt | src) / (|tgt| + 1),  H_B = -log P_B(src | tgt) / (|src| + 1)
 * (nats per token, </s> included: -ln sent_prob), the pair's score is
 *     exp(-(|H_A - H_B| + (H_A + H_B) / 2))   in (0, 1]:
 * high when both models find the pair probable and agree on it.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "utils/builtins.h"

#include "pg/base/base.h"
#include "pg/model/model_score.h"

PG_FUNCTION_INFO_V1(corpq_dual_xent);
PG_FUNCTION_INFO_V1(corpq_dual_xent_pinned);

/* One scorer per direction, kept across the calls of a query. */
typedef struct DualScorers
{
	CorpqScorer *forward;
	CorpqScorer *backward;
} DualScorers;

static DualScorers *
cached(FunctionCallInfo fcinfo)
{
	DualScorers *d = fcinfo->flinfo->fn_extra;

	if (d == NULL)
	{
		d = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(DualScorers));
		d->forward = corpq_scorer_create(fcinfo->flinfo->fn_mcxt);
		d->backward = corpq_scorer_create(fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = d;
	}
	return d;
}

/* -log P(y | x) / (|y| + 1) with model spec. */
static double
xent(CorpqScorer *s, text *spec, bool pinned, text *x, text *y)
{
	cq_pair		p;

	corpq_scorer_use(s, text_to_cstring(spec), pinned);
	corpq_scorer_encode(s, VARDATA_ANY(x), VARSIZE_ANY_EXHDR(x),
						VARDATA_ANY(y), VARSIZE_ANY_EXHDR(y), &p);
	corpq_scorer_forward(s, &p, 1, NULL);
	return -s->out.sent_logp[0] / s->out.sent_count[0];
}

static Datum
dual_xent(FunctionCallInfo fcinfo, bool pinned)
{
	DualScorers *d = cached(fcinfo);
	text	   *src = PG_GETARG_TEXT_PP(2);
	text	   *tgt = PG_GETARG_TEXT_PP(3);
	double		ha,
				hb;

	corpq_require_utf8();
	ha = xent(d->forward, PG_GETARG_TEXT_PP(0), pinned, src, tgt);
	hb = xent(d->backward, PG_GETARG_TEXT_PP(1), pinned, tgt, src);
	PG_RETURN_FLOAT8(exp(-(fabs(ha - hb) + 0.5 * (ha + hb))));
}

Datum
corpq_dual_xent(PG_FUNCTION_ARGS)
{
	return dual_xent(fcinfo, false);
}

Datum
corpq_dual_xent_pinned(PG_FUNCTION_ARGS)
{
	return dual_xent(fcinfo, true);
}
