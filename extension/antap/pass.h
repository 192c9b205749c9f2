/*
 * ANTAP's forward and backward passes over a batch of pooled CAVs
 * (model.h has the network).  A pass object owns every activation buffer,
 * sized once for up to max_batch tokens; forward keeps what backward needs,
 * so a training step is forward, loss gradient, backward.  Prediction uses
 * the same forward: one code path, one numeric result.
 *
 * Kernels are nn's (ops.h, backward_ops.h, blas.h): GEMMs through cq_sgemm,
 * layer norm with saved statistics, exact-erf GELU, ReLU, softmax.
 */
#ifndef CQ_ANTAP_PASS_H
#define CQ_ANTAP_PASS_H

#include "antap/model.h"

typedef struct cq_antap_pass cq_antap_pass;

/* Bytes of a pass for max_batch tokens (cfg valid). */
size_t		cq_antap_pass_bytes(const cq_antap_config *cfg, int max_batch);

cq_code		cq_antap_pass_new(const cq_antap_config *cfg, int max_batch,
							  cq_antap_pass **out, cq_error *err);
void		cq_antap_pass_free(cq_antap_pass *p);
int			cq_antap_pass_max_batch(const cq_antap_pass *p);

/*
 * out[i] for the tokens x[n, pool_rows, pool_cols] (row-major), 1 <= n <=
 * max_batch.  The pass keeps what cq_antap_backward needs (not x itself).
 */
void		cq_antap_forward(const cq_antap_model *m, cq_antap_pass *p, const float *x,
							 int n, float *out);

/*
 * After cq_antap_forward on the same pass: grad += d(sum_i dout[i] out[i])/dθ
 * (grad: a model of the same configuration whose block is the gradient).
 */
void		cq_antap_backward(const cq_antap_model *m, cq_antap_pass *p, const float *dout,
							  cq_antap_model *grad);

#endif
