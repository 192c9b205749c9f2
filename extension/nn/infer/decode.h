/*
 * Inside the translator (translate.h): its slots, caches and scratch, shared
 * by translator.c (workspace, slots, the step loop), decode.c (the model:
 * encoder, incremental decoder, cache reordering) and search.c (one search
 * step of one sentence).
 *
 * Rows: at each step the live hypotheses of all sentences are packed as rows,
 * slot after slot (a slot's rows are contiguous: row0 .. row0 + nrows - 1).
 * A sentence has 1 row at step 0 (all its hypotheses would be equal) and
 * `beam` rows after.  Every row buffer has a stride rounded up to 16 floats,
 * so a row sits at the same 64-byte alignment wherever it is in the batch.
 *
 * Caches: a slot owns `beam` self-attention caches (ids slot * beam ..); each
 * row points at one.  When the search keeps hypotheses, a row whose source
 * hypothesis is not yet claimed takes over its cache; a second row from the
 * same source gets a cache nobody kept and a copy of the prefix.  No cache is
 * ever written while another row still needs it.
 */
#ifndef CQ_NN_DECODE_H
#define CQ_NN_DECODE_H

#include "nn/infer/forward.h"
#include "nn/infer/translate.h"

typedef enum slot_state
{
	SLOT_FREE = 0,
	SLOT_NEW,					/* admitted, not yet encoded */
	SLOT_LIVE,					/* decoding */
	SLOT_DONE					/* finished, waiting for cq_translator_next */
} slot_state;

/* A (hypothesis, next token) candidate of one search step. */
typedef struct cq_candidate
{
	int			row;			/* the hypothesis it extends (slot-local) */
	int32_t		token;
	float		lp;				/* the token's search log-probability */
	double		score;			/* cumulative: the hypothesis's + lp */
} cq_candidate;

/* A token and its log-probability, for sampling's sorted sets. */
typedef struct cq_ranked
{
	float		lp;
	int32_t		id;
} cq_ranked;

typedef struct cq_slot
{
	slot_state	state;
	int			index;			/* this slot's number */
	cq_source	src;			/* ids point at src_ids */
	int32_t    *src_ids;		/* [S - 1] */
	int			max_len,
				min_len;		/* min_len <= max_len */
	int			step;
	int			nrows;
	int			row0;			/* its first packed row at this step */
	float	   *cross_kv;		/* [layers][S][ld_kv]: keys, then values */
	float	   *att;			/* [max(K S, T)] its attention scores in a step */
	int		   *cache;			/* [beam] cache id of each row */
	int32_t    *tok,
			   *tok_alt;		/* [beam][T]: y_1 .. y_step of each row */
	float	   *lp,
			   *lp_alt;			/* [beam][T]: their search log-probs */
	double	   *cum;			/* [beam] cumulative scores */
	bool	   *ignore;			/* [beam] fairseq's cands_to_ignore */
	cq_candidate *cand;			/* [2 beam] */
	int			n_cand;
	int			n_final;
	int32_t    *final_tok;		/* [beam][T] */
	float	   *final_lp;		/* [beam][T] */
	cq_hypothesis *final;		/* [beam], best first once done */
} cq_slot;

struct cq_translator
{
	const cq_model *m;
	cq_translate_options o;
	int			B,				/* slots */
				K,				/* beam */
				S,				/* source positions per slot (tokens + 1) */
				T;				/* target positions per hypothesis (max_len + 1) */
	long		ld_d,			/* row strides, multiples of 16 floats */
				ld_qkv,
				ld_kv,
				ld_f,
				ld_v;
	cq_slot    *slots;
	float	   *cache;			/* [B K][layers][T][ld_kv] */
	long		cache_floats;	/* per cache id */
	/* scratch, N = max(B K, B S) rows */
	float	   *x,
			   *h,
			   *qkv,
			   *ctx,
			   *tmp,
			   *ffn,
			   *logits,			/* [B K][ld_v] */
			   *scores;			/* the encoder's attention, [S S] */
	cq_pair    *pairs;			/* [B] sources being encoded */
	cq_slot   **encoding;		/* [B] their slots */
	cq_ranked  *ranked;			/* [V] sampling scratch */
	int		   *iscratch;		/* [3 beam]: search picks, their rows, new caches */
	bool	   *bscratch;		/* [3 beam]: ignored picks, claimed, used caches */
	cq_translate_progress progress;
};

/* Encodes the SLOT_NEW slots and fills their cross-attention keys/values. */
void		cq_decode_encode(cq_translator *t);

/*
 * One decoder step over the live slots' rows: writes each row's keys and
 * values at position `step`, and the rows' log-softmax (temperature applied)
 * into t->logits.  Sets row0 of every live slot.
 */
void		cq_decode_step(cq_translator *t);

/* Self-attention cache of cache id c, layer l (position p at + p * ld_kv). */
static inline float *
cq_decode_cache(const cq_translator *t, int c, int l)
{
	return t->cache + c * t->cache_floats + (long) l * t->T * t->ld_kv;
}

/*
 * After the search kept hypotheses src_row[0 .. n): row j continues slot row
 * src_row[j].  Re-points the rows' caches (copying positions 0 .. step where
 * two rows share a source).
 */
void		cq_decode_reorder(cq_translator *t, cq_slot *s, const int *src_row, int n);

/*
 * One search step of a live slot over its rows' log-probabilities (in
 * t->logits): masks, candidates, finalisation; then either the slot is done
 * (SLOT_DONE, final hypotheses sorted) or its hypotheses move on one token.
 */
void		cq_search_step(cq_translator *t, cq_slot *s);

#endif
