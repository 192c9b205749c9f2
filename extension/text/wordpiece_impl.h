/*
 * Inside the WordPiece segmenter (text/wordpiece.h): the model's layout and
 * the character steps shared by its files -- wordpiece_vocab.c (the model
 * and its tokens), wordpiece_chars.c (the steps on code points: lower-case,
 * clean, CJK, NFC, accents), wordpiece.c (a sentence to pieces).
 */
#ifndef CQ_TEXT_WORDPIECE_IMPL_H
#define CQ_TEXT_WORDPIECE_IMPL_H

#include <unicode/utypes.h>

#include "metrics/cpbuf.h"
#include "text/strmap.h"
#include "text/wordpiece.h"

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

struct cq_wordpiece
{
	cq_wordpiece_options o;		/* special[] point into special_utf8 */
	char	   *special_utf8[CQ_WORDPIECE_N_SPECIAL];
	cq_cpbuf	special_cp[CQ_WORDPIECE_N_SPECIAL]; /* the same as code points */
	cq_strmap	vocab;			/* distinct tokens */
	uint32_t   *line;			/* [n_lines] vocab entry of line (id) i */
	size_t		n_lines;
	size_t		cap_lines;
	size_t		longest;		/* bytes of the longest token */
	/* scratch of cq_wordpiece_tokenize */
	cq_cpbuf	text;			/* the sentence (lower-cased) */
	cq_cpbuf	part;			/* a part between specials, normalised */
	cq_cpbuf	tmp;
	cq_cpbuf	word;
	cq_u16buf	u16a;
	cq_u16buf	u16b;
	char	   *utf8;			/* "##" then a word in UTF-8 */
	uint32_t   *ends;			/* byte offset in utf8 after each character */
	size_t		utf8_cap;		/* utf8 holds 2 + 4 * utf8_cap bytes */
};

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
