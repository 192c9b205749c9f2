/*
 * Label-smoothed cross-entropy over one row of logits (fairseq's
 * label_smoothed_cross_entropy before 2021, = PyTorch's cross_entropy with
 * label_smoothing): with p = softmax(l) over V entries,
 *   nll  = -log p(gold)
 *   loss = (1 - eps) nll + eps / V * sum_v (-log p(v))
 * i.e. the cross-entropy against (1 - eps) onehot(gold) + eps / V.  (Current
 * fairseq spreads eps over the V - 1 other entries instead; the difference is
 * eps / (V - 1) on the gold entry's weight.)  Padding is never scored: the
 * training pass packs positions without pad rows.
 */
#ifndef CQ_NN_LOSS_H
#define CQ_NN_LOSS_H

/*
 * Overwrites logits[V] with dloss/dlogit = p - (1 - eps) onehot - eps / V and
 * returns the loss; *nll receives -log p(gold).
 */
double		cq_ls_xent_row(float *logits, int v, int gold, float eps, double *nll);

#endif
