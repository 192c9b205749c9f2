/*
 * The cosine of a sentence pair's two vectors from one encoder model
 * (embed_cosine.c): the one computation behind corpq.embedding_cosine() and
 * the embedding_cosine filter (pg/filters), so that a pair's score is the
 * same bits whichever of them asks and however many pairs share its batch.
 *
 * Like dual_xent.h it takes plain UTF-8 strings: the filters' cq_pair and
 * the model's never meet in one file.
 */
#ifndef CORPQ_EMBED_COSINE_H
#define CORPQ_EMBED_COSINE_H

#include "postgres.h"

#include "pg/score/dual_xent.h"
#include "pg/model/model.h"

/* A model session for one encoder; resolved names stick for its lifetime. */
typedef struct CorpqEmbedCosine CorpqEmbedCosine;

/* A new one, in a memory context under parent. */
CorpqEmbedCosine *corpq_embed_cosine_create(MemoryContext parent);

/* Free c and everything it loaded (the model cache keeps the model). */
void		corpq_embed_cosine_free(CorpqEmbedCosine *c);

/*
 * The cosines of n pairs into out[n] with encoder model ("m", "m@3"; with
 * pinned, "name@N" only): both sides of every pair embedded together by
 * corpq_embed_rows (the bits of corpq.embed()), and each pair's score the
 * dot product of its two unit vectors, summed in double over the dimensions
 * in order (each product of two floats is exact in double).  A pair with a
 * side longer than the model accepts is an ERROR (CORPQ_TOO_LONG_ERROR) or
 * gets null[i] = true and no score; the others null[i] = false.  Scratch
 * memory is freed on return.
 */
void		corpq_embed_cosine_score(CorpqEmbedCosine *c, const char *model, bool pinned,
									 CorpqTooLong on_too_long, const CorpqTextPair *pairs,
									 int n, double *out, bool *null);

#endif
