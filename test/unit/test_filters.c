/*
 * Rule filters, dedup keys and the CLD2 shim on hand-worked examples; the
 * reference checks (test/ref/test_filters.py) compare the same functions
 * with OpusFilter's definitions run in Python on the corpora and on fuzz.
 */
#include "unit.h"

#include <stdlib.h>
#include <string.h>

#include "filters/dedup.h"
#include "filters/filter_set.h"
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

TEST(filters_utext_counts_code_points)
{
	cq_utext	t = u("a\xc3\xb1\xe2\x80\xa6\xf0\x9f\x98\x80");	/* a ñ … 😀 */

	CHECK_INT_EQ(t.n, 4);
	CHECK_INT_EQ(t.cp[1], 0xF1);
	CHECK_INT_EQ(t.cp[3], 0x1F600);
	cq_utext_free(&t);
	/*
	 * ill-formed bytes: one U+FFFD per maximal subpart (common/utf8.h), as
	 * before 0.2.0 (ICU's U8_NEXT_OR_FFFD) and as Python's 'replace': a, a cut
	 * euro sign, b, an overlong '/' (two)
	 */
	t = u("a\xe2\x82" "b\xc0\xaf");
	CHECK_INT_EQ(t.n, 5);
	CHECK_INT_EQ(t.cp[1], 0xFFFD);
	CHECK_INT_EQ(t.cp[2], 'b');
	CHECK_INT_EQ(t.cp[4], 0xFFFD);
	CHECK_INT_EQ(cq_text_length(&t, CQ_UNIT_CHAR), 5);
	cq_utext_free(&t);
}

TEST(filters_length_ratio_words_and_chars)
{
	cq_utext	a = u("one two  three"),
				b = u("uno\tdos tres cuatro cinco seis"),
				e = u(""),
				sp = u(" \xc2\xa0 ");	/* spaces and a no-break space: no word */

	CHECK_INT_EQ(cq_text_length(&a, CQ_UNIT_WORD), 3);
	CHECK_INT_EQ(cq_text_length(&sp, CQ_UNIT_WORD), 0);
	CHECK_NEAR(cq_length_ratio(&a, &b, CQ_UNIT_WORD), 2.0, 0);
	CHECK_NEAR(cq_length_ratio(&b, &a, CQ_UNIT_WORD), 2.0, 0);
	CHECK_NEAR(cq_length_ratio(&a, &b, CQ_UNIT_CHAR), 30.0 / 14.0, 0);
	CHECK(isinf(cq_length_ratio(&a, &e, CQ_UNIT_WORD)));
	CHECK_NEAR(cq_length_ratio(&e, &sp, CQ_UNIT_WORD), 0.0, 0);
	cq_utext_free(&a);
	cq_utext_free(&b);
	cq_utext_free(&e);
	cq_utext_free(&sp);
}

TEST(filters_alpha_and_script_ratio)
{
	cq_utext	t = u("ab 12"),	/* 2 alphabetic of 5, of 4 without the space */
				mix = u("abc\xd0\xb4"),	/* a b c д: 3 Latin of 4 letters */
				none = u("123 !");
	int			latin = cq_script_from_name("Latin");

	CHECK_NEAR(cq_alpha_ratio(&t, false), 0.4, 0);
	CHECK_NEAR(cq_alpha_ratio(&t, true), 0.5, 0);
	CHECK(latin >= 0);
	CHECK_INT_EQ(cq_script_from_name("latn"), latin);
	CHECK_INT_EQ(cq_script_from_name("Klingon"), -1);
	CHECK_NEAR(cq_char_script_ratio(&mix, latin), 0.75, 0);
	CHECK_NEAR(cq_char_script_ratio(&mix, cq_script_from_name("Cyrillic")), 0.25, 0);
	CHECK_NEAR(cq_char_script_ratio(&none, latin), 1.0, 0);
	CHECK_STR_EQ(cq_script_name(latin), "Latin");
	cq_utext_free(&t);
	cq_utext_free(&mix);
	cq_utext_free(&none);
}

TEST(filters_terminal_punctuation)
{
	cq_utext	a = u("Hello. How are you?"),	/* 2 marks */
				b = u("Hola\xe2\x80\xa6"),	/* 1 mark (…) */
				c = u("no marks");

	/* |2 - 1| + (2 - 1) = 2 -> -ln 3 */
	CHECK_NEAR(cq_terminal_punct_score(&a, &b), -log(3.0), 0);
	CHECK_NEAR(cq_terminal_punct_score(&b, &b), 0.0, 0);
	CHECK(!signbit(cq_terminal_punct_score(&c, &c)));
	cq_utext_free(&a);
	cq_utext_free(&b);
	cq_utext_free(&c);
}

TEST(filters_numerals_sequence_matcher)
{
	double		r;
	cq_utext	a = u("Chapter 12, verse 30"),	/* 1 2 3 */
				b = u("cap 1 v 3 y 2"),	/* 1 3 2 */
				e = u("none");

	/* blocks: "1" then "3" (or "2"): M = 2 -> 2*2/6 */
	CHECK_INT_EQ(cq_numerals_match(&a, &b, &r, NULL), CQ_OK);
	CHECK_NEAR(r, 4.0 / 6.0, 0);
	CHECK_INT_EQ(cq_numerals_match(&e, &e, &r, NULL), CQ_OK);
	CHECK_NEAR(r, 1.0, 0);
	CHECK_INT_EQ(cq_numerals_match(&a, &e, &r, NULL), CQ_OK);
	CHECK_NEAR(r, 0.0, 0);
	cq_utext_free(&a);
	cq_utext_free(&b);
	cq_utext_free(&e);
}

TEST(filters_repetition_first_match)
{
	int			n;
	cq_utext	a = u("go go go go"),
				b = u("abcabcabcabc"),
				c = u("a normal sentence"),
				d = u("xx yyy yyy yyy");

	CHECK_INT_EQ(cq_repetition(&b, 3, 100, 2, &n, NULL), CQ_OK);
	CHECK_INT_EQ(n, 3);			/* "abc" + 3 repeats */
	CHECK_INT_EQ(cq_repetition(&c, 3, 100, 2, &n, NULL), CQ_OK);
	CHECK_INT_EQ(n, 0);
	CHECK_INT_EQ(cq_repetition(&d, 3, 100, 2, &n, NULL), CQ_OK);
	CHECK_INT_EQ(n, 2);			/* "yyy" then " yyy" twice */
	CHECK_INT_EQ(cq_repetition(&d, 3, 100, 3, &n, NULL), CQ_OK);
	CHECK_INT_EQ(n, 0);
	/* "go" is shorter than 3, but "go " (3) repeats: "go go go go" */
	CHECK_INT_EQ(cq_repetition(&a, 3, 100, 2, &n, NULL), CQ_OK);
	CHECK_INT_EQ(n, 2);			/* "go " + 2 repeats, "go" left over */
	CHECK_INT_EQ(cq_repetition(&a, 0, 100, 2, &n, NULL), CQ_EINVAL);
	cq_utext_free(&a);
	cq_utext_free(&b);
	cq_utext_free(&c);
	cq_utext_free(&d);
}

TEST(filters_html_tags)
{
	static const struct
	{
		const char *s;
		bool		tag;
	}			cases[] = {
		{"plain text", false},
		{"<b>bold</b>", true},
		{"line<br/>break", true},
		{"a < b and c > d", false},
		{"x<y and z>w", true},	/* html.parser reads <y and z> as a tag */
		{"</b> only an end tag", false},
		{"<!-- <b> -->", false},
		{"<a href='x", false},	/* unterminated: text */
		{"<a href='x>y", false},	/* unclosed quote right after '=' */
		{"<a href= 'x>y", true},	/* ... but not after a space */
		{"&#; <b>", true},		/* a ';' later: html.parser goes on */
		{"&#x <b>", false},		/* no ';': html.parser stops reading tags */
		{"<3 <ok>", true},
		{"&#; &#; <b>", false},	/* the second invalid "&#" stops it */
		{"<a b='x &#; <i>", false},	/* so does the first after a break */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		cq_utext	t = u(cases[i].s);

		if (cq_html_tags(&t) != cases[i].tag)
			unit_fail(__FILE__, __LINE__, "html_tags(\"%s\") != %d", cases[i].s, cases[i].tag);
		cq_utext_free(&t);
	}
}

TEST(filters_html_same_tags)
{
	static const struct
	{
		const char *a,
				   *b;
		bool		same;
	}			cases[] = {
		{"plain", "texto", true},	/* no tags on either side */
		{"<b>File</b> not found", "Archivo <B>no</B> encontrado", true},
		{"<b>x</b> <br/>", "<br> <b>y</b>", true},	/* order does not matter */
		{"<b>x</b>", "<i>x</i>", false},
		{"<p>x</p>", "x", false},	/* one side only */
		{"<b><b>x", "<b>x", false},	/* a multiset: counts matter */
		{"<a href=\"x>y\">z</a>", "<a>z</a>", true},	/* a '>' inside a quoted value */
		{"a <!-- <b> --> b", "a b", true},	/* a comment is not a tag */
		{"&#x <b>", "x", true},	/* html.parser stops before the tag */
		{"<file> <b>x</b>", "<archivo> <b>y</b>", true},	/* placeholders: not markup */
		{"<object>", "<objeto>", true},
	};
	char		many[71 * 4 + 1] = "";

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		cq_utext	a = u(cases[i].a),
					b = u(cases[i].b);

		if (cq_html_same_tags(&a, &b) != cases[i].same || cq_html_same_tags(&b, &a) != cases[i].same)
			unit_fail(__FILE__, __LINE__, "html_same_tags(\"%s\", \"%s\") != %d",
					  cases[i].a, cases[i].b, cases[i].same);
		cq_utext_free(&a);
		cq_utext_free(&b);
	}
	/* 64 tags a side are compared; more are never the same */
	for (int k = 0; k < 64; k++)
		strcat(many, "<br>");
	{
		cq_utext	a = u(many);

		CHECK(cq_html_same_tags(&a, &a));
		cq_utext_free(&a);
	}
	strcat(many, "<br>");
	{
		cq_utext	a = u(many);

		CHECK(!cq_html_same_tags(&a, &a));
		cq_utext_free(&a);
	}
}

TEST(filters_dedup_keys)
{
	cq_utext	a = u("Hello, World!"),
				b = u("hello world"),
				c = u("Hola"),
				d = u("hola");
	int64_t		k1,
				k2,
				k3,
				k4;

	CHECK_INT_EQ(cq_dedup_key(&a, &c, CQ_DEDUP_NEAR, CQ_SIDE_BOTH, &k1, NULL), CQ_OK);
	CHECK_INT_EQ(cq_dedup_key(&b, &d, CQ_DEDUP_NEAR, CQ_SIDE_BOTH, &k2, NULL), CQ_OK);
	CHECK(k1 == k2);
	CHECK_INT_EQ(cq_dedup_key(&a, &c, CQ_DEDUP_EXACT, CQ_SIDE_BOTH, &k3, NULL), CQ_OK);
	CHECK_INT_EQ(cq_dedup_key(&b, &d, CQ_DEDUP_EXACT, CQ_SIDE_BOTH, &k4, NULL), CQ_OK);
	CHECK(k3 != k4);
	/* the target side alone ignores the source */
	CHECK_INT_EQ(cq_dedup_key(&a, &c, CQ_DEDUP_LOWERCASE, CQ_SIDE_TGT, &k3, NULL), CQ_OK);
	CHECK_INT_EQ(cq_dedup_key(&b, &d, CQ_DEDUP_LOWERCASE, CQ_SIDE_TGT, &k4, NULL), CQ_OK);
	CHECK(k3 == k4);
	cq_utext_free(&a);
	cq_utext_free(&b);
	cq_utext_free(&c);
	cq_utext_free(&d);
}

/* the one definition of a copy: equal near keys, a letter on the source side */
TEST(filters_dedup_is_copy)
{
	static const struct
	{
		const char *src,
				   *tgt;
		bool		copy;
	}			cases[] = {
		{"Save the file.", "Save the file.", true},
		{"Save the file.", "save THE file", true},	/* near: case and punctuation */
		{"Save the file.", "Guardar el archivo.", false},
		{"Save the file.", "Save the files.", false},
		{"42", "42", false},	/* no letter: not a copy */
		{"...", "", false},
		{"", "", false},
		{"Fichier", "fichier!", true},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		cq_utext	a = u(cases[i].src),
					b = u(cases[i].tgt);
		bool		copy = !cases[i].copy;

		CHECK_INT_EQ(cq_dedup_is_copy(&a, &b, &copy, NULL), CQ_OK);
		if (copy != cases[i].copy)
			unit_fail(__FILE__, __LINE__, "is_copy(\"%s\", \"%s\") != %d", cases[i].src,
					  cases[i].tgt, cases[i].copy);
		cq_utext_free(&a);
		cq_utext_free(&b);
	}
}

TEST(filters_langid_cld2)
{
	const char *en = "In the beginning, God created the heavens and the earth.";
	const char *es = "En el principio creó Dios el cielo y la tierra.";
	cq_langid_result r;

	CHECK(cq_langid(en, strlen(en), -1, &r));
	CHECK_STR_EQ(cq_langid_code(r.lang), "en");
	CHECK(r.reliable && r.prob > 0.9 && r.prob <= 1.0);
	CHECK(cq_langid(es, strlen(es), -1, &r));
	CHECK_STR_EQ(cq_langid_code(r.lang), "es");
	CHECK(cq_langid("", 0, -1, &r));
	CHECK_INT_EQ(r.lang, cq_langid_unknown());
	CHECK_INT_EQ(cq_langid_lookup("es"), cq_langid_lookup("SPANISH"));
	CHECK_INT_EQ(cq_langid_lookup("klingon"), -1);
}

TEST(filters_langid_hint_and_rule)
{
	/* a Spanish verse CLD2 calls Italian, reliably, unless told to expect Spanish */
	const char *verse = "Y de la lepra del vestido, y de la casa;";
	int			es = cq_langid_lookup("es");
	cq_langid_result r;
	cq_utext	word = u("Archivo"),	/* too short for CLD2: un, not reliable */
				english = u("Open the file and read it carefully."),
				v = u(verse);
	cq_langid_rule cld2filter = {0},
				deflt = {.hint = true, .keep_unreliable = true},
				shortcut = {.min_chars = 8};
	double		conf;

	CHECK(cq_langid(verse, strlen(verse), -1, &r));
	CHECK_STR_EQ(cq_langid_code(r.lang), "it");
	CHECK(r.reliable);
	CHECK(cq_langid(verse, strlen(verse), es, &r));
	CHECK_STR_EQ(cq_langid_code(r.lang), "es");
	CHECK(r.reliable);
	CHECK(cq_langid("Archivo", 7, es, &r));
	CHECK_STR_EQ(cq_langid_code(r.lang), "un");
	CHECK(!r.reliable);

	/* Cld2Filter judges every answer */
	CHECK_INT_EQ(cq_lang_confidence(&v, es, &cld2filter, &conf, NULL), CQ_OK);
	CHECK_NEAR(conf, 0.0, 0);
	CHECK_INT_EQ(cq_lang_confidence(&word, es, &cld2filter, &conf, NULL), CQ_OK);
	CHECK_NEAR(conf, 0.0, 0);
	/* the defaults: the hint settles the verse, the unreliable answer is not judged */
	CHECK_INT_EQ(cq_lang_confidence(&v, es, &deflt, &conf, NULL), CQ_OK);
	CHECK(conf > 0.9 && conf <= 1.0);
	CHECK_INT_EQ(cq_lang_confidence(&word, es, &deflt, &conf, NULL), CQ_OK);
	CHECK_NEAR(conf, 1.0, 0);
	/* ... and English where Spanish is expected is still caught */
	CHECK_INT_EQ(cq_lang_confidence(&english, es, &deflt, &conf, NULL), CQ_OK);
	CHECK_NEAR(conf, 0.0, 0);
	/* min_chars: 7 code points are not judged under 8, English at 36 is */
	CHECK_INT_EQ(cq_lang_confidence(&word, es, &shortcut, &conf, NULL), CQ_OK);
	CHECK_NEAR(conf, 1.0, 0);
	CHECK_INT_EQ(cq_lang_confidence(&english, es, &shortcut, &conf, NULL), CQ_OK);
	CHECK_NEAR(conf, 0.0, 0);
	cq_utext_free(&word);
	cq_utext_free(&english);
	cq_utext_free(&v);
}

TEST(filters_filter_keep_thresholds)
{
	cq_pair		p;
	bool		keep;
	cq_filter	f = {.kind = CQ_FILTER_LENGTH_RATIO, .threshold = 2.0, .unit = CQ_UNIT_WORD};

	p.src = u("one two");
	p.tgt = u("uno dos tres cuatro");
	/* ratio 2 is not < 2 */
	CHECK_INT_EQ(cq_filter_keep(&f, &p, &keep, NULL), CQ_OK);
	CHECK(!keep);
	f.threshold = 2.5;
	CHECK_INT_EQ(cq_filter_keep(&f, &p, &keep, NULL), CQ_OK);
	CHECK(keep);
	f = (cq_filter) {.kind = CQ_FILTER_LANGID, .threshold = 0, .src_lang = cq_langid_lookup("en"),
	.tgt_lang = cq_langid_lookup("es")};
	/* too short for CLD2: unknown, confidence 0 for Cld2Filter (rule all off) */
	CHECK_INT_EQ(cq_filter_keep(&f, &p, &keep, NULL), CQ_OK);
	CHECK(!keep);
	/* not judged when CLD2's answer is not reliable */
	f.langid.keep_unreliable = true;
	CHECK_INT_EQ(cq_filter_keep(&f, &p, &keep, NULL), CQ_OK);
	CHECK(keep);
	cq_utext_free(&p.src);
	cq_utext_free(&p.tgt);
}
