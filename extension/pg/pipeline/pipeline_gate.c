/*
 * The pipelines' quality gates: see pipeline_gate.h.
 */
#include "postgres.h"

#include <math.h>

#include "utils/builtins.h"

#include "pg/pipeline/pipeline.h"
#include "pg/pipeline/pipeline_gate.h"

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

char *
pipeline_gate_final(const char *what, const char *model, const char *baseline,
					const char *dev, int beam)
{
	char	   *o = options(beam);
	char	   *row,
			   *at;
	double		a,
				b,
				p;
	char	   *out;

	if (dev == NULL)
		return "\"gate\": \"no dev set\"";
	/* system A the baseline, B the final model */
	row = pipeline_value_user(psprintf(
		"SELECT pg_catalog.concat_ws(' ', r.score_a, r.score_b, r.p_value) FROM ("
		"SELECT (corpq.paired_bootstrap(a, b, tgt)).* FROM ("
		"SELECT corpq.translate(%s, d.src, %s) AS a, corpq.translate(%s, d.src, %s) AS b, d.tgt "
		"FROM (%s) d(src, tgt)) x) r",
		quote_literal_cstr(baseline), o, quote_literal_cstr(model), o, dev));
	if (row == NULL || *row == '\0')
		return "\"dev_bleu\": null";
	a = strtod(row, &at);
	b = strtod(at, &at);
	p = strtod(at, NULL);
	out = psprintf("\"dev_bleu\": %s, \"baseline_bleu\": %s, \"bleu_change\": %s, "
				   "\"p_value\": %s", number(b), number(a), number(b - a), number(p));
	if (b < a)
		out = psprintf("%s, \"warning\": \"the %s's dev BLEU %.2f is below the baseline's %.2f "
					   "(p = %.3f)\"", out, what, b, a, p);
	return out;
}
