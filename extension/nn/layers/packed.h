/*
 * Helpers shared by the passes over a packed batch: the teacher-forced
 * forward (forward.c), the training pass (train_pass.c) and the incremental
 * decoder (decode.c).
 *
 * A packed batch puts the positions of its sentence pairs back to back, pair
 * after pair, with fairseq's layout (infer/forward.h): the source side is
 * [x_1 .. x_S, </s>], the target side -- the decoder's input -- is
 * [</s>, y_1 .. y_T].  Each side of a pair therefore has its length + 1
 * positions.
 */
#ifndef CQ_NN_PACKED_H
#define CQ_NN_PACKED_H

#include <stdbool.h>
#include <stdint.h>

#include "nn/model/model.h"
#include "nn/ops/ops.h"

/* A sentence pair in token ids, the unit every pass packs. */
typedef struct cq_pair
{
	const int32_t *src;			/* source ids, without </s> */
	int			src_len;
	const int32_t *tgt;			/* target ids, without </s> */
	int			tgt_len;
	uint64_t	key;			/* keys this pair's dropout masks (MC mode) */
} cq_pair;

/*
 * A sentence in token ids, the unit of an encoder model (kind encoder): it
 * reads <s> ids </s>, packed as the source side of a cq_pair whose source
 * is <s> ids (cq_sentence_pairs), so every pass runs it unchanged.
 */
typedef struct cq_sentence
{
	const int32_t *ids;			/* without <s> and </s> */
	int			len;
	uint64_t	key;			/* keys its dropout masks */
} cq_sentence;

/*
 * pairs[i] = sentence i as an encoder's input: ids_buf gets <s> ids of each
 * sentence back to back (sum of len + 1 ids), the pair's source points
 * there, its target is empty.
 */
void		cq_sentence_pairs(const cq_sentence *s, int n, int32_t *ids_buf, cq_pair *pairs);

/* Positions of one side of a pair: its tokens + 1 (</s>). */
static inline int
cq_side_positions(const cq_pair *p, bool target)
{
	return (target ? p->tgt_len : p->src_len) + 1;
}

/*
 * The token at position t of one side (see the layout above); the decoder's
 * first input is the model's decoder_start_id (</s>, fairseq's, unless a
 * converted model says otherwise).
 */
static inline int32_t
cq_side_token(const cq_model_config *c, const cq_pair *p, bool target, int t)
{
	if (target)
		return t == 0 ? c->decoder_start_id : p->tgt[t - 1];
	return t < p->src_len ? p->src[t] : CQ_EOS_ID;
}

/*
 * Row pos of a side's position embeddings: the sinusoid table's or the
 * learned table's; NULL for a sinusoid position past the model's table
 * (cq_embed_token then adds cq_sinusoid_add's row: the same values).
 */
static inline const float *
cq_position_row(const cq_model *m, bool target, int pos)
{
	if (m->sinusoid)
		return pos < m->sinusoid_rows ? m->sinusoid + (long) pos * m->cfg.d_model : NULL;
	return (target ? m->tgt_pos : m->src_pos) + (long) pos * m->cfg.d_model;
}

/*
 * x[d] = E[tok] s + position(pos), on the source or target side; s = sqrt(d)
 * (1 without scale_embeddings); plus an encoder's token type vector
 * (token_type_embedding).  Before the embedding norm, if any.
 */
void		cq_embed_token(const cq_model *m, bool target, int32_t tok, int pos,
						   float *x);

/* The scale s of the token embeddings. */
float		cq_embed_scale(const cq_model_config *c);

/* cq_embed_token for every position of one side of n pairs, packed. */
void		cq_embed_packed(const cq_model *m, const cq_pair *pairs, int n,
							bool target, float *x);

/*
 * The embedding norm (layernorm_embedding) over rows of embeddings (stride
 * ld), in place; a no-op for models without it.  Inference only (training
 * keeps the statistics).
 */
void		cq_embed_norm(const cq_model *m, bool target, float *x, long rows, long ld);

/*
 * Inverted dropout over the packed rows x[positions, cols] of one side: row t
 * of a pair is keyed by (the pair's key, site, t).  Sets ds->pair_key.  A
 * no-op when ds is off or p <= 0; also its own backward (same mask).
 */
void		cq_drop_packed(cq_dropout_stream *ds, const cq_pair *pairs, int n,
						   bool target, float p, uint32_t site, float *x, int cols);

/*
 * Rows of logits per output-projection block over `rows` positions: at most
 * CQ_LOGIT_FLOATS floats (16 MB; V = 8000: 524 rows), at least 64 rows.
 */
#define CQ_LOGIT_FLOATS (1L << 22)
long		cq_logit_block_rows(const cq_model_config *c, long rows);

#endif
