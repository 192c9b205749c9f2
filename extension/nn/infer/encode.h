/*
 * Sentence embeddings with an encoder model (cq_model_config.kind encoder,
 * models/FORMAT.md "Encoder models"): each sentence reads <s> ids </s>
 * through the embeddings, the encoder blocks (layers/block.h, the same as a
 * translation model's) and the final norm; its rows are pooled, passed
 * through the pooler if any and L2-normalised (layers/pool.h).
 *
 * Sentences of any lengths go through one pass, packed without padding,
 * attention per sentence; every product is the row-independent kernel of a
 * packed model (its pool of threads included), so a sentence's vector has
 * the same bits alone, in any batch and on any number of threads.  Memory:
 * the caller's workspace of cq_encode_workspace_bytes(); the pass allocates
 * nothing.
 */
#ifndef CQ_NN_ENCODE_H
#define CQ_NN_ENCODE_H

#include <stddef.h>

#include "common/error.h"
#include "nn/infer/forward.h"
#include "nn/layers/packed.h"
#include "nn/model/model.h"

/*
 * Workspace bytes for n sentences of `positions` positions in all (the sum
 * of len + 2) and at most `longest` (max len + 2).  With d = d_model,
 * F = ffn_dim, N = positions, L = longest:
 *   4 (N (7 d + F + 1) + n (d + 7) + L^2) + at most 704 bytes.
 */
size_t		cq_encode_workspace_bytes(const cq_model_config *cfg, int n, long positions,
									  int longest);

/* The same for these sentences (they must pass cq_encode's checks). */
size_t		cq_encode_sentences_bytes(const cq_model_config *cfg, const cq_sentence *s, int n);

/*
 * The vectors of n sentences into out[n, d_model] (unit length, or 0 for a
 * sentence whose pooled vector is 0).  CQ_EINVAL for a translation model, no
 * sentences, an id outside the vocabulary or a sentence longer than
 * max_positions - 2 tokens, or more than CQ_MAX_BATCH_POSITIONS positions;
 * CQ_EINTERNAL when ws_bytes is too small.  dropout NULL or off: eval mode;
 * CQ_DROPOUT_MC: the masks of models/FORMAT.md keyed by each sentence's key.
 */
cq_code cq_encode(const cq_model *m, const cq_sentence *s, int n, const cq_dropout *dropout,
				  void *ws, size_t ws_bytes, float *out, cq_error *err);

/*
 * The same shared out to the thread pool by sentences, as cq_forward_parallel
 * shares out pairs: contiguous parts of about equal work (parts.h), each of
 * up to `threads` lanes encoding whole parts on a workspace of its own, the
 * products inline.  Each sentence's vector has the bits cq_encode gives it.
 * threads 1 (or one sentence) is cq_encode.  The workspace:
 * cq_encode_parallel_bytes for the same sentences and threads.
 */
size_t		cq_encode_parallel_bytes(const cq_model_config *cfg, const cq_sentence *s, int n,
									 int threads);
cq_code cq_encode_parallel(const cq_model *m, const cq_sentence *s, int n,
								const cq_dropout *dropout, int threads, void *ws, size_t ws_bytes,
								float *out, cq_error *err);

#endif
