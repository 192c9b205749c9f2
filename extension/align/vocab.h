/*
 * Interns whitespace-separated tokens into dense ids 0..size-1 (first seen,
 * first numbered), for tests, benchmarks and callers without their own
 * tokeniser.  Open addressing over a byte arena.
 */
#ifndef CQ_ALIGN_VOCAB_H
#define CQ_ALIGN_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "align/progress.h"

typedef struct cq_vocab cq_vocab;

cq_code		cq_vocab_create(cq_vocab **out, cq_error *err);

/* *id = the id of the token s[0..len), added if new; CQ_ENOMEM, CQ_ELIMIT. */
cq_code		cq_vocab_intern(cq_vocab *v, const char *s, size_t len, int32_t *id,
							cq_error *err);

/* Id of an existing token, or -1. */
int32_t		cq_vocab_lookup(const cq_vocab *v, const char *s, size_t len);

/*
 * Interns the tokens of line[0..len) split on ASCII whitespace into ids
 * (cap entries), *n of them; CQ_ELIMIT when there are more than cap.
 */
cq_code		cq_vocab_intern_line(cq_vocab *v, const char *line, size_t len,
								 int32_t *ids, int cap, int *n, cq_error *err);

int32_t		cq_vocab_size(const cq_vocab *v);

/* The token of id (NUL-terminated, owned by the vocabulary), or NULL. */
const char *cq_vocab_word(const cq_vocab *v, int32_t id);

void		cq_vocab_free(cq_vocab *v);

#endif
