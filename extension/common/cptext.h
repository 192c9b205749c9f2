/*
 * Code-point text: growable arrays of Unicode code points (and of 32-bit
 * items in general), UTF-8 decoded into them and encoded back, and the
 * whitespace classes of Python's str.  The metrics, the rule filters and
 * WordPiece work on code points, as sacreBLEU, OpusFilter and Hugging Face's
 * tokenizers work on Python str, so that "a character" means the same thing
 * here and there.
 *
 * Invalid bytes: each maximal ill-formed subpart decodes to one U+FFFD, the
 * one rule of common/utf8.h (Python's bytes.decode('utf-8', 'replace')), so
 * any input decodes.  Text from PostgreSQL is valid UTF-8 already.
 */
#ifndef CQ_COMMON_CPTEXT_H
#define CQ_COMMON_CPTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cq_cpbuf
{
	uint32_t   *v;
	size_t		n,
				cap;
} cq_cpbuf;

void		cq_cpbuf_free(cq_cpbuf *b);

/* Room for at least n items in total; false when out of memory. */
bool		cq_cpbuf_reserve(cq_cpbuf *b, size_t n);

/* Append one item; the caller reserved room. */
static inline void
cq_cpbuf_put(cq_cpbuf *b, uint32_t c)
{
	b->v[b->n++] = c;
}

/*
 * Decode UTF-8 into b (replacing its contents), each maximal ill-formed
 * subpart as one U+FFFD; false when out of memory.
 */
bool		cq_cpbuf_from_utf8(cq_cpbuf *b, const char *s, size_t len);

/* Encode v[0..n) as UTF-8 into a new NUL-ended string (cq_alloc); NULL on OOM. */
char	   *cq_utf8_from_cps(const uint32_t *v, size_t n, size_t *len_out);

/*
 * Python's str.isspace(), which str.split() splits on: Unicode White_Space
 * plus U+001C..U+001F (bidirectional class B or S).
 */
bool		cq_py_isspace(int32_t c);

/* Unicode White_Space: `\s` of the `regex` module (and its `\S`). */
bool		cq_uni_isspace(int32_t c);

#endif
