/*
 * The shared byte helpers of common/: UTF-8 (utf8.h, with the code-point
 * text of cptext.h) and LEB128 varints (varint.h).
 */
#include "unit.h"

#include <stdint.h>

#include <unicode/utf8.h>

#include "common/cptext.h"
#include "common/utf8.h"
#include "common/varint.h"

/* The UTF-8 bytes of cp by the textbook layout, with no check (a surrogate too). */
static size_t
encode(uint32_t cp, uint8_t *b)
{
	if (cp < 0x80)
		return b[0] = (uint8_t) cp, 1;
	if (cp < 0x800)
		return b[0] = 0xC0 | cp >> 6, b[1] = 0x80 | (cp & 0x3F), 2;
	if (cp < 0x10000)
		return b[0] = 0xE0 | cp >> 12, b[1] = 0x80 | (cp >> 6 & 0x3F),
			b[2] = 0x80 | (cp & 0x3F), 3;
	return b[0] = 0xF0 | cp >> 18, b[1] = 0x80 | (cp >> 12 & 0x3F),
		b[2] = 0x80 | (cp >> 6 & 0x3F), b[3] = 0x80 | (cp & 0x3F), 4;
}

/*
 * The reference answer for s[0..n): take the length the lead byte's high
 * bits announce and the value its payload bits hold, then accept only if the
 * bytes are there, every continuation byte is 10xxxxxx, the value re-encodes
 * to exactly these bytes (no overlong form) and is a scalar value.
 */
static size_t
reference(const uint8_t *s, size_t n, uint32_t *cp)
{
	size_t		len = s[0] < 0x80 ? 1 : s[0] >> 5 == 6 ? 2 : s[0] >> 4 == 14 ? 3 : s[0] >> 3 == 30 ? 4 : 0;
	uint32_t	v = len == 1 ? s[0] : s[0] & (0x7F >> len);
	uint8_t		again[4];

	if (len == 0 || n < len)
		return 0;
	for (size_t i = 1; i < len; i++)
	{
		if (s[i] >> 6 != 2)
			return 0;
		v = v << 6 | (s[i] & 0x3F);
	}
	if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) ||
		encode(v, again) != len || memcmp(again, s, len) != 0)
		return 0;
	*cp = v;
	return len;
}

/* Every code point, and every byte string of up to three bytes, against the reference. */
TEST(utf8_decode_matches_the_reference_exhaustively)
{
	uint8_t		b[4];
	uint32_t	cp,
				want;
	long		bad = 0;

	for (uint32_t c = 0; c <= 0x10FFFF; c++)
	{
		size_t		n = encode(c, b);
		bool		scalar = c < 0xD800 || c > 0xDFFF;

		cp = 0xFFFFFFFF;
		bad += cq_utf8_decode(b, n, &cp) != (scalar ? n : 0) || (scalar && cp != c);
		/* cut short, the same bytes are no sequence */
		bad += n > 1 && cq_utf8_decode(b, n - 1, NULL) != 0;
	}
	for (uint32_t x = 0; x < 1u << 24; x++)
	{
		b[0] = (uint8_t) (x >> 16);
		b[1] = (uint8_t) (x >> 8);
		b[2] = (uint8_t) x;
		for (size_t n = 1; n <= 3; n++)
		{
			size_t		got = cq_utf8_decode(b, n, &cp),
						ref = reference(b, n, &want);

			bad += got != ref || (ref && cp != want);
		}
	}
	CHECK_INT_EQ(bad, 0);
}

TEST(utf8_decode_and_valid_by_hand)
{
	static const struct
	{
		const char *s;
		bool		valid;
	}			cases[] = {
		{"", true}, {"abc", true}, {"\xc3\xa9t\xc3\xa9", true}, {"\xe2\x82\xac", true},
		{"\xf0\x9f\x98\x80", true}, {"\xf4\x8f\xbf\xbf", true}, {"\xed\x9f\xbf", true},
		{"\xee\x80\x80", true},
		{"\xc0\xaf", false},	/* overlong '/' */
		{"\xc1\xbf", false}, {"\xe0\x80\xaf", false}, {"\xe0\x9f\xbf", false},
		{"\xed\xa0\x80", false},	/* a surrogate */
		{"\xf0\x8f\xbf\xbf", false}, {"\xf4\x90\x80\x80", false}, {"\xf5\x80\x80\x80", false},
		{"\x80", false}, {"a\xc3", false}, {"\xe2\x82", false}, {"\xe2\x28\xa1", false},
		{"\xff", false},
	};
	uint32_t	cp;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (cq_utf8_valid((const uint8_t *) cases[i].s, strlen(cases[i].s)) != cases[i].valid)
			unit_fail(__FILE__, __LINE__, "case %zu: cq_utf8_valid is %d", i, !cases[i].valid);
	/* NUL is a sequence, but not part of a valid string */
	CHECK_INT_EQ(cq_utf8_decode((const uint8_t *) "\0", 1, &cp), 1);
	CHECK_INT_EQ(cp, 0);
	CHECK(!cq_utf8_valid((const uint8_t *) "a\0b", 3));
	CHECK_INT_EQ(cq_utf8_decode((const uint8_t *) "\xf4\x8f\xbf\xbf", 4, &cp), 4);
	CHECK_INT_EQ(cp, 0x10FFFF);
	/* the length bounds the read: the lead byte alone is not a sequence */
	CHECK_INT_EQ(cq_utf8_decode((const uint8_t *) "\xc3\xa9", 1, NULL), 0);
}

/*
 * Ill-formed input, one U+FFFD per maximal subpart (Unicode 15, 3.9).  Each
 * expectation is worked by hand from the rule (a lead byte, then as many of
 * the following bytes as can still begin a well-formed sequence: E0 takes
 * A0..BF second, ED 80..9F, F0 90..BF, F4 80..8F, the rest 80..BF) and is
 * what Python's bytes.decode('utf-8', 'replace') gives for the same bytes.
 */
TEST(utf8_ill_formed_input_one_replacement_per_maximal_subpart)
{
	static const struct
	{
		const char *s;
		size_t		first;		/* bytes the first cq_utf8_next consumes */
		uint32_t	cps[10];	/* the code points, ending at a 0xFFFFFFFF */
	}			cases[] = {
		/* lone continuation bytes: one each */
		{"a\x80" "b", 1, {'a', 0xFFFD, 'b', ~0u}},
		{"\x80\xbf", 1, {0xFFFD, 0xFFFD, ~0u}},
		/* truncated sequences: one for the whole cut sequence */
		{"\xc3", 1, {0xFFFD, ~0u}},
		{"\xe2\x82", 2, {0xFFFD, ~0u}},
		{"\xe2\x82" "a", 2, {0xFFFD, 'a', ~0u}},
		{"\xe0\xa0", 2, {0xFFFD, ~0u}},
		{"\xf0\x9f\x98", 3, {0xFFFD, ~0u}},
		{"\xf0\x9f\x98 ", 3, {0xFFFD, ' ', ~0u}},
		{"\xf4\x8f\xbf", 3, {0xFFFD, ~0u}},
		{"\xe2(\xa1", 1, {0xFFFD, '(', 0xFFFD, ~0u}},
		/* overlong forms: the second byte is out of range, one per byte */
		{"\xc0\xaf", 1, {0xFFFD, 0xFFFD, ~0u}},
		{"\xc1\xbf", 1, {0xFFFD, 0xFFFD, ~0u}},
		{"\xe0\x80\xaf", 1, {0xFFFD, 0xFFFD, 0xFFFD, ~0u}},
		{"\xe0\x9f\xbf", 1, {0xFFFD, 0xFFFD, 0xFFFD, ~0u}},
		{"\xf0\x80\x80\xaf", 1, {0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD, ~0u}},
		{"\xf0\x8f\xbf\xbf", 1, {0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD, ~0u}},
		/* surrogates: one per byte; U+D7FF just below them is well-formed */
		{"\xed\xa0\x80", 1, {0xFFFD, 0xFFFD, 0xFFFD, ~0u}},
		{"\xed\xbf\xbf", 1, {0xFFFD, 0xFFFD, 0xFFFD, ~0u}},
		{"\xed\x9f\xbf", 3, {0xD7FF, ~0u}},
		/* above U+10FFFF: one per byte; U+10FFFF itself is well-formed */
		{"\xf4\x90\x80\x80", 1, {0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD, ~0u}},
		{"\xf5\x80", 1, {0xFFFD, 0xFFFD, ~0u}},
		{"\xf4\x8f\xbf\xbf", 4, {0x10FFFF, ~0u}},
		{"\xff\xfe", 1, {0xFFFD, 0xFFFD, ~0u}},
		/* well-formed, U+FFFD itself and NUL among them */
		{"\xc3\xa9\xe2\x82\xac", 2, {0xE9, 0x20AC, ~0u}},
		{"\xef\xbf\xbd", 3, {0xFFFD, ~0u}},
		{"\xf0\x9f\x98\x80", 4, {0x1F600, ~0u}},
		/* Unicode 15, Table 3-8's example */
		{"a\xf1\x80\x80\xe1\x80\xc2" "b\x80" "c\x80\xbf" "d", 1,
		{'a', 0xFFFD, 0xFFFD, 0xFFFD, 'b', 0xFFFD, 'c', 0xFFFD, 0xFFFD, 'd'}},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		const uint8_t *s = (const uint8_t *) cases[i].s;
		size_t		len = strlen(cases[i].s),
					want = 0,
					got;
		uint32_t	out[16],
					cp;
		bool		ok = true;

		while (want < 10 && cases[i].cps[want] != ~0u)
			want++;
		got = cq_utf8_to_cps(s, len, out);
		for (size_t k = 0; k < got && k < want; k++)
			ok = ok && out[k] == cases[i].cps[k];
		if (got != want || !ok)
			unit_fail(__FILE__, __LINE__, "case %zu: %zu code points, want %zu%s", i, got, want,
					  ok ? "" : " (some differ)");
		/* the first step, and the strict reading: valid exactly when no U+FFFD came of a subpart */
		if (cq_utf8_next(s, len, &cp) != cases[i].first)
			unit_fail(__FILE__, __LINE__, "case %zu: the first sequence has %zu bytes, want %zu",
					  i, cq_utf8_next(s, len, &cp), cases[i].first);
		CHECK_INT_EQ(cp == CQ_UTF8_ILL, cq_utf8_decode(s, len, NULL) == 0);
	}
	/* the code-point text decodes by the same rule */
	{
		cq_cpbuf	b = {0};

		CHECK(cq_cpbuf_from_utf8(&b, "\xe2\x82" "a\xc0\xaf", 5));
		CHECK_INT_EQ(b.n, 4);
		CHECK_INT_EQ(b.v[0], 0xFFFD);
		CHECK_INT_EQ(b.v[1], 'a');
		CHECK_INT_EQ(b.v[2], 0xFFFD);
		CHECK_INT_EQ(b.v[3], 0xFFFD);
		cq_cpbuf_free(&b);
	}
}

/*
 * The step cq_utf8_next takes against ICU's U8_NEXT_OR_FFFD (maximal
 * subparts since ICU 60), an implementation written apart from this one:
 * every string of one to three bytes, and four-byte strings from each lead
 * byte F0..F4 with the boundary values of the continuation ranges after it.
 */
TEST(utf8_next_matches_icu_u8_next_or_fffd)
{
	static const uint8_t edge[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF,
	0xC0, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF};
	const size_t ne = sizeof(edge);
	uint8_t		b[4];
	long		bad = 0,
				tried = 0;

#define STEP_AGAINST_ICU(n) \
	do { \
		int32_t		i_ = 0; \
		UChar32		want_; \
		uint32_t	cp_; \
		size_t		len_ = cq_utf8_next(b, (n), &cp_); \
		U8_NEXT_OR_FFFD(b, i_, (int32_t) (n), want_); \
		if (cp_ == CQ_UTF8_ILL) \
			cp_ = 0xFFFD; \
		bad += len_ != (size_t) i_ || cp_ != (uint32_t) want_; \
		tried++; \
	} while (0)

	for (uint32_t x = 0; x < 1u << 24; x++)
	{
		b[0] = (uint8_t) (x >> 16);
		b[1] = (uint8_t) (x >> 8);
		b[2] = (uint8_t) x;
		for (size_t n = 1; n <= 3; n++)
			STEP_AGAINST_ICU(n);
	}
	for (uint32_t lead = 0xF0; lead <= 0xF4; lead++)
		for (size_t i = 0; i < ne; i++)
			for (size_t j = 0; j < ne; j++)
				for (size_t k = 0; k < ne; k++)
				{
					b[0] = (uint8_t) lead;
					b[1] = edge[i];
					b[2] = edge[j];
					b[3] = edge[k];
					STEP_AGAINST_ICU(4);
				}
#undef STEP_AGAINST_ICU
	CHECK_INT_EQ(bad, 0);
	CHECK_INT_EQ(tried, 3 * (1L << 24) + 5 * 19 * 19 * 19);
}

/* cq_utf8_put writes every scalar value as the textbook layout, and decodes back. */
TEST(utf8_put_round_trips)
{
	uint8_t		b[4],
				want[4];
	long		bad = 0;

	for (uint32_t c = 0; c <= 0x10FFFF; c++)
	{
		size_t		n;
		uint32_t	cp;

		if (c >= 0xD800 && c <= 0xDFFF)
			continue;
		n = cq_utf8_put(b, c);
		bad += n != encode(c, want) || memcmp(b, want, n) != 0 ||
			cq_utf8_next(b, n, &cp) != n || cp != c;
	}
	CHECK_INT_EQ(bad, 0);
}

TEST(varint_round_trip_and_sizes)
{
	static const uint64_t values[] = {0, 1, 127, 128, 300, 16383, 16384, 1ull << 32,
	(1ull << 63) - 1, 1ull << 63, UINT64_MAX};
	static const size_t sizes[] = {1, 1, 1, 2, 2, 2, 3, 5, 9, 10, 10};
	uint8_t		buf[16];

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
	{
		uint8_t    *end = cq_varint_put(buf, values[i]);
		const uint8_t *p = buf;
		uint64_t	v = 0;

		CHECK_INT_EQ(end - buf, sizes[i]);
		CHECK_INT_EQ(cq_varint_size(values[i]), sizes[i]);
		CHECK(cq_varint_get(&p, end, &v));
		CHECK(p == end);
		CHECK(v == values[i]);
	}
	/* 300 is 0xAC 0x02, low group first */
	cq_varint_put(buf, 300);
	CHECK(buf[0] == 0xAC && buf[1] == 0x02);
}

TEST(varint_rejects_truncated_overlong_and_too_large)
{
	static const struct
	{
		const char *b;
		size_t		n;
	}			bad[] = {
		{"", 0},
		{"\x80", 1},			/* truncated */
		{"\xac", 1},
		{"\x80\x00", 2},		/* overlong zero */
		{"\xff\x00", 2},		/* overlong 127 */
		{"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10},	/* 2^64 */
		{"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x80\x01", 11},	/* eleven bytes */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		const uint8_t *p = (const uint8_t *) bad[i].b;
		uint64_t	v = 42;

		if (cq_varint_get(&p, p + bad[i].n, &v))
			unit_fail(__FILE__, __LINE__, "case %zu accepted", i);
		CHECK(p == (const uint8_t *) bad[i].b && v == 42);
	}
	{
		const uint8_t *p = (const uint8_t *) "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01";
		uint64_t	v;

		CHECK(cq_varint_get(&p, p + 10, &v) && v == UINT64_MAX);
	}
}
