/*
 * A token vocabulary with fairseq's reserved ids: <s> = 0, <pad> = 1,
 * </s> = 2, <unk> = 3, then tokens by descending count, ties by ascending
 * token bytes.  Token id = entry index of the map.
 */
#ifndef CQ_VOCABULARY_H
#define CQ_VOCABULARY_H

#include <stdint.h>

#include "text/strmap.h"
#include "common/error.h"
#include "text/words.h"

#define CQ_VOCAB_BOS 0
#define CQ_VOCAB_PAD 1
#define CQ_VOCAB_EOS 2
#define CQ_VOCAB_UNK 3
#define CQ_VOCAB_N_SPECIAL 4

extern const char *const cq_vocabulary_specials[CQ_VOCAB_N_SPECIAL];

typedef struct cq_vocabulary
{
	cq_strmap	map;			/* token -> id (entry index) */
} cq_vocabulary;

/* An empty vocabulary (no specials): for loading tokens in id order; CQ_ENOMEM. */
cq_code		cq_vocabulary_init(cq_vocabulary *v);
void		cq_vocabulary_free(cq_vocabulary *v);

/*
 * Append a token with the next id; an error if it is already present (a
 * vocabulary holds each token once).
 */
cq_code		cq_vocabulary_add(cq_vocabulary *v, const char *tok, size_t len, cq_error *err);

static inline int32_t
cq_vocabulary_size(const cq_vocabulary *v)
{
	return (int32_t) v->map.n;
}

/*
 * Build from token counts (vals): the four specials, then the tokens with
 * count >= min_count, most frequent first, at most max_size ids in all
 * (max_size >= 5).  Tokens spelled like a special are skipped.  *v
 * uninitialised.
 */
cq_code		cq_vocabulary_build(cq_vocabulary *v, const cq_strmap *counts,
								int32_t max_size, int64_t min_count, cq_error *err);

/* Id of a token, CQ_VOCAB_UNK when absent. */
int32_t		cq_vocabulary_id(const cq_vocabulary *v, const char *tok, size_t len);

/* ids[i] = id of token i (ids has room for t->n). */
void		cq_vocabulary_encode(const cq_vocabulary *v, const cq_tokens *t, int32_t *ids);

/*
 * Detokenised text of ids: the tokens joined by spaces, then the BPE
 * segmentation undone with cq_bpe_undo ("lo@@ w" -> "low"); <s>, <pad> and
 * </s> are skipped, <unk> is written as "<unk>".  CQ_ERANGE for an id
 * outside the vocabulary (the message gives its position).  The result is
 * cq_alloc'd.
 */
cq_code		cq_vocabulary_decode(const cq_vocabulary *v, const int32_t *ids, size_t n,
								 char **out, size_t *out_len, cq_error *err);

/*
 * The tokens of ids joined by single spaces, the segmentation kept (<s>,
 * <pad>, </s> skipped): what cq_vocabulary_decode undoes BPE on, and what a
 * SentencePiece decoder (text/spm.h) takes.  Errors and result as above.
 */
cq_code		cq_vocabulary_join(const cq_vocabulary *v, const int32_t *ids, size_t n,
							   char **out, size_t *out_len, cq_error *err);

/*
 * A relocatable vocabulary (vocab_arena.c): the token table (the map's slot
 * table, key offsets, lengths and hashes, and the keys' bytes) laid out in
 * one arena whose references are offsets from its start, so that processes
 * mapping it at different addresses (a shared memory segment) each look
 * tokens up in place.  The arena's start must be 8-byte aligned.
 *
 * cq_vocabulary_arena_bytes: the exact bytes of v's arena.
 * cq_vocabulary_flatten: write v's arena into dst (size bytes, at least
 * cq_vocabulary_arena_bytes(v)); v is unchanged.  CQ_EINVAL when dst is too
 * small or misaligned.
 * cq_vocabulary_attach: *v made to read the arena at base (bytes long) in
 * place: ids, tokens, encoding and decoding are those of the flattened
 * vocabulary, bit for bit.  The arena is checked first (magic, format,
 * header checksum, sections inside it, every slot and key inside its
 * table), so a truncated or damaged arena is CQ_EINVAL, never a read
 * outside it.  An attached vocabulary allocates nothing and is read-only:
 * never pass it to cq_vocabulary_add or cq_vocabulary_free (free nothing;
 * the arena must outlive it).
 */
size_t		cq_vocabulary_arena_bytes(const cq_vocabulary *v);
cq_code		cq_vocabulary_flatten(const cq_vocabulary *v, void *dst, size_t size, cq_error *err);
cq_code		cq_vocabulary_attach(const void *base, size_t bytes, cq_vocabulary *v, cq_error *err);

#endif
