/*
 * UTF-8 as RFC 3629 defines it (no overlong form, no surrogate, nothing above
 * U+10FFFF; Unicode 15, Table 3-7): the one UTF-8 decoder of the cores.
 *
 * The rule for invalid bytes.  cq_utf8_next reads one sequence; when the bytes
 * at s are not a well-formed sequence it consumes their "maximal subpart"
 * (Unicode 15, section 3.9, U+FFFD Substitution of Maximal Subparts; the
 * WHATWG Encoding Standard's UTF-8 decoder): the longest prefix of a
 * well-formed sequence that starts there, or one byte if there is none.
 * Callers either refuse such input (cq_utf8_decode, cq_utf8_valid: JSON
 * strings, CAV tokens, SentencePiece pieces, WordPiece special tokens) or
 * read each subpart as one U+FFFD (cq_utf8_next_or_fffd and the code-point
 * text of common/cptext.h: metrics, filters, WordPiece, BPE's characters),
 * as Python's bytes.decode('utf-8', 'replace') and ICU's U8_NEXT_OR_FFFD do.
 * So "\xe2\x82" (a cut euro sign) is one U+FFFD, "\xc0\xaf" (an overlong
 * '/') two, "\xed\xa0\x80" (a surrogate) three, "\xf4\x90\x80\x80" (above
 * U+10FFFF) four.
 */
#ifndef CQ_COMMON_UTF8_H
#define CQ_COMMON_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What cq_utf8_next reports for an ill-formed subpart: no code point. */
#define CQ_UTF8_ILL ((uint32_t) 0x110000)
#define CQ_UTF8_REPLACEMENT ((uint32_t) 0xFFFD)

/*
 * The sequence at s[0..n), n >= 1: returns its length (1..4) with its code
 * point in *cp, or, when no well-formed sequence starts there (a bad lead or
 * continuation byte, an overlong form, a surrogate, a value above U+10FFFF,
 * or a sequence cut by n), the length of the maximal subpart (1..3) with
 * CQ_UTF8_ILL in *cp.  NUL is a sequence of one byte.  Never reads past
 * s[n - 1].  Inline: the metrics and filters decode every character of their
 * texts through it.
 */
static inline size_t
cq_utf8_next(const uint8_t *s, size_t n, uint32_t *cp)
{
	uint8_t		c = s[0],
				lo = 0x80,
				hi = 0xBF;		/* the second byte's range, by lead byte */
	size_t		len,
				i;
	uint32_t	v;

	*cp = CQ_UTF8_ILL;
	if (c < 0x80)
	{
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF)
		len = 2, v = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
	{
		len = 3, v = c & 0x0F;
		if (c == 0xE0)
			lo = 0xA0;			/* overlong */
		else if (c == 0xED)
			hi = 0x9F;			/* surrogates */
	}
	else if (c >= 0xF0 && c <= 0xF4)
	{
		len = 4, v = c & 0x07;
		if (c == 0xF0)
			lo = 0x90;			/* overlong */
		else if (c == 0xF4)
			hi = 0x8F;			/* above U+10FFFF */
	}
	else
		return 1;				/* 80..C1, F5..FF: never in a sequence's first byte */
	if (n < 2 || s[1] < lo || s[1] > hi)
		return 1;
	v = v << 6 | (s[1] & 0x3F);
	for (i = 2; i < len; i++)
	{
		if (i >= n || (s[i] & 0xC0) != 0x80)
			return i;			/* the maximal subpart s[0..i) */
		v = v << 6 | (s[i] & 0x3F);
	}
	*cp = v;
	return len;
}

/* cq_utf8_next with each ill-formed subpart read as U+FFFD. */
static inline size_t
cq_utf8_next_or_fffd(const uint8_t *s, size_t n, uint32_t *cp)
{
	size_t		len = cq_utf8_next(s, n, cp);

	if (*cp == CQ_UTF8_ILL)
		*cp = CQ_UTF8_REPLACEMENT;
	return len;
}

/*
 * Strict: the length (1..4) of the well-formed sequence at s[0..n), n >= 1,
 * with its code point in *cp (cp may be NULL); 0 if none starts there.
 */
static inline size_t
cq_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp)
{
	uint32_t	c;
	size_t		len = cq_utf8_next(s, n, &c);

	if (c == CQ_UTF8_ILL)
		return 0;
	if (cp)
		*cp = c;
	return len;
}

/* Whether s[0..len) is well-formed UTF-8 without NUL. */
bool		cq_utf8_valid(const uint8_t *s, size_t len);

/*
 * Decode s[0..len) into out (room for len code points; never more come out),
 * each ill-formed subpart as one U+FFFD; returns the number of code points.
 */
size_t		cq_utf8_to_cps(const uint8_t *s, size_t len, uint32_t *out);

/*
 * The UTF-8 of code point c (a scalar value: not a surrogate, at most
 * U+10FFFF) at out (room for 4 bytes); returns its length.
 */
static inline size_t
cq_utf8_put(uint8_t *out, uint32_t c)
{
	if (c < 0x80)
	{
		out[0] = (uint8_t) c;
		return 1;
	}
	if (c < 0x800)
	{
		out[0] = (uint8_t) (0xC0 | (c >> 6));
		out[1] = (uint8_t) (0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000)
	{
		out[0] = (uint8_t) (0xE0 | (c >> 12));
		out[1] = (uint8_t) (0x80 | ((c >> 6) & 0x3F));
		out[2] = (uint8_t) (0x80 | (c & 0x3F));
		return 3;
	}
	out[0] = (uint8_t) (0xF0 | (c >> 18));
	out[1] = (uint8_t) (0x80 | ((c >> 12) & 0x3F));
	out[2] = (uint8_t) (0x80 | ((c >> 6) & 0x3F));
	out[3] = (uint8_t) (0x80 | (c & 0x3F));
	return 4;
}

#endif
