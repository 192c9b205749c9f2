/*
 * OpusFilter's rule filters, one score function each (docs/filters.md, "Rule
 * filters", names the correspondence).  Each returns the score
 * OpusFilter's filter of the same purpose computes for a segment or a pair,
 * on the code points of the text (utext.h); the threshold comparison that
 * turns a score into keep / reject lives in filter_set.h.
 */
#ifndef CQ_FILTERS_RULES_H
#define CQ_FILTERS_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "filters/utext.h"

typedef enum cq_length_unit
{
	CQ_UNIT_WORD,				/* Python str.split(): runs of non-space */
	CQ_UNIT_CHAR				/* code points */
} cq_length_unit;

/* Length of t in unit. */
size_t		cq_text_length(const cq_utext *t, cq_length_unit unit);

/*
 * LengthRatioFilter: the longer length over the shorter; 0 when both are
 * empty, +inf when only one is.
 */
double		cq_length_ratio(const cq_utext *a, const cq_utext *b, cq_length_unit unit);

/*
 * AlphabetRatioFilter: the share of code points with the Unicode Alphabetic
 * property (regex `\p{Alphabetic}`), after removing White_Space when
 * exclude_whitespace; 1 when nothing is left.
 */
double		cq_alpha_ratio(const cq_utext *t, bool exclude_whitespace);

/*
 * CharacterScoreFilter: among the Alphabetic code points, the share whose
 * Unicode Script property (not Script_Extensions; regex `\p{Script=...}`)
 * is script, an ICU UScriptCode; 1 when there is no Alphabetic code point.
 */
double		cq_char_script_ratio(const cq_utext *t, int script);

/*
 * The UScriptCode of a Unicode script name, long or short ("Latin",
 * "Latn"; ICU's loose matching: case, spaces, '-' and '_' are ignored), or
 * -1.
 */
int			cq_script_from_name(const char *name);

/* The long name of script i, 0 <= i < cq_script_count() (NULL for gaps). */
int			cq_script_count(void);
const char *cq_script_name(int i);

/*
 * TerminalPunctuationFilter (Vázquez et al. 2019): with s and t the counts of
 * '.', '?', '!' and '…' in each side, -ln(1 + |s - t| + max(s - 1, 0) +
 * max(t - 1, 0)); 0 is the best score.
 */
double		cq_terminal_punct_score(const cq_utext *a, const cq_utext *b);

/*
 * NonZeroNumeralsFilter (Vázquez et al. 2019): the ASCII digits 1-9 of each
 * side in order, compared by Python's difflib.SequenceMatcher(None, x,
 * y).ratio() (its matching-block recursion and autojunk heuristic
 * included); 1 when neither side has one.  Writes the ratio to *ratio.
 */
cq_code		cq_numerals_match(const cq_utext *a, const cq_utext *b, double *ratio,
							  cq_error *err);

/*
 * RepetitionFilter: the first match (leftmost, then shortest) of the
 * `regex` pattern (\S.{min_length-1,max_length}?)(?: *\1){threshold,};
 * *count = the non-overlapping occurrences of the repeated string in the
 * match minus one, or 0 without a match.  1 <= min_length,
 * min_length - 1 <= max_length, threshold >= 1.
 */
cq_code		cq_repetition(const cq_utext *t, int min_length, int max_length,
						  int threshold, int *count, cq_error *err);

/*
 * HtmlTagFilter: whether BeautifulSoup with Python's html.parser would find
 * an element in t, i.e. whether html.parser's tokenizer reads a complete
 * start tag ("<a href='x'>", "<br/>") before anything stops it.  Broken
 * tags ("<a href='x" without an end) are text, as in OpusFilter >= 3.3.
 */
bool		cq_html_tags(const cq_utext *t);

/*
 * Whether src and tgt carry the same markup: equal multisets of the start
 * tags of formatting and layout elements (a, b, br, div, p, span, ... the
 * list is in html.c), names ASCII case folded ("<b>x</b> <br/>" and "<br>
 * <B>y</B>" do; a tag on one side only, or "<b>" against "<i>", does not;
 * two sides without such tags do).  Other names in angle brackets
 * ("<file>" against "<archivo>") are placeholders, not markup, and are not
 * compared.  Tags are read as cq_html_tags reads them, going on after each
 * one (script and style contents are read for tags too, where html.parser
 * reads them as text); more than 64 such tags on a side: not the same.
 * Localisation strings carry their markup into the translation; markup
 * left over from crawling is seldom the same on both sides.
 */
bool		cq_html_same_tags(const cq_utext *src, const cq_utext *tgt);

#endif
