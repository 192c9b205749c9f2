/*
 * The pipelines' quality gates: see pipeline_gate.h.
 */
#include "postgres.h"

#include <math.h>

#include "utils/builtins.h"

#include "pg/pipeline/pipeline.h"
#include "pg/pipeline/pipeline_gate.h"
#include "pg/pipeline/pipeline_synthetic.h"

const char *const pipeline_gate_names[] = {"warn", "stop", NULL};

/* The translation options of the gates: the pipeline's beam. */
static char *
options(int beam)
{
	return quote_literal_cstr(psprintf("{\"beam\": %d}", beam));
}

/* BLEU of model on dev, as a double (NaN for an empty dev set). */
static double
dev_bleu(const char *model, const char *dev, int beam)
{
	char	   *v = pipeline_value_user(psprintf(
		"SELECT corpq.bleu(corpq.translate(%s, d.src, %s), d.tgt) FROM (%s) d(src, tgt)",
		quote_literal_cstr(model), options(beam), dev));

	return v ? strtod(v, NULL) : NAN;
}

static char *
number(double x)
{
	return isnan(x) ? "null" : psprintf("%.4f", x);
}

char *
pipeline_gate_check(const char *what, const char *model, const char *baseline,
					const char *dev, int beam, PipelineGate gate)
{
	double		m,
				b;

	if (dev == NULL)
		return "\"gate\": \"no dev set\"";
	m = dev_bleu(model, dev, beam);
	if (baseline == NULL)
		return psprintf("\"dev_bleu\": %s", number(m));
	b = dev_bleu(baseline, dev, beam);
	if (!(m < b))
		return psprintf("\"dev_bleu\": %s, \"baseline_bleu\": %s", number(m), number(b));
	if (gate == PIPELINE_GATE_STOP)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("the %s's dev BLEU %.2f is below the baseline's %.2f", what, m, b),
				 errhint("Set \"gate\": \"warn\" to go on with it, or give a better model.")));
	return psprintf("\"dev_bleu\": %s, \"baseline_bleu\": %s, "
					"\"warning\": \"the %s's dev BLEU %.2f is below the baseline's %.2f\"",
					number(m), number(b), what, m, b);
}

/*
 * What a final model below its baseline does differently, as the warning's
 * second half: a model that runs on (more translations cut at the length
 * limit, or a tenth more words) or stops short says so; otherwise the loss
 * is in the words.  The figures are in the output beside it.
 */
static char *
gate_cause(double cut, double base_cut, double words, double base_words)
{
	if (cut > base_cut || words > 1.1 * base_words)
		return psprintf("it runs on: %.0f of its dev translations are cut at the length limit "
						"(the baseline's: %.0f), %.1f words on average (the baseline's: %.1f)",
						cut, base_cut, words, base_words);
	if (words < 0.9 * base_words)
		return psprintf("its dev translations are short: %.1f words on average (the baseline's: %.1f)",
						words, base_words);
	return psprintf("its dev translations are as long as the baseline's (%.1f words on average "
					"against %.1f): the loss is in their words", words, base_words);
}

/*
 * The measuring query, one line of numbers: the baseline's (a) and the
 * model's (b) BLEU, the p-value, their cut translations and mean words.
 * nbest 1 of the same search is corpq.translate's output, with finished.
 */
static char *
final_query(const char *model, const char *baseline, const char *dev, int beam)
{
	char	   *o = quote_literal_cstr(psprintf("{\"beam\": %d, \"nbest\": 1}", beam));

	return psprintf(
		"WITH x AS (SELECT a.hyp AS a, a.finished AS fa, b.hyp AS b, b.finished AS fb, d.tgt "
		"FROM (%s) d(src, tgt), corpq.translate_nbest(%s, d.src, %s) a, "
		"corpq.translate_nbest(%s, d.src, %s) b) "
		"SELECT pg_catalog.concat_ws(' ', r.score_a, r.score_b, r.p_value, "
		"c.cut_a, c.cut_b, c.words_a, c.words_b) FROM "
		"(SELECT (corpq.paired_bootstrap(a, b, tgt)).* FROM x) r, "
		"(SELECT pg_catalog.count(*) FILTER (WHERE NOT fa) AS cut_a, "
		"pg_catalog.count(*) FILTER (WHERE NOT fb) AS cut_b, "
		"coalesce(pg_catalog.avg(%s), 0) AS words_a, coalesce(pg_catalog.avg(%s), 0) AS words_b "
		"FROM x) c",
		dev, quote_literal_cstr(baseline), o, quote_literal_cstr(model), o,
		pipeline_synthetic_words("a"), pipeline_synthetic_words("b"));
}

char *
pipeline_gate_final(const char *what, const char *model, const char *baseline,
					const char *dev, int beam)
{
	char	   *row,
			   *at;
	double		v[7];
	char	   *out;

	if (dev == NULL)
		return "\"gate\": \"no dev set\"";
	row = pipeline_value_user(final_query(model, baseline, dev, beam));
	if (row == NULL || *row == '\0')
		return "\"dev_bleu\": null";
	at = row;
	for (int i = 0; i < 7; i++)
		v[i] = strtod(at, &at);
	/* v: baseline BLEU, final BLEU, p, baseline cut, final cut, their mean words */
	out = psprintf("\"dev_bleu\": %s, \"baseline_bleu\": %s, \"bleu_change\": %s, \"p_value\": %s, "
				   "\"cut\": %.0f, \"baseline_cut\": %.0f, \"words\": %s, \"baseline_words\": %s",
				   number(v[1]), number(v[0]), number(v[1] - v[0]), number(v[2]),
				   v[4], v[3], number(v[6]), number(v[5]));
	if (v[1] < v[0])
		out = psprintf("%s, \"warning\": \"the %s's dev BLEU %.2f is below the baseline's %.2f "
					   "(p = %.3f): %s\"", out, what, v[1], v[0], v[2],
					   gate_cause(v[4], v[3], v[6], v[5]));
	return out;
}
