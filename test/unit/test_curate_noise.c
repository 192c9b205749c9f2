/*
 * Synthetic noise (extension/curate/noise.h): the same seed gives the same
 * pairs, another seed other ones, and every noisy pair is what its label
 * says, checked against its base and partner pairs.
 */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>

#include "common/utf8.h"
#include "curate/noise.h"
#include "curate/words.h"

#define NPAIRS 60

static char srcbuf[NPAIRS][128],
			tgtbuf[NPAIRS][128];
static cq_str src[NPAIRS],
			tgt[NPAIRS];
static const char *foreign_s[] = {"Das ist ein Haus.", "Ich weiß es nicht.", "Guten Morgen, Welt."};
static cq_str foreign[3];

/* Pairs of 1 to 12 words with multi-byte characters (ñ, …, 😀) at word
 * ends, where a cut on bytes would split them; pair 7 has one word. */
static void
corpus(void)
{
	static const char *w_en[] = {"the", "añejo", "cat…", "sat", "on", "😀mat", "today"};
	static const char *w_es[] = {"el", "gato", "señor", "se", "sentó", "ñu", "hoy…"};

	for (int i = 0; i < NPAIRS; i++)
	{
		int			nw = i == 7 ? 1 : 1 + (i * 7) % 12;
		size_t		a = 0,
					b = 0;

		for (int k = 0; k < nw; k++)
		{
			a += sprintf(srcbuf[i] + a, "%s%s", k ? " " : "", w_en[(i + k) % 7]);
			b += sprintf(tgtbuf[i] + b, "%s%s", k ? (k % 3 ? " " : "  ") : "", w_es[(i * 3 + k) % 7]);
		}
		/* every pair distinct; pair 7 keeps one word on each side */
		a += sprintf(srcbuf[i] + a, i == 7 ? "%d" : " %d", i);
		b += sprintf(tgtbuf[i] + b, i == 7 ? "%d" : " %d", i);
		src[i] = (cq_str) {srcbuf[i], a};
		tgt[i] = (cq_str) {tgtbuf[i], b};
	}
	for (int i = 0; i < 3; i++)
		foreign[i] = (cq_str) {foreign_s[i], strlen(foreign_s[i])};
}

static cq_noise_options
opts(uint64_t seed)
{
	cq_noise_options o;

	cq_noise_options_default(&o);
	o.seed = seed;
	for (int t = 1; t < CQ_NOISE_NTYPES; t++)
		o.share[t] = 0.5;
	return o;
}

static void
gen(cq_noise_options o, cq_noise_set *set)
{
	cq_error	err;

	corpus();
	if (cq_noise_generate(src, tgt, NPAIRS, foreign, 3, &o, set, &err) != CQ_OK)
	{
		unit_fail(__FILE__, __LINE__, "generate: %s", err.msg);
		memset(set, 0, sizeof(*set));
	}
}

static int
str_eq(cq_str a, cq_str b)
{
	return a.len == b.len && memcmp(a.s, b.s, a.len) == 0;
}

static int
pair_eq(const cq_noise_pair *a, const cq_noise_pair *b)
{
	return a->type == b->type && a->base == b->base && a->other == b->other &&
		str_eq(a->src, b->src) && str_eq(a->tgt, b->tgt);
}

TEST(curate_noise_same_seed_same_pairs)
{
	cq_noise_set a,
				b;

	gen(opts(42), &a);
	gen(opts(42), &b);
	CHECK_INT_EQ(a.n, b.n);
	for (size_t i = 0; i < a.n && i < b.n; i++)
		if (!pair_eq(&a.pairs[i], &b.pairs[i]))
		{
			unit_fail(__FILE__, __LINE__, "pair %zu differs", i);
			break;
		}
	cq_noise_set_free(&a);
	cq_noise_set_free(&b);
}

TEST(curate_noise_other_seed_other_pairs)
{
	cq_noise_set a,
				b;
	size_t		differ = 0;

	gen(opts(42), &a);
	gen(opts(43), &b);
	CHECK_INT_EQ(a.n, b.n);
	for (size_t i = 0; i < a.n && i < b.n; i++)
		differ += !pair_eq(&a.pairs[i], &b.pairs[i]);
	/* 9 types x 30 noisy pairs; only the clean ones must agree */
	CHECK(differ > 200);
	for (size_t i = 0; i < NPAIRS; i++)
		CHECK(pair_eq(&a.pairs[i], &b.pairs[i]));
	cq_noise_set_free(&a);
	cq_noise_set_free(&b);
}

TEST(curate_noise_counts_and_clean_first)
{
	cq_noise_set s;
	size_t		count[CQ_NOISE_NTYPES] = {0};
	cq_noise_options o = opts(7);

	o.share[CQ_NOISE_TRUNCATED_SRC] = 0.1;	/* round(6.0) */
	o.share[CQ_NOISE_APPENDED_SRC] = 0;
	gen(o, &s);
	for (size_t i = 0; i < s.n; i++)
		count[s.pairs[i].type]++;
	for (size_t i = 0; i < NPAIRS; i++)
	{
		CHECK(s.pairs[i].type == CQ_NOISE_CLEAN);
		CHECK(str_eq(s.pairs[i].src, src[i]) && str_eq(s.pairs[i].tgt, tgt[i]));
	}
	CHECK_INT_EQ(count[CQ_NOISE_CLEAN], NPAIRS);
	CHECK_INT_EQ(count[CQ_NOISE_TRUNCATED_SRC], 6);
	CHECK_INT_EQ(count[CQ_NOISE_APPENDED_SRC], 0);
	CHECK_INT_EQ(count[CQ_NOISE_WRONG_LANGUAGE], 30);
	for (size_t i = 1; i < s.n; i++)
		CHECK(s.pairs[i].type >= s.pairs[i - 1].type);
	cq_noise_set_free(&s);
}

/* A truncation: a byte prefix of the side that ends a word, whose words are
 * the side's first k words with 30% <= k / w <= 70% and k < w. */
static void
check_truncated(cq_str cut, cq_str full)
{
	cq_words	wc,
				wf;

	CHECK(cut.s == full.s && cut.len < full.len);
	CHECK(cq_utf8_valid((const uint8_t *) cut.s, cut.len));
	cq_words_split(cut.s, cut.len, &wc, NULL);
	cq_words_split(full.s, full.len, &wf, NULL);
	CHECK(wc.n >= 1 && wc.n < wf.n);
	CHECK(10 * wc.n >= 3 * wf.n && 10 * wc.n <= 7 * wf.n);
	for (size_t i = 0; i < wc.n && i < wf.n; i++)
		CHECK(wc.w[i].start == wf.w[i].start && wc.w[i].end == wf.w[i].end);
	cq_words_free(&wc);
	cq_words_free(&wf);
}

/* The nearest pair (after, then before) whose target differs. */
static int64_t
nearest(int64_t b)
{
	for (int64_t d = 1; d < NPAIRS; d++)
	{
		if (b + d < NPAIRS && !str_eq(tgt[b + d], tgt[b]))
			return b + d;
		if (b - d >= 0 && !str_eq(tgt[b - d], tgt[b]))
			return b - d;
	}
	return -1;
}

static int
is_appended(cq_str got, cq_str first, cq_str second)
{
	return got.len == first.len + 1 + second.len && memcmp(got.s, first.s, first.len) == 0 &&
		got.s[first.len] == ' ' && memcmp(got.s + first.len + 1, second.s, second.len) == 0;
}

/* An edited copy: not the source, and its words are the source's words
 * (as a multiset) minus at most two. */
static void
check_edited(cq_str got, cq_str s)
{
	cq_words	wg,
				ws;
	int			used[64] = {0};

	CHECK(!str_eq(got, s));
	cq_words_split(got.s, got.len, &wg, NULL);
	cq_words_split(s.s, s.len, &ws, NULL);
	CHECK(wg.n + 2 >= ws.n && wg.n <= ws.n && wg.n >= 1);
	for (size_t i = 0; i < wg.n; i++)
	{
		size_t		j;
		cq_str		gw = {got.s + wg.w[i].start, wg.w[i].end - wg.w[i].start};

		for (j = 0; j < ws.n; j++)
			if (!used[j] && str_eq(gw, (cq_str) {s.s + ws.w[j].start, ws.w[j].end - ws.w[j].start}))
				break;
		CHECK(j < ws.n);
		if (j < ws.n)
			used[j] = 1;
	}
	cq_words_free(&wg);
	cq_words_free(&ws);
}

/* Markup on one side: the other side is the base's, and the marked side
 * with every "<...>" removed is the base's side (the fixture has no "<"),
 * with at least one tag added. */
static void
check_markup(const cq_noise_pair *p, cq_str bs, cq_str bt)
{
	int			src_marked = !str_eq(p->src, bs);
	cq_str		got = src_marked ? p->src : p->tgt,
				base = src_marked ? bs : bt;
	char		buf[512];
	size_t		n = 0;
	int			in_tag = 0,
				tags = 0;

	CHECK(src_marked != !str_eq(p->tgt, bt));
	CHECK(memchr(base.s, '<', base.len) == NULL);
	for (size_t i = 0; i < got.len && n < sizeof(buf); i++)
	{
		if (got.s[i] == '<')
			in_tag = 1, tags++;
		else if (got.s[i] == '>' && in_tag)
			in_tag = 0;
		else if (!in_tag)
			buf[n++] = got.s[i];
	}
	CHECK(tags >= 1 && !in_tag);
	CHECK(str_eq((cq_str) {buf, n}, base));
}

static void
check_pair(const cq_noise_pair *p)
{
	cq_str		bs = src[p->base],
				bt = tgt[p->base];

	switch (p->type)
	{
		case CQ_NOISE_CLEAN:
			break;
		case CQ_NOISE_MISALIGNED_NEIGHBOUR:
			CHECK(p->other == nearest(p->base));
			CHECK(str_eq(p->src, bs) && str_eq(p->tgt, tgt[p->other]) && !str_eq(p->tgt, bt));
			break;
		case CQ_NOISE_MISALIGNED_RANDOM:
			CHECK(p->other != p->base && p->other >= 0 && p->other < NPAIRS);
			CHECK(str_eq(p->src, bs) && str_eq(p->tgt, tgt[p->other]) && !str_eq(p->tgt, bt));
			break;
		case CQ_NOISE_TRUNCATED_TGT:
			CHECK(str_eq(p->src, bs));
			check_truncated(p->tgt, bt);
			break;
		case CQ_NOISE_TRUNCATED_SRC:
			CHECK(str_eq(p->tgt, bt));
			check_truncated(p->src, bs);
			break;
		case CQ_NOISE_APPENDED_TGT:
			CHECK(str_eq(p->src, bs) && is_appended(p->tgt, bt, tgt[p->other]));
			break;
		case CQ_NOISE_APPENDED_SRC:
			CHECK(str_eq(p->tgt, bt) && is_appended(p->src, bs, src[p->other]));
			break;
		case CQ_NOISE_UNTRANSLATED:
			CHECK(str_eq(p->src, bs) && str_eq(p->tgt, bs));
			break;
		case CQ_NOISE_UNTRANSLATED_EDITED:
			CHECK(str_eq(p->src, bs));
			check_edited(p->tgt, bs);
			break;
		case CQ_NOISE_WRONG_LANGUAGE:
			CHECK(p->other >= 0 && p->other < 3);
			CHECK(str_eq(p->src, bs) && str_eq(p->tgt, foreign[p->other]));
			break;
		case CQ_NOISE_MARKUP:
			check_markup(p, bs, bt);
			break;
		default:
			CHECK(!"a type outside the enum");
	}
}

TEST(curate_noise_each_type_is_what_it_says)
{
	for (uint64_t seed = 1; seed <= 5; seed++)
	{
		cq_noise_set s;

		gen(opts(seed), &s);
		for (size_t i = 0; i < s.n; i++)
		{
			CHECK(s.pairs[i].base >= 0 && s.pairs[i].base < NPAIRS);
			if (s.pairs[i].base >= 0 && s.pairs[i].base < NPAIRS)
				check_pair(&s.pairs[i]);
		}
		cq_noise_set_free(&s);
	}
}

TEST(curate_noise_types_are_independent_of_other_shares)
{
	cq_noise_set a,
				b;
	cq_noise_options o = opts(9);
	size_t		ia = 0,
				ib = 0;

	gen(o, &a);
	o.share[CQ_NOISE_MISALIGNED_NEIGHBOUR] = 0;
	o.share[CQ_NOISE_APPENDED_TGT] = 2.0;
	gen(o, &b);
	while (ia < a.n && a.pairs[ia].type != CQ_NOISE_UNTRANSLATED_EDITED)
		ia++;
	while (ib < b.n && b.pairs[ib].type != CQ_NOISE_UNTRANSLATED_EDITED)
		ib++;
	CHECK(ia < a.n && ib < b.n);
	for (int k = 0; k < 30 && ia + k < a.n && ib + k < b.n; k++)
		CHECK(pair_eq(&a.pairs[ia + k], &b.pairs[ib + k]));
	cq_noise_set_free(&a);
	cq_noise_set_free(&b);
}

TEST(curate_noise_truncation_never_cuts_a_one_word_side)
{
	cq_noise_set s;

	gen(opts(3), &s);
	for (size_t i = 0; i < s.n; i++)
		if (s.pairs[i].type == CQ_NOISE_TRUNCATED_TGT || s.pairs[i].type == CQ_NOISE_TRUNCATED_SRC)
			CHECK(s.pairs[i].base != 7);
	cq_noise_set_free(&s);
}

TEST(curate_noise_names)
{
	CHECK_STR_EQ(cq_noise_name(CQ_NOISE_TRUNCATED_TGT), "truncated_tgt");
	CHECK_INT_EQ(cq_noise_lookup("wrong_language"), CQ_NOISE_WRONG_LANGUAGE);
	CHECK_INT_EQ(cq_noise_lookup("nonsense"), -1);
	CHECK(cq_noise_name(CQ_NOISE_NTYPES) == NULL);
}

TEST(curate_noise_refuses_bad_input)
{
	cq_noise_options o = opts(1);
	cq_noise_set s;
	cq_error	err;
	cq_str		same[4] = {{"a b", 3}, {"a b", 3}, {"a b", 3}, {"a b", 3}};

	corpus();
	CHECK_INT_EQ(cq_noise_generate(src, tgt, 1, NULL, 0, &o, &s, &err), CQ_EINVAL);
	CHECK(s.n == 0 && s.pairs == NULL);
	o.share[CQ_NOISE_APPENDED_TGT] = -0.5;
	CHECK_INT_EQ(cq_noise_generate(src, tgt, NPAIRS, NULL, 0, &o, &s, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "appended_tgt") != NULL);
	o.share[CQ_NOISE_APPENDED_TGT] = NAN;
	CHECK_INT_EQ(cq_noise_generate(src, tgt, NPAIRS, NULL, 0, &o, &s, &err), CQ_EINVAL);
	/* every target equal: no misaligned pair can be made (and no leak) */
	o = opts(1);
	CHECK_INT_EQ(cq_noise_generate(src, same, 4, NULL, 0, &o, &s, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "different target") != NULL);
	/* without other-language sentences wrong_language makes nothing */
	o = opts(1);
	CHECK_INT_EQ(cq_noise_generate(src, tgt, NPAIRS, NULL, 0, &o, &s, &err), CQ_OK);
	for (size_t i = 0; i < s.n; i++)
		CHECK(s.pairs[i].type != CQ_NOISE_WRONG_LANGUAGE);
	cq_noise_set_free(&s);
}
