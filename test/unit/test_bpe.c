/* Hand-worked examples for BPE codes, segmentation and learning. */
#include "unit.h"

#include <stdlib.h>

#include "common/mem.h"
#include "text/bpe.h"
#include "text/bpe_learn.h"

static cq_bpe
parse_ok(const char *codes)
{
	cq_bpe		b;
	cq_error err = {0};
	cq_code		rc = cq_bpe_parse_codes(&b, codes, strlen(codes), &err);

	if (rc != CQ_OK)
		unit_fail(__FILE__, __LINE__, "parse failed: %s", err.msg);
	return b;
}

/* apply into a static buffer so CHECK_STR_EQ can compare */
static const char *
apply(const cq_bpe *b, const char *sentence)
{
	static char out[1024];
	size_t		n;
	char	   *s = cq_bpe_apply(b, NULL, sentence, strlen(sentence), &n);

	snprintf(out, sizeof(out), "%s", s ? s : "(null)");
	cq_free(s);
	return out;
}

static const char *codes_v2 =
"#version: 0.2\n"
"l o\n"
"lo w</w>\n"
"e r</w>\n"
"n e\n"
"ne w\n"
"new er</w>\n";

TEST(bpe_apply_end_of_word_symbols)
{
	cq_bpe		b = parse_ok(codes_v2);

	CHECK_INT_EQ(b.version, 2);
	CHECK_INT_EQ(b.n_merges, 6);
	/* "lo w</w>" applies only at the end of a word */
	CHECK_STR_EQ(apply(&b, "low"), "low");
	CHECK_STR_EQ(apply(&b, "lower"), "lo@@ w@@ er");
	CHECK_STR_EQ(apply(&b, "newer"), "newer");
	CHECK_STR_EQ(apply(&b, "lowest"), "lo@@ w@@ e@@ s@@ t");
	CHECK_STR_EQ(apply(&b, "  low \t lower\n"), "low lo@@ w@@ er");
	CHECK_STR_EQ(apply(&b, ""), "");
	cq_bpe_free(&b);
}

TEST(bpe_apply_merge_rank_decides_not_position)
{
	cq_bpe		b1 = parse_ok("#version: 0.2\nb c</w>\na b\n");
	cq_bpe		b2 = parse_ok("#version: 0.2\na b\nb c</w>\n");

	CHECK_STR_EQ(apply(&b1, "abc"), "a@@ bc");
	CHECK_STR_EQ(apply(&b2, "abc"), "ab@@ c");
	cq_bpe_free(&b1);
	cq_bpe_free(&b2);
}

TEST(bpe_apply_repeated_pair_merges_left_to_right)
{
	cq_bpe		b = parse_ok("#version: 0.2\na a\n");
	cq_bpe		b2 = parse_ok("#version: 0.2\na a\naa aa\n");

	/* a a a a</w>: (a, a) at 0 and 1 overlap, the left one wins */
	CHECK_STR_EQ(apply(&b, "aaaa"), "aa@@ a@@ a");
	CHECK_STR_EQ(apply(&b, "aaaaa"), "aa@@ aa@@ a");
	CHECK_STR_EQ(apply(&b2, "aaaaa"), "aaaa@@ a");
	cq_bpe_free(&b);
	cq_bpe_free(&b2);
}

TEST(bpe_apply_unknown_and_single_characters)
{
	cq_bpe		b = parse_ok(codes_v2);

	CHECK_STR_EQ(apply(&b, "xyz"), "x@@ y@@ z");
	CHECK_STR_EQ(apply(&b, "lox"), "lo@@ x");
	CHECK_STR_EQ(apply(&b, "a l o"), "a l o");
	cq_bpe_free(&b);
}

TEST(bpe_apply_multibyte_characters)
{
	cq_bpe		b = parse_ok("#version: 0.2\n\xc3\xb1 o</w>\nn i\n\xe6\x97\xa5 \xe6\x9c\xac\n");

	/* niño, año, 日本語, ñ */
	CHECK_STR_EQ(apply(&b, "ni\xc3\xb1o"), "ni@@ \xc3\xb1o");
	CHECK_STR_EQ(apply(&b, "a\xc3\xb1o"), "a@@ \xc3\xb1o");
	CHECK_STR_EQ(apply(&b, "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"),
				 "\xe6\x97\xa5\xe6\x9c\xac@@ \xe8\xaa\x9e");
	CHECK_STR_EQ(apply(&b, "\xc3\xb1"), "\xc3\xb1");
	/*
	 * Ill-formed bytes (never from PostgreSQL text) are one symbol per
	 * maximal subpart, common/utf8.h's rule: a cut euro sign is one (it was
	 * two before 0.2.0), an overlong '/' two (it was one), and a word of one
	 * subpart comes back whole
	 */
	CHECK_STR_EQ(apply(&b, "a\xe2\x82" "b"), "a@@ \xe2\x82@@ b");
	CHECK_STR_EQ(apply(&b, "\xc0\xaf"), "\xc0@@ \xaf");
	CHECK_STR_EQ(apply(&b, "\xf0\x9f\x98"), "\xf0\x9f\x98");
	cq_bpe_free(&b);
}

TEST(bpe_apply_codes_version_0_1)
{
	cq_bpe		b = parse_ok("l o\nlo w\nlow </w>\ne r\ner </w>\n");

	CHECK_INT_EQ(b.version, 1);
	CHECK_STR_EQ(apply(&b, "low"), "low");
	CHECK_STR_EQ(apply(&b, "lower"), "low@@ er");
	/* a lone "</w>" left at the end is dropped */
	CHECK_STR_EQ(apply(&b, "lo"), "lo");
	CHECK_STR_EQ(apply(&b, "loe"), "lo@@ e");
	cq_bpe_free(&b);
}

TEST(bpe_cache_gives_the_same_segmentation)
{
	cq_bpe		b = parse_ok(codes_v2);
	cq_bpe_cache c;
	size_t		n;

	CHECK_INT_EQ(cq_bpe_cache_init(&c, 2), CQ_OK);
	for (int round = 0; round < 3; round++)
	{
		char	   *s = cq_bpe_apply(&b, &c, "lower low newer lowest lower", 28, &n);

		CHECK_STR_EQ(s, "lo@@ w@@ er low newer lo@@ w@@ e@@ s@@ t lo@@ w@@ er");
		cq_free(s);
		CHECK(c.words.n <= 2);
	}
	cq_bpe_cache_free(&c);
	cq_bpe_free(&b);
}

TEST(bpe_whitespace_mode_splits_only)
{
	char	   *s = cq_bpe_apply(NULL, NULL, " a  bc\td ", 9, NULL);

	CHECK_STR_EQ(s, "a bc d");
	cq_free(s);
}

TEST(bpe_codes_errors_report_the_line)
{
	cq_bpe		b;
	cq_error err = {0};

	CHECK_INT_EQ(cq_bpe_parse_codes(&b, "", 0, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_bpe_parse_codes(&b, " \n\n", 3, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_bpe_parse_codes(&b, "a b\nc\n", 6, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "line 2") != NULL);
	const char *c3 = "#version: 0.2\na b\nc d e\n";

	CHECK_INT_EQ(cq_bpe_parse_codes(&b, c3, strlen(c3), &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "line 3") != NULL);
	const char *c4 = "#version: 0.2\na b\n\nc d\n";

	CHECK_INT_EQ(cq_bpe_parse_codes(&b, c4, strlen(c4), &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "line 3") != NULL);
	const char *c5 = "#version: 0.3\na b\n";

	CHECK_INT_EQ(cq_bpe_parse_codes(&b, c5, strlen(c5), &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "line 1") != NULL);
	const char *c6 = "#version: 0.2\na  b\n";

	CHECK_INT_EQ(cq_bpe_parse_codes(&b, c6, strlen(c6), &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "line 2") != NULL);
}

TEST(bpe_codes_parse_tolerates_what_apply_bpe_does)
{
	/* \r\n line ends, surrounding spaces, a 0.2.0 header, missing final \n */
	const char *c = "#version: 0.2.0\r\n a b \r\nab c</w>";
	cq_bpe		b = parse_ok(c);

	CHECK_INT_EQ(b.version, 2);
	CHECK_INT_EQ(b.n_merges, 2);
	CHECK_STR_EQ(apply(&b, "abc"), "abc");
	cq_bpe_free(&b);

	/* a header alone is a model without merges */
	b = parse_ok("#version: 0.2\n");
	CHECK_INT_EQ(b.n_merges, 0);
	CHECK_STR_EQ(apply(&b, "abc"), "a@@ b@@ c");
	cq_bpe_free(&b);
}

TEST(bpe_codes_write_round_trip_and_duplicate_rank)
{
	const char *c = "#version: 0.2\na b\nab c</w>\na b\n\xc3\xb1 o</w>\n";
	cq_bpe		b = parse_ok(c);
	size_t		n;
	char	   *w = cq_bpe_write_codes(&b, &n);

	CHECK_STR_EQ(w, c);
	CHECK_INT_EQ(n, strlen(c));
	/* the repeated pair keeps its first rank */
	int32_t		l = (int32_t) cq_strmap_find(&b.syms, "a", 1);
	int32_t		r = (int32_t) cq_strmap_find(&b.syms, "b", 1);

	CHECK_INT_EQ(cq_pairmap_get(&b.ranks, l, r), 0);
	cq_free(w);
	cq_bpe_free(&b);

	b = parse_ok("a b\nb </w>\n");
	w = cq_bpe_write_codes(&b, &n);
	CHECK_STR_EQ(w, "a b\nb </w>\n");
	cq_free(w);
	cq_bpe_free(&b);
}

static cq_strmap
counts_of(const char *corpus)
{
	cq_strmap	m;

	cq_strmap_init(&m, 16);
	CHECK_INT_EQ(cq_count_words(&m, corpus, strlen(corpus)), CQ_OK);
	return m;
}

static char *
learn_codes(const char *corpus, int merges, int min_freq)
{
	cq_strmap	m = counts_of(corpus);
	cq_bpe		b;
	cq_error err = {0};
	char	   *w = NULL;

	if (cq_bpe_learn(&m, merges, min_freq, NULL, NULL, &b, &err) == CQ_OK)
	{
		w = cq_bpe_write_codes(&b, NULL);
		cq_bpe_free(&b);
	}
	cq_strmap_free(&m);
	return w;
}

/* low x5, lower x2, newest x6, widest x3 (Sennrich et al.), worked by hand */
static const char *sennrich_corpus =
"low low low low low lower lower newest newest newest newest newest newest "
"widest widest widest";

TEST(bpe_learn_sennrich_example_with_ties)
{
	char	   *w = learn_codes(sennrich_corpus, 100, 2);

	CHECK_STR_EQ(w,
				 "#version: 0.2\n"
				 "s t</w>\n" "e st</w>\n" "l o\n" "w est</w>\n" "n e\n"
				 "ne west</w>\n" "lo w</w>\n" "w i\n" "wi d\n" "wid est</w>\n"
				 "w e\n" "we r</w>\n" "lo wer</w>\n");
	cq_free(w);
	/* min_frequency 3 stops before the pairs seen twice */
	w = learn_codes(sennrich_corpus, 100, 3);
	CHECK_STR_EQ(w,
				 "#version: 0.2\n"
				 "s t</w>\n" "e st</w>\n" "l o\n" "w est</w>\n" "n e\n"
				 "ne west</w>\n" "lo w</w>\n" "w i\n" "wi d\n" "wid est</w>\n");
	cq_free(w);
	w = learn_codes(sennrich_corpus, 3, 1);
	CHECK_STR_EQ(w, "#version: 0.2\ns t</w>\ne st</w>\nl o\n");
	cq_free(w);
}

TEST(bpe_learn_overlapping_pairs_and_prefix_ties)
{
	/* a a a a</w>: (a, a) counts twice; then (aa, a) beats (a, a</w>) */
	char	   *w = learn_codes("aaaa", 10, 1);

	CHECK_STR_EQ(w, "#version: 0.2\na a\naa a\naaa a</w>\n");
	cq_free(w);
	/* equal counts: the greater left symbol first */
	w = learn_codes("ab cd ab cd", 10, 1);
	CHECK_STR_EQ(w, "#version: 0.2\nc d</w>\na b</w>\n");
	cq_free(w);
	/* single characters have no pairs */
	w = learn_codes("a b \xc3\xb1", 10, 1);
	CHECK_STR_EQ(w, "#version: 0.2\n");
	cq_free(w);
}

TEST(bpe_learn_multibyte_and_step_api)
{
	cq_strmap	m = counts_of("ni\xc3\xb1o ni\xc3\xb1o a\xc3\xb1o");
	cq_bpe_learner *l;
	bool		learned;

	CHECK_INT_EQ(cq_bpe_learner_new(&m, 2, &l, NULL), CQ_OK);
	/* (ñ, o</w>) x3 first, then (i, ño</w>) x2 vs (n, i) x2: 'n' > 'i' */
	CHECK(cq_bpe_learner_step(l, &learned, NULL) == CQ_OK && learned);
	CHECK_INT_EQ(cq_bpe_learner_last_count(l), 3);
	CHECK(cq_bpe_learner_step(l, &learned, NULL) == CQ_OK && learned);
	CHECK(cq_bpe_learner_step(l, &learned, NULL) == CQ_OK && learned);
	CHECK(cq_bpe_learner_step(l, &learned, NULL) == CQ_OK && !learned);
	CHECK_INT_EQ(cq_bpe_learner_n_merges(l), 3);

	cq_bpe		b;

	CHECK_INT_EQ(cq_bpe_learner_model(l, &b, NULL), CQ_OK);
	char	   *w = cq_bpe_write_codes(&b, NULL);

	CHECK_STR_EQ(w, "#version: 0.2\n\xc3\xb1 o</w>\nn i\nni \xc3\xb1o</w>\n");
	CHECK_STR_EQ(apply(&b, "ni\xc3\xb1o a\xc3\xb1o ni"), "ni\xc3\xb1o a@@ \xc3\xb1o n@@ i");
	cq_free(w);
	cq_bpe_free(&b);
	cq_bpe_learner_free(l);
	cq_strmap_free(&m);
}

static bool
stop_after_two(void *arg)
{
	return ++*(int *) arg <= 2;
}

TEST(bpe_learn_cancel_callback)
{
	cq_strmap	m = counts_of(sennrich_corpus);
	cq_bpe		b;
	cq_error err = {0};
	int			calls = 0;

	CHECK_INT_EQ(cq_bpe_learn(&m, 100, 1, stop_after_two, &calls, &b, &err), CQ_STOPPED);
	CHECK_INT_EQ(calls, 3);
	CHECK(strstr(err.msg, "after 2 merges") != NULL);
	cq_strmap_free(&m);
}

static const char *
undo(const char *s)
{
	static char out[256];
	size_t		n;
	char	   *u = cq_bpe_undo(s, strlen(s), &n);

	CHECK_INT_EQ(n, strlen(u));
	snprintf(out, sizeof(out), "%s", u);
	cq_free(u);
	return out;
}

/* Hand-worked against sed -r 's/(@@ )|(@@ ?$)//g' (GNU sed 4.9). */
TEST(bpe_undo_is_subword_nmt_sed)
{
	CHECK_STR_EQ(undo("lo@@ w@@ er is new"), "lower is new");
	CHECK_STR_EQ(undo("a @@ b"), "a b");
	CHECK_STR_EQ(undo("x@@@@ y"), "x@@y");
	CHECK_STR_EQ(undo("e@@mail stays"), "e@@mail stays");
	CHECK_STR_EQ(undo("trailing@@"), "trailing");
	CHECK_STR_EQ(undo("trailing@@ "), "trailing");
	CHECK_STR_EQ(undo("two@@  spaces"), "two spaces");
	CHECK_STR_EQ(undo("@@"), "");
	CHECK_STR_EQ(undo("@"), "@");
	CHECK_STR_EQ(undo(""), "");
	CHECK_STR_EQ(undo("né@@ e ü@@"), "née ü");
}

/* Undoing what apply segmented gives the whitespace-normalised sentence. */
TEST(bpe_undo_inverts_apply)
{
	cq_bpe		b = parse_ok(codes_v2);
	const char *lines[] = {"low lower lowest newer", "  new\tlow  ", "", "wer lo l",
	"ÿlowñ nêwer"};
	const char *norm[] = {"low lower lowest newer", "new low", "", "wer lo l",
	"ÿlowñ nêwer"};

	for (int i = 0; i < 5; i++)
		CHECK_STR_EQ(undo(apply(&b, lines[i])), norm[i]);
	cq_bpe_free(&b);
}
