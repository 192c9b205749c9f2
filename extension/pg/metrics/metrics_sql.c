/*
 * The scalar metric functions: sentence_bleu(), sentence_chrf(), the
 * signatures, and bleu_tokenize() (what BLEU counts, for inspection).
 */
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "metrics/signature.h"
#include "pg/base/errors.h"
#include "pg/metrics/metrics.h"

PG_FUNCTION_INFO_V1(corpq_sentence_bleu);
PG_FUNCTION_INFO_V1(corpq_sentence_chrf);
PG_FUNCTION_INFO_V1(corpq_bleu_signature);
PG_FUNCTION_INFO_V1(corpq_chrf_signature);
PG_FUNCTION_INFO_V1(corpq_bleu_tokenize);

/* (hyp, ref, options): the metric of one sentence pair */
static Datum
sentence_score(FunctionCallInfo fcinfo, MetricKind kind)
{
	MetricsCache *c = metrics_cache(fcinfo);
	const MetricOptions *o = metrics_cached_options(fcinfo, c, 2, kind, true, false);
	int64		row[CQ_CHRF_MAX_STATS];

	metrics_sentence_row(c, o, PG_GETARG_TEXT_PP(0), PG_GETARG_TEXT_PP(1), row);
	PG_RETURN_FLOAT8(metrics_score_row(o, row));
}

Datum
corpq_sentence_bleu(PG_FUNCTION_ARGS)
{
	return sentence_score(fcinfo, METRIC_BLEU);
}

Datum
corpq_sentence_chrf(PG_FUNCTION_ARGS)
{
	return sentence_score(fcinfo, METRIC_CHRF);
}

static Datum
signature(FunctionCallInfo fcinfo, MetricKind kind)
{
	MetricOptions o;
	char		buf[256];

	metrics_options_parse(kind, false, PG_GETARG_JSONB_P(0), &o);
	if (kind == METRIC_BLEU)
		cq_bleu_signature(&o.bleu, 1, buf, sizeof(buf));
	else
		cq_chrf_signature(&o.chrf, 1, buf, sizeof(buf));
	PG_RETURN_TEXT_P(cstring_to_text(buf));
}

Datum
corpq_bleu_signature(PG_FUNCTION_ARGS)
{
	return signature(fcinfo, METRIC_BLEU);
}

Datum
corpq_chrf_signature(PG_FUNCTION_ARGS)
{
	return signature(fcinfo, METRIC_CHRF);
}

/* (text, options): the tokens BLEU counts, separated by single spaces */
Datum
corpq_bleu_tokenize(PG_FUNCTION_ARGS)
{
	MetricsCache *c = metrics_cache(fcinfo);
	const MetricOptions *o = metrics_cached_options(fcinfo, c, 1, METRIC_BLEU, false, false);
	const char *s;
	size_t		len,
				out_len;
	char	   *out;
	cq_error	err;
	cq_code		rc;
	text	   *result;
	MemoryContext old;

	metrics_text_utf8(PG_GETARG_TEXT_PP(0), &s, &len);
	old = MemoryContextSwitchTo(c->mcxt);
	rc = cq_bleu_tokenized(&o->bleu, s, len, &c->work, &out, &out_len, &err);
	MemoryContextSwitchTo(old);
	if (rc != CQ_OK)
		corpq_core_error(&err, NULL, "could not tokenize the text");
	s = pg_any_to_server(out, (int) out_len, PG_UTF8);
	result = cstring_to_text(s);
	pfree(out);
	PG_RETURN_TEXT_P(result);
}
