/*
 * One rule filter with its arguments and threshold, and the decision it
 * takes on a pair: the per-row evaluation behind corpq.filter_report(),
 * filter_stats() and filter_rejects().  The SQL predicate that
 * filter_predicate() writes for the same filter takes the same decision
 * (both compare the same score functions with the same threshold); the
 * regression tests check that they agree.
 *
 *   kind             keeps the pair when (OpusFilter filter)
 *   length_ratio     ratio < threshold               (LengthRatioFilter)
 *   char_script      both sides' ratio >= threshold  (CharacterScoreFilter)
 *   alpha_ratio      both sides' ratio >= threshold  (AlphabetRatioFilter)
 *   terminal_punct   score >= threshold              (TerminalPunctuationFilter)
 *   numerals         ratio >= threshold              (NonZeroNumeralsFilter)
 *   repetition       both sides' count < threshold   (RepetitionFilter)
 *   html_tags        neither side has a tag          (HtmlTagFilter); with
 *                    keep_same_tags, or both sides have the same tags
 *                    (cq_html_same_tags)
 *   langid           both sides' confidence > threshold (Cld2Filter): the
 *                    share of the text in the expected language when CLD2's
 *                    first language is it, else 0; 1 for an empty side and
 *                    for a side the filter's cq_langid_rule does not judge
 */
#ifndef CQ_FILTERS_FILTER_SET_H
#define CQ_FILTERS_FILTER_SET_H

#include <stdbool.h>

#include "common/error.h"
#include "filters/rules.h"

typedef enum cq_filter_kind
{
	CQ_FILTER_LENGTH_RATIO,
	CQ_FILTER_CHAR_SCRIPT,
	CQ_FILTER_ALPHA_RATIO,
	CQ_FILTER_TERMINAL_PUNCT,
	CQ_FILTER_NUMERALS,
	CQ_FILTER_REPETITION,
	CQ_FILTER_HTML_TAGS,
	CQ_FILTER_LANGID
} cq_filter_kind;

/*
 * What the langid filter adds to Cld2Filter (all false / 0: Cld2Filter
 * itself).  CLD2 answers "un", not reliable, when it has too little text to
 * judge; on the shared corpora nearly every unreliable answer is "un", and
 * a rule that judges those rejects most short software messages
 * (docs/filters.md has the measurements behind the defaults).
 */
typedef struct cq_langid_rule
{
	bool		hint;			/* CLD2's language hint: the expected language */
	bool		keep_unreliable;	/* an answer CLD2 does not call reliable: not judged */
	int			min_chars;		/* a side of fewer code points: not judged */
} cq_langid_rule;

typedef struct cq_filter
{
	cq_filter_kind kind;
	double		threshold;		/* not used by html_tags */
	cq_length_unit unit;		/* length_ratio */
	int			src_script;		/* char_script: UScriptCode */
	int			tgt_script;
	bool		exclude_whitespace; /* alpha_ratio */
	bool		keep_same_tags; /* html_tags: same tags on both sides pass */
	int			min_length;		/* repetition */
	int			max_length;
	int			src_lang;		/* langid: langid.h ids */
	int			tgt_lang;
	cq_langid_rule langid;
} cq_filter;

/* A pair, decoded once for all filters. */
typedef struct cq_pair
{
	cq_utext	src;
	cq_utext	tgt;
} cq_pair;

/*
 * The langid filter's confidence that t is in lang under rule (see the table
 * above): 1 when the rule does not judge t.
 */
cq_code		cq_lang_confidence(const cq_utext *t, int lang, const cq_langid_rule *rule,
							   double *conf, cq_error *err);

/* *keep = whether the pair passes f. */
cq_code		cq_filter_keep(const cq_filter *f, const cq_pair *pair, bool *keep, cq_error *err);

#endif
