/*
 * Words of a UTF-8 string as byte spans: the maximal runs of code points
 * that are not Python whitespace (cq_py_isspace, the rule the length filter
 * counts words by), so a word count here equals cq_text_length(..., WORD).
 * Spans start and end on code-point boundaries: cutting a string at a
 * span's end never splits a character.  A malformed byte is one non-space
 * code point (the text reaching the cores is valid UTF-8 anyway).
 */
#ifndef CQ_CURATE_WORDS_H
#define CQ_CURATE_WORDS_H

#include <stddef.h>

#include "common/error.h"

typedef struct cq_span
{
	size_t		start;			/* byte offset of the first byte */
	size_t		end;			/* byte offset one past the last byte */
} cq_span;

typedef struct cq_words
{
	cq_span    *w;				/* n spans, in order (cq_alloc) */
	size_t		n;
} cq_words;

/* Split s[0..len) into words; free with cq_words_free.  CQ_ENOMEM. */
cq_code		cq_words_split(const char *s, size_t len, cq_words *out, cq_error *err);
void		cq_words_free(cq_words *w);

/* The number of words of s[0..len), without allocating. */
size_t		cq_words_count(const char *s, size_t len);

#endif
