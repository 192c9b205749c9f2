/*
 * The pair-quality classifier's features: one vector of doubles per pair,
 * its layout named by a feature set (which features are present, in enum
 * order).
 *
 * The string features are computed here from the two strings; the rule
 * scores among them are the rule filters' own functions (filters/rules.h),
 * never a copy.  Language ID confidence is computed here too when the set
 * names the languages (CLD2 is in the cores).  The model features (lexicon,
 * encoder, translation models) need a model the glue loads: they have
 * their places in the layout, cq_features_compute leaves them NAN, and the
 * glue writes them at cq_feature_index().  A signal the user has no model
 * for is simply not in the set, so a vector never holds a missing value.
 *
 *   feature               value (w = words as filters/rules.h counts them,
 *                         c = code points)
 *   char_log_ratio        ln((1 + c(tgt)) / (1 + c(src)))
 *   char_log_ratio_abs    its absolute value
 *   word_log_ratio        ln((1 + w(tgt)) / (1 + w(src)))
 *   word_log_ratio_abs    its absolute value
 *   src_log_words         ln(1 + w(src)): how much a ratio can say
 *   copy_tokens           Dice coefficient of the two sides' word multisets,
 *                         words equal when their bytes are:
 *                         2 sum_x min(n_src(x), n_tgt(x)) / (w(src) + w(tgt)),
 *                         0 when both are empty
 *   copy_chars            the same over code-point trigrams (a side of c
 *                         code points has c - 2 of them, spaces included);
 *                         when a side has none: 1 if the sides are equal,
 *                         else 0
 *   punct_dice            the same over the code points of Unicode general
 *                         category P (ICU u_ispunct); 1 when neither has one
 *   terminal_punct        cq_terminal_punct_score
 *   numerals              cq_numerals_match
 *   alpha_src, alpha_tgt  cq_alpha_ratio, whitespace excluded
 *   script_src, script_tgt  cq_char_script_ratio for the set's scripts
 *   repetition_src, _tgt  ln(1 + count) of cq_repetition(3, 100, 2), the
 *                         repetition filter's defaults
 *   html_src, html_tgt    1 when cq_html_tags finds a tag, else 0
 *   sentence_diff         cq_sentence_boundaries(tgt) - (src): a second
 *                         sentence on one side only
 *   langid_src, _tgt      cq_lang_confidence for the set's languages
 *   end_punct             cq_ends_sentence(tgt) - cq_ends_sentence(src):
 *                         a side that ends a sentence or clause where the
 *                         other does not (a cut side, another pair's
 *                         sentence appended)
 *   align_fwd, align_bwd, coverage_fwd, coverage_bwd, embedding_cosine,
 *   dual_xent, tail_src, tail_tgt   written by the glue (model features;
 *                         the tails came last, so the bits of the others
 *                         stay those stored classifiers were trained with;
 *                         a classifier using them is stored as format
 *                         version 2, FORMAT.md; end_punct, a string
 *                         feature, came after them for the same reason)
 */
#ifndef CQ_CURATE_FEATURES_H
#define CQ_CURATE_FEATURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "filters/filter_set.h"

typedef enum cq_feature
{
	CQ_F_CHAR_LOG_RATIO = 0,
	CQ_F_CHAR_LOG_RATIO_ABS,
	CQ_F_WORD_LOG_RATIO,
	CQ_F_WORD_LOG_RATIO_ABS,
	CQ_F_SRC_LOG_WORDS,
	CQ_F_COPY_TOKENS,
	CQ_F_COPY_CHARS,
	CQ_F_PUNCT_DICE,
	CQ_F_TERMINAL_PUNCT,
	CQ_F_NUMERALS,
	CQ_F_ALPHA_SRC,
	CQ_F_ALPHA_TGT,
	CQ_F_SCRIPT_SRC,
	CQ_F_SCRIPT_TGT,
	CQ_F_REPETITION_SRC,
	CQ_F_REPETITION_TGT,
	CQ_F_HTML_SRC,
	CQ_F_HTML_TGT,
	CQ_F_SENTENCE_DIFF,
	CQ_F_LANGID_SRC,
	CQ_F_LANGID_TGT,
	/* model features: the glue's */
	CQ_F_ALIGN_FWD,
	CQ_F_ALIGN_BWD,
	CQ_F_COVERAGE_FWD,
	CQ_F_COVERAGE_BWD,
	CQ_F_EMBEDDING_COSINE,
	CQ_F_DUAL_XENT,
	CQ_F_TAIL_SRC,
	CQ_F_TAIL_TGT,
	/* a string feature, after the model features of version 1 */
	CQ_F_END_PUNCT,
	CQ_F_COUNT
} cq_feature;

#define CQ_F_BIT(f) ((uint64_t) 1 << (f))
/* The features of two strings alone (no script, language or model). */
#define CQ_F_STRING_MASK \
	((CQ_F_BIT(CQ_F_SCRIPT_SRC) - 1) | CQ_F_BIT(CQ_F_REPETITION_SRC) | \
	 CQ_F_BIT(CQ_F_REPETITION_TGT) | CQ_F_BIT(CQ_F_HTML_SRC) | CQ_F_BIT(CQ_F_HTML_TGT) | \
	 CQ_F_BIT(CQ_F_SENTENCE_DIFF) | CQ_F_BIT(CQ_F_END_PUNCT))
#define CQ_F_SCRIPT_MASK (CQ_F_BIT(CQ_F_SCRIPT_SRC) | CQ_F_BIT(CQ_F_SCRIPT_TGT))
#define CQ_F_LANGID_MASK (CQ_F_BIT(CQ_F_LANGID_SRC) | CQ_F_BIT(CQ_F_LANGID_TGT))
#define CQ_F_MODEL_MASK \
	((CQ_F_BIT(CQ_F_DUAL_XENT + 1) - CQ_F_BIT(CQ_F_ALIGN_FWD)) | \
	 CQ_F_BIT(CQ_F_TAIL_SRC) | CQ_F_BIT(CQ_F_TAIL_TGT))

typedef struct cq_feature_set
{
	uint64_t	mask;			/* CQ_F_BIT(f) for each feature present */
	int			src_script;		/* UScriptCode, for the script features */
	int			tgt_script;
	int			src_lang;		/* filters/langid.h ids, for langid */
	int			tgt_lang;
	cq_langid_rule langid;		/* the langid filter's rule */
} cq_feature_set;

/* The string features only; no script, language or model. */
void		cq_feature_set_strings(cq_feature_set *fs);

/* CQ_EINVAL when a present feature lacks its script or language, or the
 * mask names a feature outside the enum. */
cq_code		cq_feature_set_check(const cq_feature_set *fs, cq_error *err);

/* The number of features present, and their order. */
int			cq_feature_count(const cq_feature_set *fs);
int			cq_feature_index(const cq_feature_set *fs, cq_feature f);	/* -1 if absent */
cq_feature	cq_feature_at(const cq_feature_set *fs, int i);

const char *cq_feature_name(cq_feature f);	/* NULL outside the enum */
int			cq_feature_lookup(const char *name);	/* -1 if unknown */
bool		cq_feature_is_model(cq_feature f);

/*
 * The features of (src, tgt) into x[0 .. cq_feature_count(fs)), model
 * features NAN.  CQ_ENOMEM, CQ_ELIMIT (a side over 2 GB).
 */
cq_code		cq_features_compute(const cq_feature_set *fs, const char *src, size_t src_len,
								const char *tgt, size_t tgt_len, double *x, cq_error *err);

/* The copy ratios on their own (the reference checks call them). */
cq_code		cq_copy_tokens(const char *a, size_t alen, const char *b, size_t blen,
						   double *dice, cq_error *err);
cq_code		cq_copy_chars(const cq_utext *a, const cq_utext *b, double *dice, cq_error *err);
cq_code		cq_punct_dice(const cq_utext *a, const cq_utext *b, double *dice, cq_error *err);
/* Sentence boundaries inside t (sentences.c): sentence_diff's count. */
int			cq_sentence_boundaries(const cq_utext *t);
/* 1 when t's last code point that is neither whitespace nor closing
 * punctuation (Unicode Pe, Pf, straight quotes) ends a sentence or clause
 * (sentence_diff's marks, : ; and their full-width forms), else 0
 * (sentences.c): end_punct's value per side. */
int			cq_ends_sentence(const cq_utext *t);

#endif
