/*
 * The synthetic-pair filters of both pipelines: see pipeline_synthetic.h.
 */
#include "postgres.h"

#include "pg/pipeline/pipeline.h"
#include "pg/pipeline/pipeline_synthetic.h"

char *
pipeline_synthetic_words(const char *expr)
{
	return psprintf("CASE WHEN pg_catalog.btrim(coalesce(%s, '')) OPERATOR(pg_catalog.=) '' THEN 0 "
					"ELSE pg_catalog.array_length(pg_catalog.regexp_split_to_array("
					"pg_catalog.btrim(%s), '\\s+'), 1) END", expr, expr);
}

char *
pipeline_synthetic_repeats(const PipelineSynthetic *f, const char *expr)
{
	if (f->repetition == 0)
		return "0";
	/* OpusFilter's defaults for the lengths: 3 to 101 characters */
	return psprintf("coalesce(corpq.repetition(%s, 100, %d, 3), 0)", expr, f->repetition);
}

/* What drops a pair, one condition per filter over the table's columns. */
static const char *
cut_dropped(const PipelineSynthetic *f)
{
	return f->drop_cut ? "finished IS NOT NULL AND NOT finished" : "false";
}

static char *
long_dropped(const PipelineSynthetic *f)
{
	return psprintf("src_words OPERATOR(pg_catalog.>) %d", f->max_words);
}

static char *
ratio_dropped(const PipelineSynthetic *f)
{
	return psprintf("finished IS NOT NULL AND (src_words OPERATOR(pg_catalog.=) 0 "
					"OR tgt_words OPERATOR(pg_catalog.=) 0 "
					"OR GREATEST(src_words, tgt_words) OPERATOR(pg_catalog.>) "
					"(%.17g::pg_catalog.float8 OPERATOR(pg_catalog.*) LEAST(src_words, tgt_words)))",
					f->max_ratio);
}

static const char *
repetition_dropped(const PipelineSynthetic *f)
{
	return f->repetition ? "repeats OPERATOR(pg_catalog.>) 0" : "false";
}

static char *
score_dropped(const PipelineSynthetic *f)
{
	if (CORPQ_OPT_IS_UNSET(f->max_xent))
		return "false";
	/* OPERATOR() syntax gives every operator one precedence: parenthesised */
	return psprintf("finished IS NOT NULL AND (OPERATOR(pg_catalog.-) score) OPERATOR(pg_catalog.>) "
					"%.17g::pg_catalog.float8", f->max_xent);
}

void
pipeline_synthetic_mark(const PipelineSynthetic *f, const char *table)
{
	pipeline_exec(psprintf("UPDATE %s SET kept = finished IS NOT NULL AND NOT (%s) AND NOT (%s) "
						   "AND NOT (%s) AND NOT (%s) AND NOT (%s)",
						   table, cut_dropped(f), long_dropped(f), ratio_dropped(f),
						   repetition_dropped(f), score_dropped(f)));
}

char *
pipeline_synthetic_counts(const PipelineSynthetic *f)
{
	return psprintf("'kept', pg_catalog.count(*) FILTER (WHERE kept), "
					"'dropped', pg_catalog.count(*) FILTER (WHERE NOT kept), "
					"'untranslated', pg_catalog.count(*) FILTER (WHERE finished IS NULL), "
					"'dropped_cut', pg_catalog.count(*) FILTER (WHERE %s), "
					"'dropped_long', pg_catalog.count(*) FILTER (WHERE %s), "
					"'dropped_ratio', pg_catalog.count(*) FILTER (WHERE %s), "
					"'dropped_repetition', pg_catalog.count(*) FILTER (WHERE %s), "
					"'dropped_score', pg_catalog.count(*) FILTER (WHERE %s)",
					cut_dropped(f), long_dropped(f), ratio_dropped(f), repetition_dropped(f),
					score_dropped(f));
}
