/*
 * fairseq's inverse_sqrt learning-rate schedule.  With u = updates already
 * done (0 for the first update), W = warmup_updates, peak = lr:
 *   u <  W:  lr(u) = init + (peak - init) u / W      (linear warm-up)
 *   u >= W:  lr(u) = peak sqrt(W / u)
 * init = warmup_init_lr (fairseq's default 0 in newer releases, 1e-7 in the
 * transformer recipes; ours defaults to 1e-7).  W = 0: peak / sqrt(max(u,1)).
 */
#ifndef CQ_NN_SCHEDULE_H
#define CQ_NN_SCHEDULE_H

#include <stdint.h>

double		cq_inverse_sqrt_lr(double peak, double warmup_init_lr, int64_t warmup,
							   int64_t updates_done);

#endif
