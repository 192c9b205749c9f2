/*
 * Per-query state of the metric functions (fn_extra): the core's workspace,
 * grown once to the longest sentence and reused, and the parsed options of
 * the last options value seen -- an aggregate gets the same constant jsonb
 * on every row, and parsing it each time would cost more than the metric.
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "utils/memutils.h"

#include "pg/base/errors.h"
#include "pg/metrics/metrics.h"

MetricsCache *
metrics_cache(FunctionCallInfo fcinfo)
{
	MetricsCache *c = fcinfo->flinfo->fn_extra;

	/* everything, the core's buffers too, lives in fn_mcxt and goes with it */
	if (c == NULL)
	{
		c = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(MetricsCache));
		c->mcxt = fcinfo->flinfo->fn_mcxt;
		fcinfo->flinfo->fn_extra = c;
	}
	return c;
}

const MetricOptions *
metrics_cached_options(FunctionCallInfo fcinfo, MetricsCache *c, int argno,
					   MetricKind kind, bool sentence, bool bootstrap)
{
	Jsonb	   *j = PG_NARGS() > argno ? PG_GETARG_JSONB_P(argno) : NULL;
	MetricOptions parsed;

	if (c->parsed &&
		(j == NULL ? c->last_jsonb == NULL :
		 c->last_jsonb != NULL && VARSIZE(j) == VARSIZE(c->last_jsonb) &&
		 memcmp(j, c->last_jsonb, VARSIZE(j)) == 0))
		return &c->options;
	if (bootstrap)
		metrics_bootstrap_options_parse(j, &parsed);
	else
		metrics_options_parse(kind, sentence, j, &parsed);
	if (c->last_jsonb)
		pfree(c->last_jsonb);
	c->last_jsonb = NULL;
	if (j != NULL)
	{
		c->last_jsonb = MemoryContextAlloc(c->mcxt, VARSIZE(j));
		memcpy(c->last_jsonb, j, VARSIZE(j));
	}
	c->options = parsed;
	c->parsed = true;
	return &c->options;
}

void
metrics_text_utf8(text *t, const char **s, size_t *len)
{
	const char *raw = VARDATA_ANY(t);
	int			n = VARSIZE_ANY_EXHDR(t);
	char	   *conv = pg_server_to_any(raw, n, PG_UTF8);

	*s = conv;
	*len = conv == raw ? (size_t) n : strlen(conv);
}

int
metrics_nstats(const MetricOptions *o)
{
	return o->kind == METRIC_BLEU ? cq_bleu_nstats(&o->bleu) : cq_chrf_nstats(&o->chrf);
}

void
metrics_sentence_row(MetricsCache *c, const MetricOptions *o, text *hyp, text *ref, int64 *row)
{
	const char *h,
			   *r;
	size_t		hl,
				rl;
	cq_error	err;
	cq_code		rc;
	MemoryContext old;

	metrics_text_utf8(hyp, &h, &hl);
	metrics_text_utf8(ref, &r, &rl);
	/* the workspace lives in mcxt; the core allocates in the current context */
	old = MemoryContextSwitchTo(c->mcxt);
	if (o->kind == METRIC_BLEU)
	{
		cq_bleu_stats s;

		rc = cq_bleu_sentence_stats(&o->bleu, h, hl, &r, &rl, 1, &c->work, &s, &err);
		if (rc == CQ_OK)
			cq_bleu_stats_pack(&o->bleu, &s, row);
	}
	else
		rc = cq_chrf_sentence_stats(&o->chrf, h, hl, &r, &rl, 1, &c->work, row, &err);
	MemoryContextSwitchTo(old);
	if (rc != CQ_OK)
		corpq_core_error(&err, NULL, "could not compute %s statistics",
						 o->kind == METRIC_BLEU ? "BLEU" : "chrF");
}

double
metrics_score_row(const MetricOptions *o, const int64 *row)
{
	return o->kind == METRIC_BLEU ? cq_bleu_score_row(row, &o->bleu) : cq_chrf_score_row(row, &o->chrf);
}
