/* The feature layout and the core's features (features.h defines each). */
#include "curate/features.h"

#include <math.h>
#include <string.h>

#include "filters/rules.h"

static const char *const names[CQ_F_COUNT] = {
	"char_log_ratio", "char_log_ratio_abs", "word_log_ratio", "word_log_ratio_abs",
	"src_log_words", "copy_tokens", "copy_chars", "punct_dice", "terminal_punct",
	"numerals", "alpha_src", "alpha_tgt", "script_src", "script_tgt",
	"repetition_src", "repetition_tgt", "html_src", "html_tgt", "sentence_diff", "langid_src",
	"langid_tgt", "align_fwd", "align_bwd", "coverage_fwd", "coverage_bwd",
	"embedding_cosine", "dual_xent", "tail_src", "tail_tgt", "end_punct"
};

/* The repetition filter's defaults (pg/filters/filter_spec.c). */
#define REP_MIN_LENGTH 3
#define REP_MAX_LENGTH 100
#define REP_THRESHOLD 2

void
cq_feature_set_strings(cq_feature_set *fs)
{
	memset(fs, 0, sizeof(*fs));
	fs->mask = CQ_F_STRING_MASK;
	fs->src_script = fs->tgt_script = -1;
	fs->src_lang = fs->tgt_lang = -1;
}

cq_code
cq_feature_set_check(const cq_feature_set *fs, cq_error *err)
{
	if (fs->mask & ~(CQ_F_BIT(CQ_F_COUNT) - 1))
		return cq_fail(err, CQ_EINVAL, "feature mask %#llx names features outside the %d known",
					   (unsigned long long) fs->mask, CQ_F_COUNT);
	if ((fs->mask & CQ_F_BIT(CQ_F_SCRIPT_SRC) && fs->src_script < 0) ||
		(fs->mask & CQ_F_BIT(CQ_F_SCRIPT_TGT) && fs->tgt_script < 0))
		return cq_fail(err, CQ_EINVAL, "a script feature needs the side's script");
	if ((fs->mask & CQ_F_BIT(CQ_F_LANGID_SRC) && fs->src_lang < 0) ||
		(fs->mask & CQ_F_BIT(CQ_F_LANGID_TGT) && fs->tgt_lang < 0))
		return cq_fail(err, CQ_EINVAL, "a language ID feature needs the side's language");
	return CQ_OK;
}

int
cq_feature_count(const cq_feature_set *fs)
{
	return __builtin_popcountll(fs->mask & (CQ_F_BIT(CQ_F_COUNT) - 1));
}

int
cq_feature_index(const cq_feature_set *fs, cq_feature f)
{
	if ((int) f < 0 || f >= CQ_F_COUNT || !(fs->mask & CQ_F_BIT(f)))
		return -1;
	return __builtin_popcountll(fs->mask & (CQ_F_BIT(f) - 1));
}

cq_feature
cq_feature_at(const cq_feature_set *fs, int i)
{
	for (int f = 0; f < CQ_F_COUNT; f++)
		if ((fs->mask & CQ_F_BIT(f)) && i-- == 0)
			return (cq_feature) f;
	return CQ_F_COUNT;
}

const char *
cq_feature_name(cq_feature f)
{
	return (int) f >= 0 && f < CQ_F_COUNT ? names[f] : NULL;
}

int
cq_feature_lookup(const char *name)
{
	for (int f = 0; f < CQ_F_COUNT; f++)
		if (strcmp(names[f], name) == 0)
			return f;
	return -1;
}

bool
cq_feature_is_model(cq_feature f)
{
	return (int) f >= 0 && f < CQ_F_COUNT && (CQ_F_MODEL_MASK & CQ_F_BIT(f));
}

/* Every feature of the enum, absent ones computed too when cheap: the
 * caller keeps those of its set. */
typedef struct all_features
{
	double		v[CQ_F_COUNT];
} all_features;

static void
lengths(const cq_pair *p, all_features *a)
{
	double		cs = (double) cq_text_length(&p->src, CQ_UNIT_CHAR),
				ct = (double) cq_text_length(&p->tgt, CQ_UNIT_CHAR),
				ws = (double) cq_text_length(&p->src, CQ_UNIT_WORD),
				wt = (double) cq_text_length(&p->tgt, CQ_UNIT_WORD);

	a->v[CQ_F_CHAR_LOG_RATIO] = log((1 + ct) / (1 + cs));
	a->v[CQ_F_CHAR_LOG_RATIO_ABS] = fabs(a->v[CQ_F_CHAR_LOG_RATIO]);
	a->v[CQ_F_WORD_LOG_RATIO] = log((1 + wt) / (1 + ws));
	a->v[CQ_F_WORD_LOG_RATIO_ABS] = fabs(a->v[CQ_F_WORD_LOG_RATIO]);
	a->v[CQ_F_SRC_LOG_WORDS] = log(1 + ws);
}

static cq_code
copies(const cq_pair *p, all_features *a, cq_error *err)
{
	cq_code		rc;

	rc = cq_copy_tokens(p->src.s, p->src.bytes, p->tgt.s, p->tgt.bytes,
						&a->v[CQ_F_COPY_TOKENS], err);
	if (rc == CQ_OK)
		rc = cq_copy_chars(&p->src, &p->tgt, &a->v[CQ_F_COPY_CHARS], err);
	if (rc == CQ_OK)
		rc = cq_punct_dice(&p->src, &p->tgt, &a->v[CQ_F_PUNCT_DICE], err);
	return rc;
}

static cq_code
repetition(const cq_utext *t, double *v, cq_error *err)
{
	int			count = 0;
	cq_code		rc = cq_repetition(t, REP_MIN_LENGTH, REP_MAX_LENGTH, REP_THRESHOLD, &count, err);

	*v = log1p((double) count);
	return rc;
}

/* The rule filters' scores, each by the filter's own function. */
static cq_code
rules(const cq_feature_set *fs, const cq_pair *p, all_features *a, cq_error *err)
{
	cq_code		rc;

	a->v[CQ_F_TERMINAL_PUNCT] = cq_terminal_punct_score(&p->src, &p->tgt);
	if ((rc = cq_numerals_match(&p->src, &p->tgt, &a->v[CQ_F_NUMERALS], err)) != CQ_OK)
		return rc;
	a->v[CQ_F_ALPHA_SRC] = cq_alpha_ratio(&p->src, true);
	a->v[CQ_F_ALPHA_TGT] = cq_alpha_ratio(&p->tgt, true);
	if (fs->mask & CQ_F_SCRIPT_MASK)
	{
		a->v[CQ_F_SCRIPT_SRC] = cq_char_script_ratio(&p->src, fs->src_script);
		a->v[CQ_F_SCRIPT_TGT] = cq_char_script_ratio(&p->tgt, fs->tgt_script);
	}
	if ((rc = repetition(&p->src, &a->v[CQ_F_REPETITION_SRC], err)) != CQ_OK ||
		(rc = repetition(&p->tgt, &a->v[CQ_F_REPETITION_TGT], err)) != CQ_OK)
		return rc;
	a->v[CQ_F_HTML_SRC] = cq_html_tags(&p->src) ? 1.0 : 0.0;
	a->v[CQ_F_HTML_TGT] = cq_html_tags(&p->tgt) ? 1.0 : 0.0;
	a->v[CQ_F_SENTENCE_DIFF] = (double) (cq_sentence_boundaries(&p->tgt) -
										 cq_sentence_boundaries(&p->src));
	a->v[CQ_F_END_PUNCT] = (double) (cq_ends_sentence(&p->tgt) - cq_ends_sentence(&p->src));
	return CQ_OK;
}

/* Language ID only when asked: CLD2 is the costliest feature here. */
static cq_code
languages(const cq_feature_set *fs, const cq_pair *p, all_features *a, cq_error *err)
{
	cq_code		rc = CQ_OK;

	if (fs->mask & CQ_F_BIT(CQ_F_LANGID_SRC))
		rc = cq_lang_confidence(&p->src, fs->src_lang, &fs->langid, &a->v[CQ_F_LANGID_SRC], err);
	if (rc == CQ_OK && (fs->mask & CQ_F_BIT(CQ_F_LANGID_TGT)))
		rc = cq_lang_confidence(&p->tgt, fs->tgt_lang, &fs->langid, &a->v[CQ_F_LANGID_TGT], err);
	return rc;
}

static cq_code
compute_pair(const cq_feature_set *fs, const cq_pair *p, double *x, cq_error *err)
{
	all_features a;
	cq_code		rc;
	int			k = 0;

	for (int f = 0; f < CQ_F_COUNT; f++)
		a.v[f] = NAN;
	lengths(p, &a);
	if ((rc = copies(p, &a, err)) != CQ_OK ||
		(rc = rules(fs, p, &a, err)) != CQ_OK ||
		(rc = languages(fs, p, &a, err)) != CQ_OK)
		return rc;
	for (int f = 0; f < CQ_F_COUNT; f++)
		if (fs->mask & CQ_F_BIT(f))
			x[k++] = a.v[f];
	return CQ_OK;
}

cq_code
cq_features_compute(const cq_feature_set *fs, const char *src, size_t src_len,
					const char *tgt, size_t tgt_len, double *x, cq_error *err)
{
	cq_pair		p;
	cq_code		rc;

	if ((rc = cq_feature_set_check(fs, err)) != CQ_OK)
		return rc;
	if ((rc = cq_utext_init(&p.src, src, src_len, err)) != CQ_OK)
		return rc;
	if ((rc = cq_utext_init(&p.tgt, tgt, tgt_len, err)) != CQ_OK)
	{
		cq_utext_free(&p.src);
		return rc;
	}
	rc = compute_pair(fs, &p, x, err);
	cq_utext_free(&p.src);
	cq_utext_free(&p.tgt);
	return rc;
}
