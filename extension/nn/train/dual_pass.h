/*
 * The training pass of an encoder model (kind encoder): a dual encoder with
 * in-batch negatives in both directions and LaBSE's additive-margin softmax
 * (Yang et al. 2019; Feng et al. 2022).  Each pair (x_i, y_i) of a batch of
 * n is two sentences of the one encoder (x_i's dropout key 2 key, y_i's
 * 2 key + 1); with e the sentence vectors (unit length, layers/pool.h) and
 * S_ij = e(x_i) . e(y_j), their cosine,
 *
 *   loss = sum_i CE_j(s (S_ij - m [i = j]), i) + sum_j CE_i(s (S_ij - m [i = j]), j)
 *
 * the cross-entropy of each source's softmax over the batch's targets with
 * its own target as the answer, plus the same from each target over the
 * sources (margin m, scale s).  The caller divides by n (train_state.h), so
 * an update's loss is the mean over the pairs of both directions' terms.
 * The gradients go back through S, the sentence vectors and the encoder
 * (train_pass.h's encoder side: the same blocks and backward as a
 * translation model's).
 */
#ifndef CQ_NN_DUAL_PASS_H
#define CQ_NN_DUAL_PASS_H

#include <stddef.h>

#include "common/error.h"
#include "nn/train/train_pass.h"

/* Workspace bytes for these pairs (which must pass cq_dual_pass_check). */
size_t		cq_dual_pass_workspace_bytes(const cq_model_config *cfg, const cq_pair *pairs,
										 int n_pairs);

/*
 * CQ_OK when the pairs can be trained on: an encoder model, at least one
 * pair, each side's ids inside the vocabulary and at most max_positions - 2
 * tokens, at most CQ_MAX_BATCH_POSITIONS positions in all; else CQ_EINVAL.
 */
cq_code		cq_dual_pass_check(const cq_model *m, const cq_pair *pairs, int n_pairs,
							   cq_error *err);

/*
 * Forward, loss and backward of n_pairs pairs; grad += d(summed loss)/dθ.
 * out: loss, nll = the same loss with margin 0 (the in-batch retrieval
 * cross-entropy), tokens = the positions encoded (both sentences' <s>
 * tokens </s>).  CQ_EINVAL as cq_dual_pass_check, CQ_EINTERNAL when
 * ws_bytes is too small.
 */
cq_code		cq_dual_pass(const cq_model *m, cq_model *grad, const cq_pair *pairs, int n_pairs,
						 const cq_train_dropout *dropout, float margin, float scale, void *ws,
						 size_t ws_bytes, cq_train_pass_out *out, cq_error *err);

#endif
