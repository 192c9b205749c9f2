/*
 * The WordPiece segmenter's steps on code points (text/wordpiece.h): decode,
 * lower-case, clean, CJK spacing, NFC, accents, punctuation; ICU does the
 * Unicode work.  Plain C: no PostgreSQL header.
 */
#ifndef CQ_TEXT_WORDPIECE_CHARS_H
#define CQ_TEXT_WORDPIECE_CHARS_H

#include <stdbool.h>
#include <stdint.h>

#include <unicode/utypes.h>

#include "common/error.h"
#include "common/cptext.h"
#include "text/wordpiece_variant.h"

/* Room for more code points after the n in b: CQ_OK or CQ_ENOMEM. */
static inline cq_code
cq_wp_room(cq_cpbuf *b, size_t more)
{
	return cq_cpbuf_reserve(b, b->n + more) ? CQ_OK : CQ_ENOMEM;
}

/* A growable UTF-16 buffer for ICU calls. */
typedef struct cq_u16buf
{
	UChar	   *u;
	int32_t		n;
	int32_t		cap;
} cq_u16buf;

/* ---- character steps: dst is cleared, then receives src's result ---- */

/* Decode UTF-8 (each byte of a malformed sequence as U+FFFD); CQ_ELIMIT from 1 GB. */
cq_code		cq_wp_decode(const char *s, size_t len, cq_cpbuf *dst);

/*
 * Each code point lower-cased on its own (full mapping, no context),
 * appended to dst (not cleared).
 */
cq_code		cq_wp_lower(const uint32_t *src, size_t n, cq_cpbuf *dst, cq_u16buf *u);

/* BasicTokenizer._clean_text, then spaces around CJK ideographs (if cjk). */
cq_code		cq_wp_clean(const uint32_t *src, size_t n, bool cjk,
						cq_wordpiece_variant variant, cq_cpbuf *dst);

/* NFC (unchanged when ICU's quick check says it is NFC already). */
cq_code		cq_wp_nfc(const uint32_t *src, size_t n, cq_cpbuf *dst, cq_u16buf *a,
					  cq_u16buf *b);

/* NFD, then every Mn character dropped. */
cq_code		cq_wp_strip_accents(const uint32_t *src, size_t n, cq_cpbuf *dst,
								cq_u16buf *a, cq_u16buf *b);

/* _is_punctuation: ASCII 33-47, 58-64, 91-96, 123-126, or a P* category. */
bool		cq_wp_is_punct(int32_t c);

#endif
