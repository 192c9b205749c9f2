/*
 * The check every SentencePiece model passes before libsentencepiece sees a
 * byte of it (text/spm.h calls it first thing in cq_spm_load; the program
 * corpq-spm-check runs it for the converter).  A model is untrusted input in
 * the server process: the library trusts its ModelProto, so a hostile one
 * crashed the backend (issue 41: a 300 KB piece overflows the stack of its
 * recursive trie builder; a normalizer charsmap whose trie or strings point
 * outside the blob is read out of bounds).  This reads the protobuf wire
 * format itself, with bounds, and refuses -- naming the field -- anything the
 * library would index unchecked at load, encode or decode:
 *
 *   - the framing: every tag, varint and length inside its message; no
 *     groups; the fields below with their declared wire types;
 *   - pieces: 1 .. CQ_SPM_MAX_PIECES of them, each piece string non-empty,
 *     at most CQ_SPM_MAX_PIECE_BYTES bytes, UTF-8 without NUL, its type one
 *     of the enum's; user-defined pieces nest at most
 *     CQ_SPM_MAX_USER_NESTING deep (the prefix matcher's result array);
 *   - trainer_spec: model_type one of the four, unk_surface (decoder output)
 *     short UTF-8;
 *   - the normalizer's and the denormalizer's precompiled_charsmap: every
 *     array access the library's trie search can make, for any input, stays
 *     inside the trie; every string it can select is NUL-terminated inside
 *     the blob, short UTF-8; no cycles; at most CQ_SPM_MAX_TRIE_RESULTS
 *     matches on one input (the library's stack array);
 *   - self_test_data (run at load): at most CQ_SPM_MAX_SELF_TESTS samples.
 *
 * Protobuf merges repeated occurrences of a message field and keeps the last
 * value of a scalar; the check sees each spec as the library will.  The
 * field numbers are those of sentencepiece_model.proto 0.1.97 (Debian 12).
 */
#ifndef CQ_TEXT_SPM_CHECK_H
#define CQ_TEXT_SPM_CHECK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C"
{
#endif

#include "common/error.h"

/* spm_train allows 256k-piece vocabularies easily; 1M is 4x the largest in use. */
#define CQ_SPM_MAX_PIECES (1 << 20)
/* spm_train's longest piece: max_sentencepiece_length <= 512 characters. */
#define CQ_SPM_MAX_PIECE_BYTES 2048
/* normalizer.cc's PrefixMatcher keeps 64 results per position. */
#define CQ_SPM_MAX_USER_NESTING 64
/* normalizer.h's kMaxTrieResultsSize. */
#define CQ_SPM_MAX_TRIE_RESULTS 32
/* nmt_nfkc's charsmap is 232 KB; 4 MB bounds the check's work. */
#define CQ_SPM_MAX_CHARSMAP_BYTES (4 << 20)
/* Longest key of a charsmap (nmt_nfkc: 9 bytes). */
#define CQ_SPM_MAX_TRIE_DEPTH 256
/* Longest replacement string (nmt_nfkc: 33 bytes, U+FDFA). */
#define CQ_SPM_MAX_NORMALIZED_BYTES 256
/* unk_surface is written for every unknown piece decoded (default 5 bytes). */
#define CQ_SPM_MAX_UNK_SURFACE_BYTES 256
/* spm_train's self_test_sample_size is at most 1000. */
#define CQ_SPM_MAX_SELF_TESTS 1000

/*
 * CQ_OK when model[0..len) is a ModelProto the library may load; CQ_EFORMAT
 * with a message naming the field otherwise, CQ_ENOMEM.  Polls interrupts
 * (common/interrupt.h); allocates through common/mem.h and frees it all.
 */
cq_code		cq_spm_check(const void *model, size_t len, cq_error *err);

#ifdef __cplusplus
}
#endif

#endif
