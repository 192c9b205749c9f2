/*
 * Synthetic noise: labelled negatives made from clean pairs, the training
 * data of the pair-quality classifier (issue 52, docs/curation.md).
 *
 * From n clean (src, tgt) pairs (and optionally m sentences in other
 * languages) cq_noise_generate writes the n clean pairs, labelled clean, in
 * input order, then for each noise type t in enum order round(share[t] * n)
 * noisy pairs.  Noisy pair k of type t is a pure function of (seed, t, k and
 * the inputs): its random words are Philox draws at counter (k, t, purpose,
 * attempt) under the seed's key, so changing one type's share or adding
 * another type never changes the pairs of the others.
 *
 *   type                 src            tgt
 *   misaligned_neighbour base's         the nearest pair's (by input order,
 *                                       after, then before) whose target differs
 *   misaligned_random    base's         a random other pair's (target differs)
 *   truncated_tgt        base's         its first k words, k in
 *                                       [ceil(0.3 w), floor(0.7 w)], 1 <= k < w
 *   truncated_src        cut so         base's
 *   appended_tgt         base's         base's, a space, another pair's target
 *   appended_src         base's, a space, another pair's source; base's tgt
 *   untranslated         base's         a copy of the source, byte for byte
 *   untranslated_edited  base's         the source's words with 1-2 small edits
 *                                       (a word dropped, two neighbours swapped)
 *                                       joined by single spaces; never the source
 *   wrong_language       base's         a random other-language sentence
 *   markup               one side (even odds) with crawler markup added: the
 *                        whole side wrapped in a block element, a <br> after
 *                        a word, a word in an inline element or in a link;
 *                        removing every "<...>" gives the side back
 *
 * A base pair is drawn uniformly among the pairs a type can use (a
 * truncation needs >= 2 words on its side, an untranslated pair a source
 * that differs from its target, an edited one >= 2 source words, markup a
 * word on each side); words are
 * those of curate/words.h, so cuts fall between code points.  Without
 * other-language sentences wrong_language makes no pairs.
 */
#ifndef CQ_CURATE_NOISE_H
#define CQ_CURATE_NOISE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef enum cq_noise_type
{
	CQ_NOISE_CLEAN = 0,
	CQ_NOISE_MISALIGNED_NEIGHBOUR,
	CQ_NOISE_MISALIGNED_RANDOM,
	CQ_NOISE_TRUNCATED_TGT,
	CQ_NOISE_TRUNCATED_SRC,
	CQ_NOISE_APPENDED_TGT,
	CQ_NOISE_APPENDED_SRC,
	CQ_NOISE_UNTRANSLATED,
	CQ_NOISE_UNTRANSLATED_EDITED,
	CQ_NOISE_WRONG_LANGUAGE,
	CQ_NOISE_MARKUP,
	CQ_NOISE_NTYPES
} cq_noise_type;

/* A string that is not NUL-terminated. */
typedef struct cq_str
{
	const char *s;
	size_t		len;
} cq_str;

typedef struct cq_noise_options
{
	uint64_t	seed;
	double		share[CQ_NOISE_NTYPES]; /* noisy pairs of type t per clean
										 * pair, 0 <= share <= 10; share[clean]
										 * is not used */
} cq_noise_options;

typedef struct cq_noise_pair
{
	cq_noise_type type;
	int64_t		base;			/* the input pair it was made from */
	int64_t		other;			/* the partner pair (or other-language
								 * sentence) it took text from, or -1 */
	cq_str		src;			/* into the inputs or owned by the set */
	cq_str		tgt;
} cq_noise_pair;

typedef struct cq_noise_set
{
	cq_noise_pair *pairs;
	size_t		n;
	char	  **owned;			/* the strings made here, freed with the set */
	size_t		n_owned;
	size_t		cap_owned;
} cq_noise_set;

/* The defaults (docs/curation.md): seed 1, a total share of 1.15. */
void		cq_noise_options_default(cq_noise_options *o);

/* "clean", "misaligned_neighbour", ...; NULL outside the enum. */
const char *cq_noise_name(cq_noise_type t);

/* The type of a name, or -1. */
int			cq_noise_lookup(const char *name);

/*
 * Generate the set (see above).  src, tgt: n pairs (n >= 2); other: m
 * sentences (may be NULL with m = 0).  The set points into the inputs, which
 * must outlive it.  CQ_EINVAL for a bad option or inputs no pair of a
 * requested type can be made from (all targets equal, no pair of 2 words),
 * CQ_ELIMIT, CQ_ENOMEM.  On failure *out is empty.
 */
cq_code		cq_noise_generate(const cq_str *src, const cq_str *tgt, size_t n,
							  const cq_str *other, size_t m,
							  const cq_noise_options *o, cq_noise_set *out,
							  cq_error *err);

void		cq_noise_set_free(cq_noise_set *set);

#endif
