/*
 * The character steps of BERT's basic tokenizer on code points (see
 * text/wordpiece.h for where each runs), with ICU's properties, case
 * mapping and normalisation.
 */
#include "text/wordpiece_chars.h"

#include <string.h>

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>

#include "common/interrupt.h"
#include "common/mem.h"

/*
 * The character loops below run over a whole text (a part between special
 * tokens can be the whole input): they poll the host every POLL_EVERY code
 * points, so a cancel reaches a long text within milliseconds.
 */
#define POLL_EVERY 65536
#define POLL_AT(i) do { if (((i) & (POLL_EVERY - 1)) == POLL_EVERY - 1) cq_poll(); } while (0)

/* Room for cap UTF-16 units (contents not kept). */
static cq_code
u16_reserve(cq_u16buf *b, int64_t cap)
{
	if (cap > INT32_MAX)
		return CQ_ELIMIT;
	if (cap > b->cap)
	{
		UChar	   *u = cq_realloc(b->u, (size_t) cap * sizeof(UChar));

		if (!u)
			return CQ_ENOMEM;
		b->u = u;
		b->cap = (int32_t) cap;
	}
	return CQ_OK;
}

/* src as UTF-16 in b. */
static cq_code
to_u16(const uint32_t *src, size_t n, cq_u16buf *b)
{
	cq_code		rc = u16_reserve(b, 2 * (int64_t) n + 1);

	if (rc != CQ_OK)
		return rc;
	b->n = 0;
	for (size_t i = 0; i < n; i++)
	{
		U16_APPEND_UNSAFE(b->u, b->n, src[i]);
		POLL_AT(i);
	}
	return CQ_OK;
}

/* u[0..n) as code points appended to dst, without Mn characters if drop_mn. */
static cq_code
from_u16(const UChar *u, int32_t n, bool drop_mn, cq_cpbuf *dst)
{
	cq_code		rc = cq_wp_room(dst, (size_t) n);

	if (rc != CQ_OK)
		return rc;
	for (int32_t i = 0; i < n;)
	{
		UChar32		c;

		U16_NEXT(u, i, n, c);
		if (!drop_mn || u_charType(c) != U_NON_SPACING_MARK)
			cq_cpbuf_put(dst, c);
		POLL_AT(i);
	}
	return CQ_OK;
}

cq_code
cq_wp_decode(const char *s, size_t len, cq_cpbuf *dst)
{
	/* the UTF-16 of the text must index with int32_t (ICU) */
	if (len >= (size_t) 1 << 30)
		return CQ_ELIMIT;
	return cq_cpbuf_from_utf8(dst, s, len) ? CQ_OK : CQ_ENOMEM;
}

/* The full lower-case mapping of c alone, appended to dst. */
static cq_code
lower_one(int32_t c, cq_cpbuf *dst, cq_u16buf *u)
{
	UChar		src[2];
	int32_t		n = 0;
	UErrorCode	st = U_ZERO_ERROR;
	int32_t		len;
	cq_code		rc;

	/* one character has no casing context (no final sigma) */
	U16_APPEND_UNSAFE(src, n, c);
	rc = u16_reserve(u, 8);
	if (rc != CQ_OK)
		return rc;
	len = u_strToLower(u->u, u->cap, src, n, "", &st);
	if (U_FAILURE(st))
		return CQ_EINTERNAL;
	return from_u16(u->u, len, false, dst);
}

cq_code
cq_wp_lower(const uint32_t *src, size_t n, cq_cpbuf *dst, cq_u16buf *u)
{
	cq_code		rc;

	for (size_t i = 0; i < n; i++)
	{
		int32_t		c = src[i];

		POLL_AT(i);
		if (c < 0x80 || !u_hasBinaryProperty(c, UCHAR_CHANGES_WHEN_LOWERCASED))
		{
			if ((rc = cq_wp_room(dst, 1)) != CQ_OK)
				return rc;
			cq_cpbuf_put(dst, c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
		}
		else if ((rc = lower_one(c, dst, u)) != CQ_OK)
			return rc;
	}
	return CQ_OK;
}

/*
 * BasicTokenizer._is_chinese_char: the CJK Unified Ideographs blocks and
 * their extensions, and the compatibility ideographs; tokenizers starts
 * extension E at U+2B920 where the Python code starts at U+2B820.
 */
static bool
is_cjk(int32_t c, cq_wordpiece_variant variant)
{
	int32_t		ext_e = variant == CQ_WORDPIECE_FAST ? 0x2B920 : 0x2B820;

	return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
		(c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
		(c >= 0x2B740 && c <= 0x2B81F) || (c >= ext_e && c <= 0x2CEAF) ||
		(c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

cq_code
cq_wp_clean(const uint32_t *src, size_t n, bool cjk, cq_wordpiece_variant variant,
			cq_cpbuf *dst)
{
	cq_code		rc;

	dst->n = 0;
	if ((rc = cq_wp_room(dst, 3 * n)) != CQ_OK)
		return rc;
	for (size_t i = 0; i < n; i++)
	{
		int32_t		c = src[i];
		bool		tnr = c == '\t' || c == '\n' || c == '\r';

		POLL_AT(i);
		if (c == 0 || c == 0xFFFD || (!tnr && (U_GET_GC_MASK(c) & U_GC_C_MASK)))
			continue;
		/*
		 * tab, newline, CR and Zs become spaces; the Python code keeps U+2028
		 * and U+2029 (str.split() splits there), tokenizers makes them
		 * spaces: the words are the same
		 */
		if (tnr || u_isUWhiteSpace(c))
			cq_cpbuf_put(dst, ' ');
		else if (cjk && is_cjk(c, variant))
		{
			cq_cpbuf_put(dst, ' ');
			cq_cpbuf_put(dst, c);
			cq_cpbuf_put(dst, ' ');
		}
		else
			cq_cpbuf_put(dst, c);
	}
	return CQ_OK;
}

/* src normalised with norm into dst (Mn dropped if drop_mn). */
static cq_code
normalize(const UNormalizer2 *norm, const uint32_t *src, size_t n, bool drop_mn,
		  cq_cpbuf *dst, cq_u16buf *a, cq_u16buf *b)
{
	UErrorCode	st = U_ZERO_ERROR;
	cq_code		rc;
	int32_t		len;
	const cq_u16buf *res = a;

	dst->n = 0;
	if ((rc = to_u16(src, n, a)) != CQ_OK)
		return rc;
	if (unorm2_quickCheck(norm, a->u, a->n, &st) != UNORM_YES)
	{
		st = U_ZERO_ERROR;
		len = unorm2_normalize(norm, a->u, a->n, b->u, b->cap, &st);
		if (st == U_BUFFER_OVERFLOW_ERROR)
		{
			if ((rc = u16_reserve(b, (int64_t) len + 1)) != CQ_OK)
				return rc;
			st = U_ZERO_ERROR;
			len = unorm2_normalize(norm, a->u, a->n, b->u, b->cap, &st);
		}
		if (U_FAILURE(st))
			return CQ_EINTERNAL;
		b->n = len;
		res = b;
	}
	else if (U_FAILURE(st))
		return CQ_EINTERNAL;
	return from_u16(res->u, res->n, drop_mn, dst);
}

cq_code
cq_wp_nfc(const uint32_t *src, size_t n, cq_cpbuf *dst, cq_u16buf *a, cq_u16buf *b)
{
	UErrorCode	st = U_ZERO_ERROR;
	const UNormalizer2 *nfc = unorm2_getNFCInstance(&st);

	if (U_FAILURE(st))
		return CQ_EINTERNAL;
	return normalize(nfc, src, n, false, dst, a, b);
}

cq_code
cq_wp_strip_accents(const uint32_t *src, size_t n, cq_cpbuf *dst, cq_u16buf *a,
					cq_u16buf *b)
{
	UErrorCode	st = U_ZERO_ERROR;
	const UNormalizer2 *nfd = unorm2_getNFDInstance(&st);

	if (U_FAILURE(st))
		return CQ_EINTERNAL;
	return normalize(nfd, src, n, true, dst, a, b);
}

bool
cq_wp_is_punct(int32_t c)
{
	if (c < 0x80)
		return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) ||
			(c >= 91 && c <= 96) || (c >= 123 && c <= 126);
	return (U_GET_GC_MASK(c) & U_GC_P_MASK) != 0;
}
