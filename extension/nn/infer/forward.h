/*
 * Batched teacher-forced scoring of sentence pairs.
 *
 * fairseq's conventions: the source gets </s> appended; the decoder reads
 * [</s>, y_1 .. y_T] and is scored on [y_1 .. y_T, </s>], so a pair with T
 * target tokens has T + 1 scored positions (EOS included).  Pairs of any
 * lengths go through one pass: their positions are packed back to back (no
 * padding rows), every projection is one GEMM over all positions of the
 * batch, attention runs per (sentence, head) over that sentence's keys only.
 *
 * Memory: the caller allocates a workspace of cq_forward_workspace_bytes()
 * for the batch's shape and the output arrays; the forward allocates nothing.
 */
#ifndef CQ_NN_FORWARD_H
#define CQ_NN_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "nn/layers/packed.h"
#include "nn/model/model.h"

typedef enum cq_dropout_mode
{
	CQ_DROPOUT_OFF = 0,			/* eval mode */
	CQ_DROPOUT_MC				/* Monte Carlo: all dropout active */
} cq_dropout_mode;

typedef struct cq_dropout
{
	cq_dropout_mode mode;
	uint64_t	seed;
	uint32_t	pass;			/* 0 .. K-1 for K passes */
} cq_dropout;

/* Sizes that bound a batch's memory (</s> included in every count). */
typedef struct cq_batch_shape
{
	int			n_pairs;
	long		src_positions;	/* sum of (src_len + 1) */
	long		tgt_positions;	/* sum of (tgt_len + 1): rows of the outputs */
	int			max_src;		/* max (src_len + 1) */
	int			max_tgt;		/* max (tgt_len + 1) */
} cq_batch_shape;

/* Output arrays, caller-owned: per target position (packed, pair after pair). */
typedef struct cq_forward_out
{
	float	   *logp;			/* [tgt_positions] log p(gold) */
	float	   *p_max;			/* [tgt_positions] max probability */
	float	   *entropy;		/* [tgt_positions] entropy, nats */
	int32_t    *argmax;			/* [tgt_positions] most probable id; may be NULL */
	double	   *sent_logp;		/* [n_pairs] sum of logp over the pair */
	int		   *sent_count;		/* [n_pairs] its positions, tgt_len + 1 */
} cq_forward_out;

/* Positions per batch and side (larger batches: split them). */
#define CQ_MAX_BATCH_POSITIONS (1 << 20)

/* The shape of a batch; checks lengths against max_positions and ids. */
cq_code cq_batch_shape_of(const cq_model *m, const cq_pair *pairs, int n_pairs,
							   cq_batch_shape *shape, cq_error *err);

/*
 * Workspace bytes for a batch of this shape.  With d = d_model, F = ffn_dim,
 * V = target vocabulary, Ns/Nt = source/target positions, N = max(Ns, Nt),
 * L = max(max_src, max_tgt), R = min(Nt, max(64, 2^22 / V)):
 *   4 (d (Ns + Nt) + N (6 d + F) + L^2 + R V) + at most 704 bytes.
 */
size_t		cq_forward_workspace_bytes(const cq_model_config *cfg,
									   const cq_batch_shape *shape);

/*
 * Score n_pairs pairs.  Returns CQ_EINVAL for an id outside the vocabulary
 * or a sentence longer than max_positions - 1 tokens, CQ_EINTERNAL when
 * ws_bytes is too small; nothing is read out of bounds.
 */
cq_code cq_forward(const cq_model *m, const cq_pair *pairs, int n_pairs,
						const cq_dropout *dropout, void *workspace, size_t ws_bytes,
						const cq_forward_out *out, cq_error *err);

/*
 * The same forward shared out to the thread pool (common/parallel.h) by
 * pairs: the batch is cut into contiguous parts of about equal work (at
 * most 2 per thread, of CQ_PARTS_ROWS target positions or more: parts.h), and
 * each of up to `threads` lanes runs whole forwards of the parts it takes,
 * on a workspace of its own, the products inline.  One join per call,
 * against one per product chunk when a single forward splits its products
 * (hundreds per batch), and every step of the forward in parallel, not only
 * the products.  Each pair's outputs are the bits cq_forward gives it (a
 * pair's result never depends on its batch).  threads 1 (or one pair) is
 * cq_forward.  The workspace: cq_forward_parallel_bytes for the same pairs
 * and threads (`threads` times the largest part's).  Cancel points: none
 * inside (a part may not poll); callers poll between batches.
 */
size_t		cq_forward_parallel_bytes(const cq_model_config *cfg, const cq_pair *pairs,
									  int n_pairs, int threads);
cq_code cq_forward_parallel(const cq_model *m, const cq_pair *pairs, int n_pairs,
								 const cq_dropout *dropout, int threads, void *workspace,
								 size_t ws_bytes, const cq_forward_out *out, cq_error *err);

#endif
