/*
 * Words of a sentence and the token list that segmenters produce.
 *
 * A word is a maximal run of bytes other than ASCII whitespace (space, \t,
 * \n, \v, \f, \r).  subword-nmt splits on ' ' only; corpq also splits on the
 * other ASCII whitespace so a tab never ends up inside a subword.
 */
#ifndef CQ_WORDS_H
#define CQ_WORDS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "text/strmap.h"

static inline int
cq_is_space(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/*
 * Bytes of the UTF-8 character starting at s (1..4, never past end): a
 * well-formed sequence, or a maximal ill-formed subpart (common/utf8.h),
 * which is one symbol of its own, as it is one U+FFFD in the metrics.
 */
size_t		cq_utf8_char_len(const char *s, const char *end);

/* Next word at or after *pos in text[0..len): sets *start and *wlen; 0 at the end. */
int			cq_next_word(const char *text, size_t len, size_t *pos,
						 size_t *start, size_t *wlen);

/* Count every word of text into counts (vals[i] += 1); strmap's errors. */
cq_code		cq_count_words(cq_strmap *counts, const char *text, size_t len);

/*
 * A list of NUL-terminated tokens in one buffer: token i starts at
 * buf + off[i] and has length len[i].
 */
typedef struct cq_tokens
{
	char	   *buf;
	size_t		buf_len;
	size_t		buf_cap;
	size_t	   *off;
	uint32_t   *len;
	size_t		n;
	size_t		n_cap;
} cq_tokens;

void		cq_tokens_init(cq_tokens *t);
void		cq_tokens_free(cq_tokens *t);
void		cq_tokens_clear(cq_tokens *t);

/* Append the bytes s[0..n) followed by suffix (may be NULL); CQ_ENOMEM. */
cq_code		cq_tokens_push(cq_tokens *t, const char *s, size_t n,
						   const char *suffix);

static inline const char *
cq_tokens_get(const cq_tokens *t, size_t i, size_t *len)
{
	if (len)
		*len = t->len[i];
	return t->buf + t->off[i];
}

/* Count every token into counts (vals[i] += 1); strmap's errors. */
cq_code		cq_count_tokens(cq_strmap *counts, const cq_tokens *t);

/* Whitespace segmentation: the words of text, unchanged; CQ_ENOMEM. */
cq_code		cq_whitespace_tokenize(const char *text, size_t len, cq_tokens *out);

/*
 * The tokens joined by single spaces into a new NUL-terminated string
 * (cq_alloc); *out_len gets its length.  NULL on ENOMEM.
 */
char	   *cq_tokens_join(const cq_tokens *t, size_t *out_len);

#endif
