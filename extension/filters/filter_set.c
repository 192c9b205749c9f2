#include "filters/filter_set.h"

#include "filters/langid.h"

cq_code
cq_lang_confidence(const cq_utext *t, int lang, const cq_langid_rule *rule,
				   double *conf, cq_error *err)
{
	cq_langid_result r;

	/* OpusFilter does not filter empty lines; the rule may spare short ones */
	*conf = 1.0;
	if (t->bytes == 0 || t->n < (size_t) rule->min_chars)
		return CQ_OK;
	if (!cq_langid(t->s, t->bytes, rule->hint ? lang : -1, &r))
		return cq_fail(err, CQ_ENOMEM, "language identification failed");
	if (rule->keep_unreliable && !r.reliable)
		return CQ_OK;
	*conf = r.lang == lang ? r.prob : 0.0;
	return CQ_OK;
}

static cq_code
both_repetitions_below(const cq_filter *f, const cq_pair *p, bool *keep, cq_error *err)
{
	int			threshold = (int) f->threshold;
	int			a = 0,
				b = 0;
	cq_code		rc;

	rc = cq_repetition(&p->src, f->min_length, f->max_length, threshold, &a, err);
	if (rc == CQ_OK)
		rc = cq_repetition(&p->tgt, f->min_length, f->max_length, threshold, &b, err);
	if (rc == CQ_OK)
		*keep = a < threshold && b < threshold;
	return rc;
}

static cq_code
both_languages_above(const cq_filter *f, const cq_pair *p, bool *keep, cq_error *err)
{
	double		a = 0,
				b = 0;
	cq_code		rc;

	rc = cq_lang_confidence(&p->src, f->src_lang, &f->langid, &a, err);
	if (rc == CQ_OK)
		rc = cq_lang_confidence(&p->tgt, f->tgt_lang, &f->langid, &b, err);
	if (rc == CQ_OK)
		*keep = a > f->threshold && b > f->threshold;
	return rc;
}

cq_code
cq_filter_keep(const cq_filter *f, const cq_pair *p, bool *keep, cq_error *err)
{
	double		t = f->threshold;

	switch (f->kind)
	{
		case CQ_FILTER_LENGTH_RATIO:
			*keep = cq_length_ratio(&p->src, &p->tgt, f->unit) < t;
			return CQ_OK;
		case CQ_FILTER_CHAR_SCRIPT:
			*keep = cq_char_script_ratio(&p->src, f->src_script) >= t &&
				cq_char_script_ratio(&p->tgt, f->tgt_script) >= t;
			return CQ_OK;
		case CQ_FILTER_ALPHA_RATIO:
			*keep = cq_alpha_ratio(&p->src, f->exclude_whitespace) >= t &&
				cq_alpha_ratio(&p->tgt, f->exclude_whitespace) >= t;
			return CQ_OK;
		case CQ_FILTER_TERMINAL_PUNCT:
			*keep = cq_terminal_punct_score(&p->src, &p->tgt) >= t;
			return CQ_OK;
		case CQ_FILTER_NUMERALS:
			{
				double		ratio;
				cq_code		rc = cq_numerals_match(&p->src, &p->tgt, &ratio, err);

				*keep = rc == CQ_OK && ratio >= t;
				return rc;
			}
		case CQ_FILTER_REPETITION:
			return both_repetitions_below(f, p, keep, err);
		case CQ_FILTER_HTML_TAGS:
			*keep = f->keep_same_tags ? cq_html_same_tags(&p->src, &p->tgt)
				: !cq_html_tags(&p->src) && !cq_html_tags(&p->tgt);
			return CQ_OK;
		case CQ_FILTER_LANGID:
			return both_languages_above(f, p, keep, err);
	}
	return cq_fail(err, CQ_EINTERNAL, "unknown filter kind %d", (int) f->kind);
}
