/*
 * A sentence-aligned corpus as caller-owned CSR arrays of token ids.
 *
 * Pair k has source tokens src[src_off[k] .. src_off[k+1]) and target tokens
 * tgt[tgt_off[k] .. tgt_off[k+1]); ids are 0..src_vocab-1 / 0..tgt_vocab-1,
 * assigned by the caller (the core does not tokenise).  Trainers borrow the
 * arrays: they must outlive the trainer.
 */
#ifndef CQ_ALIGN_BITEXT_H
#define CQ_ALIGN_BITEXT_H

#include <stdint.h>

#include "align/progress.h"

typedef struct cq_bitext
{
	int64_t		n_pairs;
	const int32_t *src;			/* [src_off[n_pairs]] */
	const int64_t *src_off;		/* [n_pairs + 1], src_off[0] == 0 */
	const int32_t *tgt;
	const int64_t *tgt_off;
	int32_t		src_vocab;
	int32_t		tgt_vocab;
} cq_bitext;

/*
 * One direction of a bitext: "e" is the conditioning side, "f" the generated
 * side (fast_align's naming).  reverse swaps source and target.
 */
typedef struct cq_bitext_view
{
	int64_t		n_pairs;
	const int32_t *e;
	const int64_t *e_off;
	const int32_t *f;
	const int64_t *f_off;
	int32_t		e_vocab;
	int32_t		f_vocab;
} cq_bitext_view;

/* Checks offsets are monotone from 0 and every id is within its vocabulary. */
cq_code		cq_bitext_validate(const cq_bitext *b, cq_error *err);

cq_bitext_view cq_bitext_direction(const cq_bitext *b, bool reverse);

#endif
