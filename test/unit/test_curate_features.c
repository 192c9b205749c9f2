/*
 * The classifier's features (extension/curate/features.h) on hand-worked
 * pairs, and the layout the glue will fill model features into.
 * test/ref/test_curate.py compares the string features with a Python
 * re-implementation on the corpora.
 */
#include "unit.h"

#include <stdlib.h>

#include "curate/features.h"
#include "filters/langid.h"
#include "filters/rules.h"

static cq_utext
u(const char *s)
{
	cq_utext	t;

	if (cq_utext_init(&t, s, strlen(s), NULL) != CQ_OK)
		abort();
	return t;
}

static double
copy_tokens(const char *a, const char *b)
{
	double		d = -1;

	CHECK_INT_EQ(cq_copy_tokens(a, strlen(a), b, strlen(b), &d, NULL), CQ_OK);
	return d;
}

static double
utext_fn(cq_code (*fn) (const cq_utext *, const cq_utext *, double *, cq_error *),
		 const char *a, const char *b)
{
	cq_utext	x = u(a),
				y = u(b);
	double		d = -1;

	CHECK_INT_EQ(fn(&x, &y, &d, NULL), CQ_OK);
	cq_utext_free(&x);
	cq_utext_free(&y);
	return d;
}

TEST(curate_features_copy_tokens_is_a_multiset_dice)
{
	CHECK_NEAR(copy_tokens("the cat sat", "the  cat\tsat"), 1.0, 0);
	/* {a:2, b} and {a:2, c, d}: 2 * 2 / (3 + 4) */
	CHECK_NEAR(copy_tokens("a b a", "a a c d"), 4.0 / 7.0, 1e-15);
	/* bytes, not case: "The" is not "the" */
	CHECK_NEAR(copy_tokens("The end", "the end"), 0.5, 1e-15);
	CHECK_NEAR(copy_tokens("", ""), 0.0, 0);
	CHECK_NEAR(copy_tokens("x", ""), 0.0, 0);
	/* a no-break space separates words as Python's split() does */
	CHECK_NEAR(copy_tokens("a\xc2\xa0" "b", "b a"), 1.0, 0);
}

TEST(curate_features_copy_chars_is_a_trigram_dice)
{
	CHECK_NEAR(utext_fn(cq_copy_chars, "abcd", "bcde"), 0.5, 1e-15);
	/* code points, not bytes: "ñañ" has one trigram */
	CHECK_NEAR(utext_fn(cq_copy_chars, "\xc3\xb1" "a\xc3\xb1", "x\xc3\xb1" "a\xc3\xb1"), 2.0 / 3.0, 1e-15);
	CHECK_NEAR(utext_fn(cq_copy_chars, "ab", "ab"), 1.0, 0);
	CHECK_NEAR(utext_fn(cq_copy_chars, "ab", "abc"), 0.0, 0);
	/* repeated trigrams count with their multiplicity: aaaa has aaa twice */
	CHECK_NEAR(utext_fn(cq_copy_chars, "aaaa", "aaa"), 2.0 / 3.0, 1e-15);
}

TEST(curate_features_punct_dice)
{
	/* {',', '¿', '?'} and {',', '?'}: 2 * 2 / 5 */
	CHECK_NEAR(utext_fn(cq_punct_dice, "Hello, what?", "Hola, \xc2\xbfqu\xc3\xa9?"), 0.8, 1e-15);
	CHECK_NEAR(utext_fn(cq_punct_dice, "no marks", "sin marcas"), 1.0, 0);
	CHECK_NEAR(utext_fn(cq_punct_dice, "stop.", "alto"), 0.0, 0);
}

TEST(curate_features_layout)
{
	cq_feature_set fs;

	cq_feature_set_strings(&fs);
	CHECK_INT_EQ(cq_feature_count(&fs), 18);
	CHECK_INT_EQ(cq_feature_index(&fs, CQ_F_CHAR_LOG_RATIO), 0);
	CHECK_INT_EQ(cq_feature_index(&fs, CQ_F_ALPHA_TGT), 11);
	CHECK_INT_EQ(cq_feature_index(&fs, CQ_F_REPETITION_SRC), 12);
	CHECK_INT_EQ(cq_feature_index(&fs, CQ_F_SCRIPT_SRC), -1);
	CHECK_INT_EQ(cq_feature_index(&fs, CQ_F_EMBEDDING_COSINE), -1);
	CHECK_INT_EQ(cq_feature_at(&fs, 15), CQ_F_HTML_TGT);
	CHECK_INT_EQ(cq_feature_at(&fs, 16), CQ_F_SENTENCE_DIFF);
	CHECK_INT_EQ(cq_feature_at(&fs, 17), CQ_F_END_PUNCT);
	CHECK_INT_EQ(cq_feature_at(&fs, 18), CQ_F_COUNT);
	fs.mask |= CQ_F_BIT(CQ_F_EMBEDDING_COSINE) | CQ_F_BIT(CQ_F_ALIGN_FWD);
	CHECK_INT_EQ(cq_feature_index(&fs, CQ_F_ALIGN_FWD), 17);
	CHECK_INT_EQ(cq_feature_index(&fs, CQ_F_EMBEDDING_COSINE), 18);
	for (int f = 0; f < CQ_F_COUNT; f++)
		CHECK_INT_EQ(cq_feature_lookup(cq_feature_name((cq_feature) f)), f);
	CHECK(cq_feature_is_model(CQ_F_DUAL_XENT) && !cq_feature_is_model(CQ_F_LANGID_TGT));
	CHECK(cq_feature_is_model(CQ_F_TAIL_SRC) && cq_feature_is_model(CQ_F_TAIL_TGT));
	CHECK(!cq_feature_is_model(CQ_F_END_PUNCT));
	/* the string features' bits of version 1 stayed where they were */
	CHECK_INT_EQ(CQ_F_SENTENCE_DIFF, 18);
	CHECK_INT_EQ(CQ_F_DUAL_XENT, 26);
	CHECK(cq_feature_name(CQ_F_COUNT) == NULL);
}

TEST(curate_features_set_check)
{
	cq_feature_set fs;
	cq_error	err;
	double		x[CQ_F_COUNT];

	cq_feature_set_strings(&fs);
	fs.mask |= CQ_F_BIT(CQ_F_SCRIPT_SRC);
	CHECK_INT_EQ(cq_features_compute(&fs, "a", 1, "b", 1, x, &err), CQ_EINVAL);
	fs.src_script = cq_script_from_name("Latin");
	CHECK_INT_EQ(cq_feature_set_check(&fs, &err), CQ_OK);
	fs.mask |= CQ_F_BIT(CQ_F_LANGID_TGT);
	CHECK_INT_EQ(cq_feature_set_check(&fs, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "language") != NULL);
	fs.mask = CQ_F_BIT(CQ_F_COUNT);
	CHECK_INT_EQ(cq_feature_set_check(&fs, &err), CQ_EINVAL);
}

/* Every feature of one pair: hand-worked values, and the rule features
 * equal to the rule filters' functions on the same texts. */
TEST(curate_features_compute_pair)
{
	const char *s = "The 3 cats sat. The cats sat.",
			   *t = "Los 3 gatos se sentaron.";
	cq_feature_set fs;
	double		x[CQ_F_COUNT];
	cq_utext	a = u(s),
				b = u(t);
	double		num = -1;

	cq_feature_set_strings(&fs);
	fs.mask |= CQ_F_SCRIPT_MASK | CQ_F_LANGID_MASK | CQ_F_BIT(CQ_F_DUAL_XENT);
	fs.src_script = fs.tgt_script = cq_script_from_name("Latin");
	fs.src_lang = cq_langid_lookup("en");
	fs.tgt_lang = cq_langid_lookup("es");
	fs.langid = (cq_langid_rule) {.hint = true, .keep_unreliable = true};	/* the filter's defaults */
	CHECK_INT_EQ(cq_features_compute(&fs, s, strlen(s), t, strlen(t), x, NULL), CQ_OK);
	CHECK_NEAR(x[CQ_F_CHAR_LOG_RATIO], log(25.0 / 30.0), 1e-15);
	CHECK_NEAR(x[CQ_F_CHAR_LOG_RATIO_ABS], log(30.0 / 25.0), 1e-15);
	CHECK_NEAR(x[CQ_F_WORD_LOG_RATIO], log(6.0 / 8.0), 1e-15);
	CHECK_NEAR(x[CQ_F_SRC_LOG_WORDS], log(8.0), 1e-15);
	CHECK_NEAR(x[CQ_F_COPY_TOKENS], 2.0 / 12.0, 1e-15);	/* "3" */
	CHECK_NEAR(x[CQ_F_PUNCT_DICE], 2.0 / 3.0, 1e-15);	/* {., .} and {.} */
	CHECK_NEAR(x[CQ_F_TERMINAL_PUNCT], cq_terminal_punct_score(&a, &b), 0);
	CHECK_INT_EQ(cq_numerals_match(&a, &b, &num, NULL), CQ_OK);
	CHECK_NEAR(x[CQ_F_NUMERALS], num, 0);
	CHECK_NEAR(x[CQ_F_ALPHA_TGT], cq_alpha_ratio(&b, true), 0);
	CHECK_NEAR(x[CQ_F_SCRIPT_SRC], 1.0, 0);
	CHECK_NEAR(x[CQ_F_REPETITION_SRC], 0.0, 0);
	CHECK_NEAR(x[CQ_F_HTML_SRC], 0.0, 0);
	CHECK_INT_EQ(cq_lang_confidence(&b, fs.tgt_lang, &fs.langid, &num, NULL), CQ_OK);
	CHECK_NEAR(x[CQ_F_LANGID_TGT], num, 0);
	CHECK(x[CQ_F_LANGID_TGT] > 0.5);
	CHECK(isnan(x[cq_feature_index(&fs, CQ_F_DUAL_XENT)]));
	cq_utext_free(&a);
	cq_utext_free(&b);
}

TEST(curate_features_flag_html_and_repetition)
{
	const char *s = "<b>bold</b> text",
			   *t = "ja ja ja ja ja ja";
	cq_feature_set fs;
	double		x[CQ_F_COUNT];

	cq_feature_set_strings(&fs);
	CHECK_INT_EQ(cq_features_compute(&fs, s, strlen(s), t, strlen(t), x, NULL), CQ_OK);
	CHECK_NEAR(x[cq_feature_index(&fs, CQ_F_HTML_SRC)], 1.0, 0);
	CHECK_NEAR(x[cq_feature_index(&fs, CQ_F_HTML_TGT)], 0.0, 0);
	CHECK(x[cq_feature_index(&fs, CQ_F_REPETITION_TGT)] > 0.5);
	CHECK_NEAR(x[cq_feature_index(&fs, CQ_F_REPETITION_SRC)], 0.0, 0);
}

/* Hand-worked end_punct: which side ends a sentence or clause, closing
 * quotes, brackets and trailing spaces skipped, marks inside ignored. */
TEST(curate_features_end_punct)
{
	static const struct
	{
		const char *src, *tgt;
		double		v;
	}			cases[] = {
		{"The cat sleeps.", "El gato duerme.", 0},
		{"The cat", "El gato duerme.", 1},		/* a cut source */
		{"The cat sleeps.", "El gato", -1},		/* a cut target */
		{"Save file", "Guardar archivo", 0},
		{"Save file", "Guardar archivo Dios dijo: Sea la luz.", 1},	/* appended */
		{"He said \"go.\" ", "Dijo \xc2\xabve\xc2\xbb", -1},	/* ." then a space ends; \xc2\xbb after "ve" does not */
		{"Options:", "Opciones (ver)", -1},		/* : ends; ) closes "ver" */
		{"Wait.)", "Espera\xe2\x80\xa6", 0},	/* .) and ... (U+2026) */
		{"\xe7\x8c\xab\xe3\x80\x82", "", -1},	/* U+3002; an empty side ends nothing */
		{"e.g. this", "p. ej. esta", 0},
	};
	cq_feature_set fs;
	double		x[CQ_F_COUNT];

	cq_feature_set_strings(&fs);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		CHECK_INT_EQ(cq_features_compute(&fs, cases[i].src, strlen(cases[i].src), cases[i].tgt,
										 strlen(cases[i].tgt), x, NULL), CQ_OK);
		CHECK_NEAR(x[cq_feature_index(&fs, CQ_F_END_PUNCT)], cases[i].v, 0);
	}
}

/* Hand-counted boundaries: a terminal mark, whitespace, opening marks, an
 * uppercase letter; abbreviations and lowercase continuations are not. */
TEST(curate_features_sentence_diff)
{
	static const struct
	{
		const char *src, *tgt;
		double		diff;
	}			cases[] = {
		{"The cat sleeps.", "El gato duerme.", 0},
		{"The cat sleeps.", "El gato duerme. Hace sol.", 1},
		{"Hi. How are you?", "Hola.", -1},
		{"Wait... what?", "Espera. \xc2\xbfQu\xc3\xa9?", 1},	/* ¿ then Q */
		{"He said: \"Go.\" Then left.", "Dijo: \"Ve.\" y se fue.", 0},
		{"e.g. this one", "p. ej. esta", 0},
		{"End.  \"Next\" begins", "Fin.", -1},
		{"\xe7\x8c\xab\xe3\x80\x82 A", "x", -1},	/* 。 then a space and A */
	};
	cq_feature_set fs;
	double		x[CQ_F_COUNT];

	cq_feature_set_strings(&fs);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		CHECK_INT_EQ(cq_features_compute(&fs, cases[i].src, strlen(cases[i].src), cases[i].tgt,
										 strlen(cases[i].tgt), x, NULL), CQ_OK);
		CHECK_NEAR(x[cq_feature_index(&fs, CQ_F_SENTENCE_DIFF)], cases[i].diff, 0);
	}
}
