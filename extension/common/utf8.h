/*
 * Well-formed UTF-8 as RFC 3629 defines it (no overlong form, no surrogate,
 * nothing above U+10FFFF; Unicode 15, Table 3-7): the one decoder of the
 * cores, for JSON strings, CAV strings, SentencePiece models' pieces and the
 * metrics' code points.
 */
#ifndef CQ_COMMON_UTF8_H
#define CQ_COMMON_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Length (1..4) of the well-formed sequence at s[0..n), n >= 1, with its
 * code point in *cp (cp may be NULL); 0 if none starts there (a bad lead or
 * continuation byte, an overlong form, a surrogate, a value above U+10FFFF,
 * or a sequence cut by n).  NUL is a sequence of one byte.  Inline: the
 * metrics decode every character of their texts through it.
 */
static inline size_t
cq_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp)
{
	uint8_t		c = s[0],
				lo = 0x80,
				hi = 0xBF;		/* the second byte's range, by lead byte */
	size_t		len;
	uint32_t	v;

	if (c < 0x80)
	{
		if (cp)
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
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	v = v << 6 | (s[1] & 0x3F);
	for (size_t i = 2; i < len; i++)
	{
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3F);
	}
	if (cp)
		*cp = v;
	return len;
}

/* Whether s[0..len) is well-formed UTF-8 without NUL. */
bool		cq_utf8_valid(const uint8_t *s, size_t len);

#endif
