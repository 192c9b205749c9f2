/*
 * The metrics core (extension/metrics) on hand-worked examples: tokenizer
 * cases, BLEU and chrF statistics and scores worked out by hand, the
 * signature strings, and the bootstrap's invariants.  test/ref checks the same
 * code against sacreBLEU's own test vectors and a plain-Python reference.
 */
#include "unit.h"

#include <stdlib.h>

#include "common/mem.h"
#include "metrics/bleu.h"
#include "metrics/bootstrap.h"
#include "metrics/chrf.h"
#include "metrics/ngram.h"
#include "metrics/signature.h"
#include "metrics/unicode.h"

static char *
tok(cq_tokenizer t, bool lowercase, const char *s)
{
	static char *last;
	cq_bleu_options o;
	cq_metrics_work w = {0};

	cq_bleu_options_init(&o);
	o.tokenize = t;
	o.lowercase = lowercase;
	cq_free(last);
	CHECK_INT_EQ(cq_bleu_tokenized(&o, s, strlen(s), &w, &last, NULL, NULL), CQ_OK);
	cq_metrics_work_free(&w);
	return last;
}

TEST(metrics_tokenize_13a)
{
	CHECK_STR_EQ(tok(CQ_TOK_13A, false, "Hello, world!"), "Hello , world !");
	/* period and comma stay inside numbers, split elsewhere */
	CHECK_STR_EQ(tok(CQ_TOK_13A, false, "3.14 and 1,000 end."), "3.14 and 1,000 end .");
	CHECK_STR_EQ(tok(CQ_TOK_13A, false, "a-b 1-2"), "a-b 1 - 2");
	CHECK_STR_EQ(tok(CQ_TOK_13A, false, "it's $5 (ok)"), "it's $ 5 ( ok )");
	/* the entities are undone in order: &amp;lt; becomes &lt; becomes < */
	CHECK_STR_EQ(tok(CQ_TOK_13A, false, "&quot;x&quot; &amp;lt;"), "\" x \" <");
	CHECK_STR_EQ(tok(CQ_TOK_13A, false, "a<skipped>b  line-\nbreak\nnext"), "ab linebreak next");
	/* a year before the final period: 13a pads the line, so it splits */
	CHECK_STR_EQ(tok(CQ_TOK_13A, false, "In 2010."), "In 2010 .");
	CHECK_STR_EQ(tok(CQ_TOK_13A, false, "  \t "), "");
}

TEST(metrics_tokenize_intl)
{
	CHECK_STR_EQ(tok(CQ_TOK_INTL, false, "Hello, world!"), "Hello , world !");
	CHECK_STR_EQ(tok(CQ_TOK_INTL, false, "3.14 and 1,000"), "3.14 and 1,000");
	/* mteval-v14's known quirk: no split of a final period after a digit */
	CHECK_STR_EQ(tok(CQ_TOK_INTL, false, "In 2010."), "In 2010.");
	/* non-ASCII punctuation and symbols: « » (Pi Pf), € (Sc), ¿ (Po) */
	CHECK_STR_EQ(tok(CQ_TOK_INTL, false, "«Hola» ¿Qué? 5€"), "« Hola » ¿ Qué ? 5 €");
	/* U+3002 ideographic full stop is punctuation */
	CHECK_STR_EQ(tok(CQ_TOK_INTL, false, "\xe6\x97\xa5\xe6\x9c\xac\xe3\x80\x82"), "\xe6\x97\xa5\xe6\x9c\xac \xe3\x80\x82");
}

TEST(metrics_tokenize_char_none_lowercase)
{
	CHECK_STR_EQ(tok(CQ_TOK_CHAR, false, "ab c\xc3\xa9"), "a b c \xc3\xa9");
	CHECK_STR_EQ(tok(CQ_TOK_NONE, false, " a,b \xc2\xa0 c "), "a,b c");	/* U+00A0 is whitespace */
	CHECK_STR_EQ(tok(CQ_TOK_NONE, true, "ABC \xc3\x89T\xc3\x89"), "abc \xc3\xa9t\xc3\xa9");
	/* final sigma: ΟΔΟΣ -> οδος with ς; a lone Σ stays σ */
	CHECK_STR_EQ(tok(CQ_TOK_NONE, true, "\xce\x9f\xce\x94\xce\x9f\xce\xa3 \xce\xa3"),
				 "\xce\xbf\xce\xb4\xce\xbf\xcf\x82 \xcf\x83");
	/* İ lowercases to two code points, i + combining dot above */
	CHECK_STR_EQ(tok(CQ_TOK_NONE, true, "\xc4\xb0"), "i\xcc\x87");
	/* invalid UTF-8: one U+FFFD per maximal ill-formed subpart (common/utf8.h) */
	CHECK_STR_EQ(tok(CQ_TOK_NONE, false, "a\xff"), "a\xef\xbf\xbd");
	/* a cut euro sign is one character (it was two, one per byte, before 0.2.0) */
	CHECK_STR_EQ(tok(CQ_TOK_CHAR, false, "a\xe2\x82" "b"), "a \xef\xbf\xbd b");
	/* an overlong '/' is two: no well-formed sequence starts with C0 */
	CHECK_STR_EQ(tok(CQ_TOK_CHAR, false, "\xc0\xaf"), "\xef\xbf\xbd \xef\xbf\xbd");
}

static cq_bleu_stats
bleu_stats(const cq_bleu_options *o, const char *hyp, const char *ref)
{
	cq_bleu_stats s;
	cq_metrics_work w = {0};
	size_t		rl = strlen(ref);

	CHECK_INT_EQ(cq_bleu_sentence_stats(o, hyp, strlen(hyp), &ref, &rl, 1, &w, &s, NULL), CQ_OK);
	cq_metrics_work_free(&w);
	return s;
}

/*
 * hyp "the cat sat on the mat", ref "the cat is on the mat":
 * 1-grams the x2, cat, on, mat match: 5/6; 2-grams "the cat", "on the",
 * "the mat": 3/5; 3-grams "on the mat": 1/4; 4-grams 0/3.  BP 1.
 */
TEST(metrics_bleu_hand_worked)
{
	cq_bleu_options o;
	cq_bleu_stats s;
	double		bp,
				prec[CQ_BLEU_MAX_ORDER];

	cq_bleu_options_init(&o);
	s = bleu_stats(&o, "the cat sat on the mat", "the cat is on the mat");
	CHECK_INT_EQ(s.hyp_len, 6);
	CHECK_INT_EQ(s.ref_len, 6);
	CHECK_INT_EQ(s.correct[0], 5);
	CHECK_INT_EQ(s.correct[1], 3);
	CHECK_INT_EQ(s.correct[2], 1);
	CHECK_INT_EQ(s.correct[3], 0);
	CHECK_INT_EQ(s.total[0], 6);
	CHECK_INT_EQ(s.total[3], 3);
	/* exp: the first order without a match gets 100 / (2 * 3) */
	CHECK_NEAR(cq_bleu_score(&o, &s, &bp, prec), pow(500.0 / 6 * 60 * 25 * (100.0 / 6), 0.25), 1e-9);
	CHECK_NEAR(bp, 1.0, 0);
	CHECK_NEAR(prec[3], 100.0 / 6, 1e-12);
	/* floor 0.1: 100 * 0.1 / 3; none: log 0 makes the score 0 */
	o.smooth = CQ_SMOOTH_FLOOR;
	o.smooth_value = 0.1;
	CHECK_NEAR(cq_bleu_score(&o, &s, NULL, NULL), pow(500.0 / 6 * 60 * 25 * (10.0 / 3), 0.25), 1e-9);
	o.smooth = CQ_SMOOTH_NONE;
	CHECK_NEAR(cq_bleu_score(&o, &s, NULL, NULL), 0.0, 0);
	/* add-k 1 from the 2-grams on: 4/6, 2/5, 1/4 */
	o.smooth = CQ_SMOOTH_ADD_K;
	o.smooth_value = 1;
	CHECK_NEAR(cq_bleu_score(&o, &s, NULL, NULL), pow(500.0 / 6 * 400.0 / 6 * 40 * 25, 0.25), 1e-9);
}

/* hyp "the cat" against "the cat sat": BP exp(1 - 3/2); no 3-grams */
TEST(metrics_bleu_brevity_and_effective_order)
{
	cq_bleu_options o;
	cq_bleu_stats s;
	double		bp;

	cq_bleu_options_init(&o);
	s = bleu_stats(&o, "the cat", "the cat sat");
	CHECK_NEAR(cq_bleu_score(&o, &s, &bp, NULL), 0.0, 0);	/* 3-gram precision 0 */
	CHECK_NEAR(bp, exp(-0.5), 1e-15);
	o.effective_order = true;
	CHECK_NEAR(cq_bleu_score(&o, &s, NULL, NULL), 100 * exp(-0.5), 1e-9);
	/* empty hypothesis: BP 0, score 0 */
	s = bleu_stats(&o, "", "the cat");
	CHECK_INT_EQ(s.hyp_len, 0);
	CHECK_NEAR(cq_bleu_score(&o, &s, &bp, NULL), 0.0, 0);
	CHECK_NEAR(bp, 0.0, 0);
}

/* n-gram clipping: "the the the" against "the cat": 1 of 3 */
TEST(metrics_bleu_clipping_and_corpus_sum)
{
	cq_bleu_options o;
	cq_bleu_stats a,
				b,
				sum = {0};

	cq_bleu_options_init(&o);
	a = bleu_stats(&o, "the the the", "the cat");
	CHECK_INT_EQ(a.correct[0], 1);
	CHECK_INT_EQ(a.total[0], 3);
	b = bleu_stats(&o, "a b c d", "a b c d");
	cq_bleu_stats_add(&sum, &a);
	cq_bleu_stats_add(&sum, &b);
	CHECK_INT_EQ(sum.correct[0], 5);
	CHECK_INT_EQ(sum.total[0], 7);
	CHECK_INT_EQ(sum.correct[3], 1);
	CHECK_INT_EQ(sum.hyp_len, 7);
	CHECK_INT_EQ(sum.ref_len, 6);
	/* 5/7, 3/5, 2/3 (a b c, b c d), 1/1 */
	CHECK_NEAR(cq_bleu_score(&o, &sum, NULL, NULL), pow(500.0 / 7 * 60 * 200.0 / 3 * 100, 0.25), 1e-9);
}

/* two references: clip by the larger count, closest length (shorter on ties) */
TEST(metrics_bleu_multi_reference)
{
	cq_bleu_options o;
	cq_bleu_stats s;
	cq_metrics_work w = {0};
	const char *refs[] = {"a a x", "a b b b"};
	size_t		rl[] = {5, 7};

	cq_bleu_options_init(&o);
	o.tokenize = CQ_TOK_NONE;
	CHECK(CQ_OK == cq_bleu_sentence_stats(&o, "a a b b b b", 11, refs, rl, 2, &w, &s, NULL));
	CHECK_INT_EQ(s.correct[0], 5);	/* a: min(2, 2), b: min(4, 3) */
	CHECK_INT_EQ(s.ref_len, 4);
	CHECK(CQ_OK == cq_bleu_sentence_stats(&o, "a a b b b", 9, refs, rl, 2, &w, &s, NULL));
	CHECK_INT_EQ(s.ref_len, 4);		/* |5-3| = 2 > |5-4| = 1 */
	CHECK(CQ_OK == cq_bleu_sentence_stats(&o, "a", 1, refs, rl, 2, &w, &s, NULL));
	CHECK_INT_EQ(s.ref_len, 3);
	cq_metrics_work_free(&w);
}

static void
chrf_stats(const cq_chrf_options *o, const char *hyp, const char *ref, int64_t *st)
{
	cq_metrics_work w = {0};
	size_t		rl = strlen(ref);

	CHECK_INT_EQ(cq_chrf_sentence_stats(o, hyp, strlen(hyp), &ref, &rl, 1, &w, st, NULL), CQ_OK);
	cq_metrics_work_free(&w);
}

/*
 * "abc" vs "abd": 1-grams 2/3 both ways, 2-grams ab: 1/2, 3-grams 0/1,
 * 4..6-grams none on either side.  Effective order 3, P = R = 7/18, so
 * chrF = 7/18 whatever beta.  With eps smoothing the mean of the per-order
 * F: (2/3 + 1/2 + eps + 3 eps) / 6.
 */
TEST(metrics_chrf_hand_worked)
{
	cq_chrf_options o;
	int64_t		st[CQ_CHRF_MAX_STATS];

	cq_chrf_options_init(&o);
	chrf_stats(&o, "a bc", "ab d", st);	/* whitespace is removed */
	CHECK_INT_EQ(cq_chrf_nstats(&o), 18);
	CHECK_INT_EQ(st[0], 3);
	CHECK_INT_EQ(st[1], 3);
	CHECK_INT_EQ(st[2], 2);
	CHECK_INT_EQ(st[3 * 1 + 2], 1);
	CHECK_INT_EQ(st[3 * 2 + 2], 0);
	CHECK_INT_EQ(st[3 * 3], 0);
	CHECK_NEAR(cq_chrf_score(&o, st), 100 * 7.0 / 18, 1e-12);
	o.eps_smoothing = true;
	CHECK_NEAR(cq_chrf_score(&o, st), 100 * (2.0 / 3 + 0.5) / 6, 1e-12);
	/* keeping whitespace: "a bc" vs "ab d" share only a, b, " " */
	cq_chrf_options_init(&o);
	o.whitespace = true;
	chrf_stats(&o, "a bc", "ab d", st);
	CHECK_INT_EQ(st[0], 4);
	CHECK_INT_EQ(st[2], 3);
	CHECK_INT_EQ(st[3 + 2], 0);
}

/*
 * chrF++ words: "the cat." splits into the, cat, . and "(the cat" into
 * (, the, cat.  Word 1-grams: the, cat match (2 of 3 each way); 2-grams:
 * "the cat" matches (1 of 2 each way).
 */
TEST(metrics_chrf_plus_plus_words)
{
	cq_chrf_options o;
	int64_t		st[CQ_CHRF_MAX_STATS];

	cq_chrf_options_init(&o);
	o.word_order = 2;
	chrf_stats(&o, "the cat.", "(the cat", st);
	CHECK_INT_EQ(cq_chrf_nstats(&o), 24);
	CHECK_INT_EQ(st[18], 3);
	CHECK_INT_EQ(st[19], 3);
	CHECK_INT_EQ(st[20], 2);
	CHECK_INT_EQ(st[21], 2);
	CHECK_INT_EQ(st[22], 2);
	CHECK_INT_EQ(st[23], 1);
	/* a one-character word is never split; "a)." loses only its last mark */
	chrf_stats(&o, ". a).", ". a)", st);
	CHECK_INT_EQ(st[18], 3);	/* ".", "a)", "." */
	CHECK_INT_EQ(st[19], 3);	/* ".", "a", ")" */
	CHECK_INT_EQ(st[20], 1);
}

/* A hypothesis with characters against an empty reference scores 0. */
TEST(metrics_chrf_degenerate)
{
	cq_chrf_options o;
	int64_t		st[CQ_CHRF_MAX_STATS];

	cq_chrf_options_init(&o);
	chrf_stats(&o, "abc", "", st);
	CHECK_INT_EQ(st[0], 0);		/* no reference 1-grams: hyp count 0 too */
	CHECK_NEAR(cq_chrf_score(&o, st), 0.0, 0);
	chrf_stats(&o, "", "", st);
	CHECK_NEAR(cq_chrf_score(&o, st), 0.0, 0);
	chrf_stats(&o, "x", "x", st);
	CHECK_NEAR(cq_chrf_score(&o, st), 100.0, 0);
}

TEST(metrics_signatures)
{
	cq_bleu_options b;
	cq_chrf_options c;
	char		buf[200];

	cq_bleu_options_init(&b);
	cq_bleu_signature(&b, 1, buf, sizeof(buf));
	CHECK_STR_EQ(buf, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0");
	b.lowercase = true;
	b.tokenize = CQ_TOK_INTL;
	b.smooth = CQ_SMOOTH_FLOOR;
	b.smooth_value = 0.125;		/* .2f rounds half to even on the exact binary value */
	b.effective_order = true;
	cq_bleu_signature(&b, 1, buf, sizeof(buf));
	CHECK_STR_EQ(buf, "nrefs:1|case:lc|eff:yes|tok:intl|smooth:floor[0.12]|version:2.6.0");
	cq_chrf_options_init(&c);
	cq_chrf_signature(&c, 1, buf, sizeof(buf));
	CHECK_STR_EQ(buf, "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0");
	c.word_order = 2;
	c.eps_smoothing = true;
	c.whitespace = true;
	cq_chrf_signature(&c, 1, buf, sizeof(buf));
	CHECK_STR_EQ(buf, "nrefs:1|case:mixed|eff:no|nc:6|nw:2|space:yes|version:2.6.0");
}

/* test/ref/test_metrics.py passes a zeroed 1024-byte buffer as the workspace */
TEST(metrics_work_fits_ctypes_blob)
{
	CHECK(sizeof(cq_metrics_work) <= 1024);
}

TEST(metrics_unicode_classes)
{
	CHECK_INT_EQ(cq_uc_class('.'), CQ_UC_P);
	CHECK_INT_EQ(cq_uc_class('$'), CQ_UC_S);
	CHECK_INT_EQ(cq_uc_class('7'), CQ_UC_N);
	CHECK_INT_EQ(cq_uc_class(0x00BD), CQ_UC_N);		/* ½ No */
	CHECK_INT_EQ(cq_uc_class(0x20AC), CQ_UC_S);		/* € */
	CHECK_INT_EQ(cq_uc_class('a'), 0);
	CHECK(cq_uc_isspace(0x3000) && cq_uc_isspace(0x1F) && !cq_uc_isspace(0x200B));
}

/* The draws depend on the rows as a multiset, not on their order. */
TEST(metrics_bootstrap_order_free)
{
	enum {N = 101, W = 4};
	int32_t		rows[N * W],
				shuffled[N * W];
	int64_t		s1[W],
				s2[W];

	for (int i = 0; i < N; i++)
		for (int t = 0; t < W; t++)
			rows[i * W + t] = (i * 37 + t * 11) % 23;
	for (int i = 0; i < N; i++)
		memcpy(shuffled + i * W, rows + ((i * 53) % N) * W, W * sizeof(int32_t));
	CHECK(cq_bootstrap_canonical(rows, N, W));
	CHECK(cq_bootstrap_canonical(shuffled, N, W));
	CHECK(memcmp(rows, shuffled, sizeof(rows)) == 0);
	for (uint32_t r = 0; r < 5; r++)
	{
		cq_bootstrap_resample_sum(rows, N, W, 12345, r, s1);
		cq_bootstrap_resample_sum(shuffled, N, W, 12345, r, s2);
		CHECK(memcmp(s1, s2, sizeof(s1)) == 0);
	}
	/* the sum is that of the documented indices */
	memset(s2, 0, sizeof(s2));
	for (size_t i = 0; i < N; i++)
		for (int t = 0; t < W; t++)
			s2[t] += rows[cq_bootstrap_index(12345, 3, i, N) * W + t];
	cq_bootstrap_resample_sum(rows, N, W, 12345, 3, s1);
	CHECK(memcmp(s1, s2, sizeof(s1)) == 0);
}

/* Indices cover 0..n-1 evenly: a chi-square over fixed seeds (no flakes). */
TEST(metrics_bootstrap_index_uniform)
{
	enum {N = 10, DRAWS = 100000};
	int			count[N] = {0};
	double		chi2 = 0;

	for (int i = 0; i < DRAWS; i++)
		count[cq_bootstrap_index(7, (uint32_t) (i / 1000), (size_t) (i % 1000), N)]++;
	for (int k = 0; k < N; k++)
		chi2 += (count[k] - DRAWS / N) * (double) (count[k] - DRAWS / N) / (DRAWS / N);
	/* 9 degrees of freedom: P(chi2 > 27.9) = 0.001; the draws are fixed */
	CHECK(chi2 < 27.9);
}

/* Summary on hand-made resamples: ranks n/40 and n - n/40 - 1, the p-value. */
TEST(metrics_bootstrap_summary)
{
	enum {N = 80};
	double		a[N],
				b[N];
	cq_bootstrap_result res;

	for (int i = 0; i < N; i++)
	{
		a[i] = (double) ((i * 7) % N);		/* a permutation of 0..79 */
		b[i] = a[i] + (i % 2 ? 3.0 : 1.0);	/* |b - a| 1 or 3, mean 2 */
	}
	CHECK(cq_bootstrap_summarize(a, b, N, 40.0, 40.5, &res));
	CHECK_NEAR(res.mean_a, 39.5, 1e-12);
	CHECK_NEAR(res.ci_a, 0.5 * (77 - 2), 1e-12);	/* ranks 2 and 77 */
	CHECK_NEAR(res.mean_b, 41.5, 1e-12);
	/* |b-a| - 2 is -1 or 1; 40 of 80 exceed 0.5 */
	CHECK_NEAR(res.p_value, 41.0 / 81, 1e-12);
	CHECK(cq_bootstrap_summarize(a, b, N, 40.0, 41.5, &res));
	CHECK_NEAR(res.p_value, 1.0 / 81, 1e-12);
}

/* Bad arguments are errors with a category and a message, never a crash. */
TEST(metrics_bad_arguments)
{
	cq_bleu_options b;
	cq_chrf_options c;
	cq_bleu_stats s;
	int64_t		st[CQ_CHRF_MAX_STATS];
	cq_metrics_work w = {0};
	cq_error	err;
	const char *ref = "x";
	size_t		rl = 1;
	int32_t		rows[4] = {1, 2, 3, 4};
	double		sa,
				sb;
	cq_bootstrap_result res;

	cq_bleu_options_init(&b);
	CHECK_INT_EQ(cq_bleu_sentence_stats(&b, "x", 1, &ref, &rl, 0, &w, &s, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "references") != NULL);
	b.max_order = CQ_BLEU_MAX_ORDER + 1;
	CHECK_INT_EQ(cq_bleu_sentence_stats(&b, "x", 1, &ref, &rl, 1, &w, &s, &err), CQ_EINVAL);
	cq_bleu_options_init(&b);
	rl = CQ_METRICS_MAX_TEXT + 1;	/* the length is checked before the text is read */
	CHECK_INT_EQ(cq_bleu_sentence_stats(&b, "x", 1, &ref, &rl, 1, &w, &s, &err), CQ_ELIMIT);
	rl = 1;
	cq_chrf_options_init(&c);
	c.word_order = CQ_CHRF_MAX_WORD_ORDER + 1;
	CHECK_INT_EQ(cq_chrf_sentence_stats(&c, "x", 1, &ref, &rl, 1, &w, st, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_bootstrap_paired(rows, 1, 4, 0, 1, cq_bleu_score_row, &b, NULL, NULL,
									 &sa, &sb, &res, &err), CQ_EINVAL);
	CHECK_INT_EQ(cq_bootstrap_paired(rows, 0, 4, 10, 1, cq_bleu_score_row, &b, NULL, NULL,
									 &sa, &sb, &res, &err), CQ_EINVAL);
	cq_metrics_work_free(&w);
}

/* The ASCII fast path agrees with the generated tables. */
TEST(metrics_unicode_ascii_table)
{
	for (uint32_t c = 0; c < 128; c++)
	{
		CHECK_INT_EQ(cq_uc_class(c), cq_uc_class_table(c));
		CHECK_INT_EQ(cq_uc_isspace(c), cq_uc_isspace_table(c));
	}
}

/* Packed and generic n-gram counting agree (random sequences over small
 * and large alphabets, several orders and references). */
TEST(metrics_ngram_packed_equals_generic)
{
	cq_ngram_work w1 = {0},
				w2 = {0};
	uint32_t	seq[3][60];
	uint64_t	x = 88172645463325252ull;

	w2.force_generic = true;
	for (int trial = 0; trial < 300; trial++)
	{
		uint32_t	alphabet = trial % 3 == 0 ? 3 : trial % 3 == 1 ? 40 : 0x10FFFF;
		size_t		len[3];
		const uint32_t *refs[2] = {seq[1], seq[2]};
		int			order = 1 + trial % 8;
		int64_t		m1[CQ_NGRAM_MAX_ORDER],
					m2[CQ_NGRAM_MAX_ORDER];

		for (int s = 0; s < 3; s++)
		{
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			len[s] = x % 60;
			for (size_t i = 0; i < len[s]; i++)
			{
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				seq[s][i] = (uint32_t) (x % alphabet);
			}
		}
		CHECK(cq_ngram_matches(seq[0], len[0], refs, len + 1, 1 + trial % 2, order, m1, &w1));
		CHECK(cq_ngram_matches(seq[0], len[0], refs, len + 1, 1 + trial % 2, order, m2, &w2));
		CHECK(memcmp(m1, m2, order * sizeof(int64_t)) == 0);
	}
	cq_ngram_work_free(&w1);
	cq_ngram_work_free(&w2);
}
