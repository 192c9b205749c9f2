/*
 * The aggregates bleu() and chrf(): transition, combine and final functions
 * over the bigint[] state of metrics_state.c.
 *
 * The transition functions are STRICT with the initial state '{}', so a row
 * with a NULL hyp, ref or options is skipped, as SQL aggregates skip NULLs,
 * and an aggregate over no (non-NULL) row is NULL.  Called as aggregates
 * they add to their state in place (the state is theirs; the executor
 * copies a new one into the aggregate's context), so a row costs no
 * allocation beyond the core's reused workspace.
 */
#include "postgres.h"

#include "fmgr.h"

#include "pg/metrics/metrics.h"

PG_FUNCTION_INFO_V1(corpq_bleu_trans);
PG_FUNCTION_INFO_V1(corpq_chrf_trans);
PG_FUNCTION_INFO_V1(corpq_metrics_combine);
PG_FUNCTION_INFO_V1(corpq_bleu_final);
PG_FUNCTION_INFO_V1(corpq_chrf_final);

/* The state to add to: arg 0 itself inside an aggregate, else a copy. */
static ArrayType *
writable_state(FunctionCallInfo fcinfo)
{
	return AggCheckCallContext(fcinfo, NULL) ? PG_GETARG_ARRAYTYPE_P(0) : PG_GETARG_ARRAYTYPE_P_COPY(0);
}

/* (state, hyp, ref [, options]) -> state */
static Datum
metrics_trans(FunctionCallInfo fcinfo, MetricKind kind)
{
	MetricsCache *c = metrics_cache(fcinfo);
	const MetricOptions *o = metrics_cached_options(fcinfo, c, 3, kind, false, false);
	ArrayType  *state = writable_state(fcinfo);
	int64		row[CQ_CHRF_MAX_STATS];
	int			n;
	int64	   *stats;

	if (metrics_state_is_empty(state))
		state = metrics_state_new(o);
	else
		metrics_state_check_options(state, o);
	stats = metrics_state_stats(state, &n, NULL);
	metrics_sentence_row(c, o, PG_GETARG_TEXT_PP(1), PG_GETARG_TEXT_PP(2), row);
	metrics_stats_add(stats, row, n);
	PG_RETURN_ARRAYTYPE_P(state);
}

Datum
corpq_bleu_trans(PG_FUNCTION_ARGS)
{
	return metrics_trans(fcinfo, METRIC_BLEU);
}

Datum
corpq_chrf_trans(PG_FUNCTION_ARGS)
{
	return metrics_trans(fcinfo, METRIC_CHRF);
}

/* Partial states of one aggregate (parallel workers, partitions, nodes). */
Datum
corpq_metrics_combine(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0),
			   *b = PG_GETARG_ARRAYTYPE_P(1);
	MetricOptions ob;
	int			na,
				nb;
	int64	   *sa,
			   *sb;

	if (metrics_state_is_empty(b))
		PG_RETURN_ARRAYTYPE_P(a);
	if (metrics_state_is_empty(a))
		PG_RETURN_ARRAYTYPE_P(b);
	a = writable_state(fcinfo);
	sb = metrics_state_stats(b, &nb, &ob);
	metrics_state_check_options(a, &ob);
	sa = metrics_state_stats(a, &na, NULL);
	Assert(na == nb);
	metrics_stats_add(sa, sb, na);
	PG_RETURN_ARRAYTYPE_P(a);
}

static Datum
metrics_final(FunctionCallInfo fcinfo, MetricKind kind)
{
	ArrayType  *state = PG_GETARG_ARRAYTYPE_P(0);
	MetricOptions o;
	int			n;
	int64	   *stats;

	if (metrics_state_is_empty(state))
		PG_RETURN_NULL();
	stats = metrics_state_stats(state, &n, &o);
	if (o.kind != kind)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the aggregate state holds %s statistics, not %s",
						o.kind == METRIC_BLEU ? "BLEU" : "chrF", kind == METRIC_BLEU ? "BLEU" : "chrF")));
	PG_RETURN_FLOAT8(metrics_score_row(&o, stats));
}

Datum
corpq_bleu_final(PG_FUNCTION_ARGS)
{
	return metrics_final(fcinfo, METRIC_BLEU);
}

Datum
corpq_chrf_final(PG_FUNCTION_ARGS)
{
	return metrics_final(fcinfo, METRIC_CHRF);
}
