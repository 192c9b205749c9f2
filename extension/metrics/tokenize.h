/*
 * sacreBLEU's tokenizers on code points: 13a (mteval-v13a, WMT's default),
 * intl (mteval-v14 --international-tokenization), char and none, each
 * followed by the whitespace split BLEU applies to its output.
 */
#ifndef CQ_METRICS_TOKENIZE_H
#define CQ_METRICS_TOKENIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cptext.h"

typedef enum cq_tokenizer
{
	CQ_TOK_13A,
	CQ_TOK_INTL,
	CQ_TOK_CHAR,
	CQ_TOK_NONE
} cq_tokenizer;

#define CQ_TOK_COUNT 4

/* A token: v[off .. off+len) of the string it was cut from. */
typedef struct cq_span
{
	uint32_t	off,
				len;
} cq_span;

typedef struct cq_spans
{
	cq_span    *v;
	size_t		n,
				cap;
} cq_spans;

void		cq_spans_free(cq_spans *s);
bool		cq_spans_push(cq_spans *s, cq_span sp);

/* The name sacreBLEU's signature uses ("13a", "intl", "char", "none"). */
const char *cq_tokenizer_name(cq_tokenizer t);

/* By that name; false if there is none. */
bool		cq_tokenizer_from_name(const char *name, cq_tokenizer *t);

/*
 * Tokenize in[0..n) into out (replacing its contents): the string sacreBLEU's
 * tokenizer returns, before its own final ' '.join(line.split()).  tmp is
 * scratch.
 */
bool		cq_tokenize(cq_tokenizer t, const uint32_t *in, size_t n,
						cq_cpbuf *out, cq_cpbuf *tmp);

/* str.split(): the maximal runs of non-whitespace (cq_uc_isspace) of s. */
bool		cq_split_whitespace(const uint32_t *s, size_t n, cq_spans *out);

/* Length of s[0..n) once trailing whitespace is dropped (str.rstrip()). */
size_t		cq_rstrip_len(const uint32_t *s, size_t n);

#endif
