/*
 * Duplicate keys: OpusFilter's remove_duplicates hash of a pair.
 *
 * The chosen sides (both: source then target; or one of them) are
 * normalised, joined with '\n', encoded as UTF-16LE and hashed with XXH64,
 * seed 0 -- OpusFilter's SegmentHasher with hash xxh64, so the key equals
 * its xxh64_intdigest (as a signed 64-bit integer).  Normalisation, in
 * OpusFilter's order: letters_only removes everything but letters (general
 * category L*), lowercase applies Unicode full lowercasing (ICU's root
 * locale, as Python's str.lower(), final sigma included), then each '\n'
 * becomes the two characters "\n".
 */
#ifndef CQ_FILTERS_DEDUP_H
#define CQ_FILTERS_DEDUP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "filters/utext.h"

typedef enum cq_dedup_mode
{
	CQ_DEDUP_EXACT,				/* the text as it is */
	CQ_DEDUP_LOWERCASE,			/* lowercase */
	CQ_DEDUP_LETTERS,			/* letters_only */
	CQ_DEDUP_NEAR				/* letters_only and lowercase */
} cq_dedup_mode;

typedef enum cq_dedup_side
{
	CQ_SIDE_BOTH,				/* compare: all */
	CQ_SIDE_SRC,				/* compare: [0] */
	CQ_SIDE_TGT					/* compare: [1] */
} cq_dedup_side;

/* The key of (src, tgt); the side not used may be NULL. */
cq_code		cq_dedup_key(const cq_utext *src, const cq_utext *tgt, cq_dedup_mode mode,
						 cq_dedup_side side, int64_t *key, cq_error *err);

/*
 * Is tgt a copy of src: corpq's one definition of an untranslated pair
 * (curate()'s copy step through corpq.is_copy(), the embedding_cosine
 * filter's reject_copies).  The sides' near keys (CQ_DEDUP_NEAR: letters
 * only, lower case) are equal, and src's is not the key of an empty side:
 * two sides without a letter ("42", "...") are not a copy.
 */
cq_code		cq_dedup_is_copy(const cq_utext *src, const cq_utext *tgt, bool *copy,
							 cq_error *err);

#endif
