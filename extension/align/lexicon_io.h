/*
 * A cq_lexicon as a flat, versioned, checksummed byte string (for a bytea).
 *
 * Layout, little-endian throughout:
 *   "CQLEXICN"  u32 version (1)  u32 flags (0)  i32 src_vocab  i32 tgt_vocab
 *   then the s->t and the t->s direction, each:
 *     f64 tension  f64 p0  u8 favor_diagonal  u8 use_null  u8 probs_ready
 *     u8 0  i32 n_e  i32 n_f  u64 nnz  u64 row_off[n_e + 2]
 *     i32 col[nnz]  f64 prob[nnz]
 *   u64 FNV-1a 64 of every byte before it.
 * Loading validates everything (checksum, magic, version, shapes against the
 * vocabularies, monotone offsets, sorted in-range columns, probabilities in
 * [0, 1], parameters in range, exact length) before trusting a single size,
 * so a corrupt or hostile blob yields CQ_ECORRUPT, never a crash.
 */
#ifndef CQ_ALIGN_LEXICON_IO_H
#define CQ_ALIGN_LEXICON_IO_H

#include <stddef.h>
#include <stdint.h>

#include "align/lexicon.h"

#define CQ_LEXICON_VERSION 1

/* Bytes cq_lexicon_serialize writes, keeping entries with prob >= min_prob. */
size_t		cq_lexicon_serialized_size(const cq_lexicon *lx, double min_prob);

/* Writes into buf (cap bytes); returns the bytes written, 0 if cap is short. */
size_t		cq_lexicon_serialize(const cq_lexicon *lx, double min_prob,
								 void *buf, size_t cap);

/* Rebuilds a lexicon (tables without counts) from a serialised one. */
cq_code		cq_lexicon_deserialize(const void *buf, size_t len, cq_lexicon *out,
								   cq_error *err);

/* The trailer's checksum of len bytes (exported for tests). */
uint64_t	cq_lexicon_checksum(const void *buf, size_t len);

#endif
