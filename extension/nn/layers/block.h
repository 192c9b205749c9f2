/*
 * The transformer's layers, written once: the encoder block and the decoder
 * block that teacher-forced scoring (infer/forward.c), incremental decoding
 * (infer/decode.c) and training (train/train_pass.c) all run, and their
 * backward (block_backward.c).
 *
 * A block works on `rows` rows of the residual stream x[rows, d] (row stride
 * ld_d).  Each sublayer is pre-norm (fairseq's normalize_before, corpq's
 * own models) or post-norm (cfg.post_norm: fairseq's default transformer,
 * Marian):
 *   pre:   x_out = x_in + Drop(F(N(x_in)))
 *   post:  x_out = N(x_in + Drop(F(x_in)))
 * with N the sublayer's norm and F = self-attention, cross-attention
 * (decoder) or the feed-forward network fc2(Drop(act(fc1(h)))).  Dropout is a no-op unless the pass turns
 * it on (training, Monte Carlo scoring).
 *
 * What differs between the three callers is only which keys and values a
 * query row sees: the pass's attend functions own that.  The packed ones
 * below serve batches of sentence pairs laid out back to back (packed.h);
 * the translator supplies its own over its caches.
 *
 * Inference keeps nothing: a block runs in place over x with the pass's
 * scratch buffers.  Training passes a cq_layer_keep per layer: each sublayer
 * writes its input, its norm's statistics and the activations its backward
 * needs there, and x_in / x_out are distinct buffers.  Every norm is the norm
 * object (norm.h); which side of the residual it sits on is decided here
 * and in block_backward.c only.
 */
#ifndef CQ_NN_BLOCK_H
#define CQ_NN_BLOCK_H

#include <stdbool.h>

#include "nn/layers/norm.h"
#include "nn/layers/packed.h"
#include "nn/model/model.h"
#include "nn/ops/ops.h"

/*
 * What every sublayer keeps around its norm for the backward (N: the side's
 * rows), whatever the norm's position: the same buffers either way.
 */
typedef struct cq_sublayer_keep
{
	float	   *x_in;			/* [N, d] residual stream entering */
	cq_norm_stats stats;		/* [N] each: the norm's row statistics */
	float	   *norm_io;		/* [N, d] pre-norm: N(x_in), F's input; post-norm:
								 * x_in + Drop(F(x_in)), the norm's input */
} cq_sublayer_keep;

/* What an attention sublayer keeps. */
typedef struct cq_attn_keep
{
	cq_sublayer_keep io;
	float	   *q,				/* self [N, 3d] (q, k, v); cross [Nt, d] */
			   *kv,				/* cross [Ns, 2d]; self NULL */
			   *probs,			/* per sentence, per head: [lq, lk] softmax */
			   *ctx;			/* [N, d] heads concatenated */
} cq_attn_keep;

/* What the feed-forward sublayer keeps. */
typedef struct cq_ffn_keep
{
	cq_sublayer_keep io;
	float	   *u,				/* [N, F] fc1 output, before the activation */
			   *a;				/* [N, F] after the activation and its dropout */
} cq_ffn_keep;

typedef struct cq_layer_keep
{
	cq_attn_keep self,
				cross;			/* decoder only */
	cq_ffn_keep ffn;
} cq_layer_keep;

typedef struct cq_block_pass cq_block_pass;

/*
 * Attention over the sentences of the pass: from the projected queries q
 * (row stride ldq; self-attention: each row is q, k, v) to the heads'
 * concatenated context ctx[rows, d] (stride ld_d).  keep is NULL in
 * inference.
 */
typedef void (*cq_attend_fn) (cq_block_pass *bp, int layer, const float *q, long ldq,
							  float *ctx, cq_attn_keep *keep);

struct cq_block_pass
{
	const cq_model *m;
	bool		target;			/* decoder side: causal self-attention */
	long		rows;
	long		ld_d,			/* row strides (training: d, 3d, F) */
				ld_qkv,
				ld_f;
	/* scratch [rows, ld_*]; inference uses all, training only tmp */
	float	   *h,
			   *qkv,
			   *ctx,
			   *tmp,
			   *ffn;
	float	   *scores;			/* [L, L] one head's attention (inference) */
	float	   *pd;				/* [L, L] dropped probabilities (training) */
	/* dropout over the packed pairs' rows; NULL or off: none */
	cq_dropout_stream *drop;
	const cq_pair *pairs;
	int			n_pairs;
	/* the encoder output the decoder's cross-attention reads (packed) */
	const float *memory;
	long		memory_rows;
	cq_attend_fn self_attend,
				cross_attend;
	void	   *arg;			/* the attend functions' own state */
};

/*
 * The layers of one side over x: x holds the embeddings on entry and the
 * last layer's output (before the final norm) on return.  With keep
 * (training, keep[layers]): the embeddings are in keep[0].self.io.x_in and
 * the output goes to out; without, out must be x.
 */
void		cq_block_stack(cq_block_pass *bp, float *x, cq_layer_keep *keep, float *out);

/* One block, i.e. one layer (x_in == x_out in inference). */
void		cq_encoder_block(cq_block_pass *bp, int layer, float *x_in, float *x_out,
							 cq_layer_keep *keep);
void		cq_decoder_block(cq_block_pass *bp, int layer, float *x_in, float *x_out,
							 cq_layer_keep *keep);

/* Attention over packed sentence pairs: self (causal on the target side)... */
void		cq_packed_self_attend(cq_block_pass *bp, int layer, const float *q, long ldq,
								  float *ctx, cq_attn_keep *keep);

/* ...and cross, each target sentence over its own source in bp->memory. */
void		cq_packed_cross_attend(cq_block_pass *bp, int layer, const float *q, long ldq,
								   float *ctx, cq_attn_keep *keep);

/* Backward scratch and the gradient model (train_pass.h's layout). */
typedef struct cq_block_grads
{
	cq_model   *g;				/* gradients accumulate here */
	float	   *dh,				/* [N, d] */
			   *dq,				/* [N, 3d] */
			   *dkv,			/* [Ns, 2d] */
			   *dctx,			/* [N, d] */
			   *du,				/* [N, F] */
			   *dp,				/* [L, L] */
			   *d_memory;		/* [Ns, d] += the cross-attention's share */
} cq_block_grads;

/*
 * Backward of cq_block_stack with keep: dx holds d(loss)/d(out) on entry and
 * d(loss)/d(embeddings) on return.
 */
void		cq_block_stack_backward(cq_block_pass *bp, const cq_block_grads *gr, float *dx,
									cq_layer_keep *keep);

#endif
