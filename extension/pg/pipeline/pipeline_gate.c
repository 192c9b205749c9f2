/*
 * The pipelines' quality gates: see pipeline_gate.h.
 */
#include "postgres.h"

#include <math.h>

#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"

#include "pg/pipeline/pipeline.h"
#include "pg/pipeline/pipeline_gate.h"
#include "pg/pipeline/pipeline_synthetic.h"
#include "pg/train/train.h"

const char *const pipeline_gate_names[] = {"warn", "stop", NULL};

/*
 * The dev set translated by the baseline (a; NULL: none, then a is the
 * model's too) and the model (b), one row per dev pair with its label (NULL
 * when the dev query has none; a NULL label is training's default label):
 * the CTE x every gate query reads.  nbest 1
 * of the pipeline's beam is corpq.translate's search, with finished.
 */
static char *
dev_translations(const char *model, const char *baseline, const char *dev, int beam, bool labelled)
{
	char	   *o = quote_literal_cstr(psprintf("{\"beam\": %d, \"nbest\": 1}", beam));
	const char *from_a = baseline ? "a" : "b";

	return psprintf("x AS (SELECT %s AS label, %s.hyp AS a, %s.finished AS fa, b.hyp AS b, "
					"b.finished AS fb, d.tgt FROM (%s) d(src, tgt%s)%s%s%s%s, "
					"corpq.translate_nbest(%s, d.src, %s) b)",
					labelled ? "coalesce(d.label::pg_catalog.text, '" TRAIN_DEFAULT_LABEL "')" : "NULL::pg_catalog.text",
					from_a, from_a, dev, labelled ? ", label" : "",
					baseline ? ", corpq.translate_nbest(" : "",
					baseline ? quote_literal_cstr(baseline) : "",
					baseline ? psprintf(", d.src, %s)", o) : "",
					baseline ? " a" : "",
					quote_literal_cstr(model), o);
}

/*
 * The per-label columns of a gate query over x: the labels' figures as a
 * JSON array ordered by label, and the labels where the model is below the
 * baseline as one phrase (NULL: none).  Without a baseline only the model's
 * BLEU per label.
 */
static char *
label_columns(bool baseline)
{
	if (!baseline)
		return "(SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('label', label, "
			"'dev_bleu', pg_catalog.round(s::pg_catalog.numeric, 4)) ORDER BY label)::pg_catalog.text "
			"FROM (SELECT label, corpq.bleu(b, tgt) AS s FROM x GROUP BY label) l), NULL";
	return "(SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('label', label, "
		"'dev_bleu', pg_catalog.round(score_b::pg_catalog.numeric, 4), "
		"'baseline_bleu', pg_catalog.round(score_a::pg_catalog.numeric, 4), "
		"'p_value', pg_catalog.round(p_value::pg_catalog.numeric, 4)) ORDER BY label)::pg_catalog.text "
		"FROM l), "
		"(SELECT pg_catalog.string_agg(pg_catalog.format('%s (%s against %s, p = %s)', "
		"label, pg_catalog.round(score_b::pg_catalog.numeric, 2), "
		"pg_catalog.round(score_a::pg_catalog.numeric, 2), pg_catalog.round(p_value::pg_catalog.numeric, 3)), "
		"', ' ORDER BY label) FROM l WHERE score_b OPERATOR(pg_catalog.<) score_a)";
}

/* The CTE l: BLEU of both and the paired-bootstrap p-value per label. */
#define LABEL_CTE ", l AS (SELECT label, (corpq.paired_bootstrap(a, b, tgt)).* FROM x GROUP BY label)"

/* A gate's measurement: its numbers, and per label (labels NULL: no label column). */
typedef struct GateRow
{
	double		v[7];
	char	   *labels;			/* JSON array, or NULL */
	char	   *below;			/* the labels below the baseline, or NULL */
} GateRow;

/* Runs a gate query (numbers in column 1, label columns 2 and 3); false: no row. */
static bool
gate_row(const char *sql, int n, GateRow *r)
{
	char	   *at;

	pipeline_exec_user(sql);
	if (SPI_tuptable == NULL || SPI_processed == 0)
		return false;
	at = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (at == NULL || *at == '\0')
		return false;
	for (int i = 0; i < n; i++)
		r->v[i] = strtod(at, &at);
	r->labels = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	r->below = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
	return true;
}

/* Whether dev (the user's query) has a label column: (src, tgt, label). */
static bool
dev_labelled(const char *dev)
{
	return train_check_query(dev, "dev") == 3;
}

static char *
number(double x)
{
	return isnan(x) ? "null" : psprintf("%.4f", x);
}

/* ", \"labels\": [...]" when the dev set has labels, else "". */
static char *
labels_member(const GateRow *r)
{
	return r->labels ? psprintf(", \"labels\": %s", r->labels) : "";
}

/* ", \"warning\": text" with text JSON-escaped (labels are the user's). */
static char *
warning_member(const char *text)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoString(&s, ", \"warning\": ");
	escape_json(&s, text);
	return s.data;
}

/* The warning's per-label part: "; below the baseline on …" or "". */
static char *
below_part(const char *sep, const GateRow *r)
{
	return r->below ? psprintf("%sbelow the baseline on %s", sep, r->below) : "";
}

char *
pipeline_gate_check(const char *what, const char *model, const char *baseline,
					const char *dev, int beam, PipelineGate gate)
{
	bool		labelled;
	GateRow		r = {0};
	double		m,
				b;
	char	   *out;

	if (dev == NULL)
		return "\"gate\": \"no dev set\"";
	labelled = dev_labelled(dev);
	/* v: the model's BLEU, the baseline's (the model's when none) */
	if (!gate_row(psprintf("WITH %s%s SELECT pg_catalog.concat_ws(' ', corpq.bleu(b, tgt), "
						   "corpq.bleu(a, tgt)), %s FROM x",
						   dev_translations(model, baseline, dev, beam, labelled),
						   labelled && baseline ? LABEL_CTE : "",
						   labelled ? label_columns(baseline != NULL) : "NULL, NULL"),
				  2, &r))
		r.v[0] = r.v[1] = NAN;
	m = r.v[0];
	b = r.v[1];
	if (baseline == NULL)
		return psprintf("\"dev_bleu\": %s%s", number(m), labels_member(&r));
	out = psprintf("\"dev_bleu\": %s, \"baseline_bleu\": %s%s", number(m), number(b), labels_member(&r));
	if (!(m < b))
		return r.below ? psprintf("%s%s", out, warning_member(psprintf("the %s's dev BLEU is %s", what,
																	 below_part("", &r))))
			: out;
	if (gate == PIPELINE_GATE_STOP)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("the %s's dev BLEU %.2f is below the baseline's %.2f", what, m, b),
				 errhint("Set \"gate\": \"warn\" to go on with it, or give a better model.")));
	return psprintf("%s%s", out, warning_member(psprintf("the %s's dev BLEU %.2f is below the baseline's %.2f%s",
													   what, m, b, below_part("; ", &r))));
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
 * The measuring query: one line of numbers (the baseline's (a) and the
 * model's (b) BLEU, the p-value, their cut translations and mean words) and
 * the label columns.
 */
static char *
final_query(const char *model, const char *baseline, const char *dev, int beam, bool labelled)
{
	return psprintf(
		"WITH %s%s "
		"SELECT pg_catalog.concat_ws(' ', r.score_a, r.score_b, r.p_value, "
		"c.cut_a, c.cut_b, c.words_a, c.words_b), %s FROM "
		"(SELECT (corpq.paired_bootstrap(a, b, tgt)).* FROM x) r, "
		"(SELECT pg_catalog.count(*) FILTER (WHERE NOT fa) AS cut_a, "
		"pg_catalog.count(*) FILTER (WHERE NOT fb) AS cut_b, "
		"coalesce(pg_catalog.avg(%s), 0) AS words_a, coalesce(pg_catalog.avg(%s), 0) AS words_b "
		"FROM x) c",
		dev_translations(model, baseline, dev, beam, labelled), labelled ? LABEL_CTE : "",
		labelled ? label_columns(true) : "NULL, NULL",
		pipeline_synthetic_words("a"), pipeline_synthetic_words("b"));
}

char *
pipeline_gate_final(const char *what, const char *model, const char *baseline,
					const char *dev, int beam)
{
	GateRow		r = {0};
	double	   *v = r.v;
	char	   *out;

	if (dev == NULL)
		return "\"gate\": \"no dev set\"";
	if (!gate_row(final_query(model, baseline, dev, beam, dev_labelled(dev)), 7, &r))
		return "\"dev_bleu\": null";
	/* v: baseline BLEU, final BLEU, p, baseline cut, final cut, their mean words */
	out = psprintf("\"dev_bleu\": %s, \"baseline_bleu\": %s, \"bleu_change\": %s, \"p_value\": %s, "
				   "\"cut\": %.0f, \"baseline_cut\": %.0f, \"words\": %s, \"baseline_words\": %s%s",
				   number(v[1]), number(v[0]), number(v[1] - v[0]), number(v[2]),
				   v[4], v[3], number(v[6]), number(v[5]), labels_member(&r));
	if (v[1] < v[0])
		return psprintf("%s%s", out, warning_member(psprintf("the %s's dev BLEU %.2f is below the baseline's %.2f "
														   "(p = %.3f): %s%s", what, v[1], v[0], v[2],
														   gate_cause(v[4], v[3], v[6], v[5]),
														   below_part("; ", &r))));
	if (r.below)
		return psprintf("%s%s", out, warning_member(psprintf("the %s's dev BLEU is %s", what,
														   below_part("", &r))));
	return out;
}
