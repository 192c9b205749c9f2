/*
 * One training pass over a batch: the forward of forward.c in training mode
 * (it keeps what the backward needs), the label-smoothed loss, and the
 * backward into a gradient model of the same layout (cq_model_new() of the
 * same config: its params block is the gradient buffer, tied and shared
 * tensors alias exactly as in the model, so their gradients add up).
 *
 * Gradients are of the SUMMED loss over the batch's target positions and are
 * added to the gradient buffer (several micro-batches accumulate); the caller
 * normalises (train_state.c divides by the token count of the update).
 *
 * Layout as in forward.h: pairs packed back to back, </s> appended to the
 * source, decoder input [</s>, y_1 .. y_T], T + 1 scored positions.
 */
#ifndef CQ_NN_TRAIN_PASS_H
#define CQ_NN_TRAIN_PASS_H

#include <stddef.h>
#include <stdint.h>

#include "nn/infer/forward.h"
#include "nn/model/model.h"
#include "common/error.h"

/* Training dropout: on/off, and the key of this pass's masks. */
typedef struct cq_train_dropout
{
	bool		on;				/* false: dropout off (eval-mode pass) */
	uint64_t	seed;			/* masks depend on (seed, pass, pair key, site, coords) */
	uint32_t	pass;
} cq_train_dropout;

typedef struct cq_train_pass_out
{
	double		loss;			/* summed label-smoothed loss, nats */
	double		nll;			/* summed -log p(gold) */
	long		tokens;			/* scored positions: sum of (tgt_len + 1) */
} cq_train_pass_out;

/*
 * Workspace bytes for these pairs (they must pass cq_batch_shape_of).  With
 * Ns, Nt source/target positions, N = max(Ns, Nt), F = ffn_dim, H = heads,
 * E/D = encoder/decoder layers, S2 = sum ls^2, T2 = sum lt^2, X = sum lt ls,
 * L = longest sentence, R = logit rows per block (min(Nt, max(64, 2^22/V))):
 *   4 [E (Ns (6d + 2F + 4) + H S2) + D (Nt (9d + 2F + 6) + 2d Ns + H (T2 + X))
 *      + Ns (4d + 2) + Nt (3d + 2) + N (6d + F) + 2 Ns d + 2 L^2 + R V]
 *   + 64-byte rounding of each of the ~60 pieces.
 */
size_t		cq_train_pass_workspace_bytes(const cq_model_config *cfg,
										  const cq_pair *pairs, int n_pairs);

/*
 * Forward, loss and backward of n_pairs pairs; grad += d(summed loss)/dθ.
 * Returns CQ_EINVAL for bad pairs (as cq_forward), CQ_EINTERNAL when
 * ws_bytes is too small.  The loss may be non-finite; the caller checks.
 */
cq_code cq_train_pass(const cq_model *m, cq_model *grad, const cq_pair *pairs,
						   int n_pairs, const cq_train_dropout *dropout,
						   float label_smoothing, void *ws, size_t ws_bytes,
						   cq_train_pass_out *out, cq_error *err);

/*
 * The encoder side of the pass alone, for the loss of an encoder model
 * (dual_pass.h): the n pairs' sources are its sentences (as
 * cq_sentence_pairs lays them out; targets unused), checked by the caller.
 * The forward keeps in ws (cq_encoder_pass_workspace_bytes of the
 * sentences' positions, the sum of their squares and the longest) what the
 * backward needs and returns the final norm's output [rows, d] (in ws); the
 * backward, on the same ws, pairs and dropout, adds d(loss)/dθ to grad given
 * d(loss)/d(that output).
 */
size_t		cq_encoder_pass_workspace_bytes(const cq_model_config *cfg, long positions,
											long sum_sq, long longest);
const float *cq_encoder_pass_forward(const cq_model *m, const cq_pair *pairs, int n,
									 const cq_train_dropout *dropout, void *ws);
void		cq_encoder_pass_backward(const cq_model *m, cq_model *grad, const cq_pair *pairs,
									 int n, const cq_train_dropout *dropout, void *ws,
									 const float *d_out);

#endif
