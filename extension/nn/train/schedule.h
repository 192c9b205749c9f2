/*
 * The learning-rate schedule, and the plan of a run from its budget.
 *
 * fairseq's inverse_sqrt learning-rate schedule.  With u = updates already
 * done (0 for the first update), W = warmup_updates, peak = lr:
 *   u <  W:  lr(u) = init + (peak - init) u / W      (linear warm-up)
 *   u >= W:  lr(u) = peak sqrt(W / u)
 * init = warmup_init_lr (fairseq's default 0 in newer releases, 1e-7 in the
 * transformer recipes; ours defaults to 1e-7).  W = 0: peak / sqrt(max(u,1)).
 *
 * The plan (docs/training.md, "How a budgeted run is scheduled"): a run expects E
 * updates -- its step budget, its epochs in batches, or, with only a time
 * budget, the time left divided by the seconds per update measured on a few
 * gradient passes before the first update (a calibration: the passes are
 * not applied, so the schedule is fairseq's from update 0 and a resumed run
 * recomputes nothing).  From E: warm-up = E / 10, at most 4000 (fairseq's
 * transformer recipe), at least CQ_SCHEDULE_WARMUP_MIN (or E when the run is
 * shorter); checkpoints every E / 10 updates, at most 1000 apart.
 */
#ifndef CQ_NN_SCHEDULE_H
#define CQ_NN_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

double		cq_inverse_sqrt_lr(double peak, double warmup_init_lr, int64_t warmup,
							   int64_t updates_done);

/*
 * The default peak learning rate of a run that warms up over `warmup`
 * updates.  The base is the peak of Vaswani et al.'s schedule
 * (d_model^-0.5 min(u^-0.5, u 4000^-1.5), "Attention is all you need", 5.3)
 * for its 4000 warm-up updates, 1 / sqrt(4000 d_model): tiny (d 64) 1.98e-3,
 * small (d 256) 9.9e-4, base (d 512) 7.0e-4.  A narrower model takes a larger
 * rate.  A shorter warm-up (a run of fewer than 40,000 updates: warm-up =
 * E / 10) multiplies it by (4000 / warmup)^(1/4), at most
 * CQ_SCHEDULE_SHORT_LR_FACTOR: the geometric mean of fairseq's inverse-sqrt
 * (the same peak whatever the warm-up, so a short warm-up decays from it
 * early: sqrt(50 / 372) of it after 372 updates) and Vaswani's rate at the
 * end of that warm-up (sqrt(4000 / warmup) times the base), capped where it
 * was measured: `small` on the Bible, 372 updates (15 minutes on a 2-core
 * AVX2 CPU), held-out AUC 0.793 at the base rate, 0.868 at 2x, 0.861 at 3x
 * (docs/benchmarks.md, "Minutes to a useful model").  A warm-up of 4000 or
 * more keeps the base: long runs follow the published recipe.
 */
double		cq_schedule_default_lr(int d_model, int64_t warmup);

#define CQ_SCHEDULE_SHORT_LR_FACTOR 2.0

#define CQ_SCHEDULE_WARMUP_SHARE 10 /* warm-up = expected updates / 10 */
#define CQ_SCHEDULE_WARMUP_MAX 4000
/*
 * The documented minimum warm-up: a pre-LN transformer under Adam needs a few
 * dozen updates for the second-moment estimates to settle before the peak
 * rate; also the warm-up of a run whose length is unknown (a time budget
 * too short to measure an update rate).
 */
#define CQ_SCHEDULE_WARMUP_MIN 50
#define CQ_SCHEDULE_CHECKPOINTS 10	/* checkpoints per expected run */
#define CQ_SCHEDULE_CHECKPOINT_MAX 1000 /* updates between checkpoints, at most */

/* Warm-up updates for a run of `expected` updates (<= 0: unknown). */
int			cq_schedule_warmup(int64_t expected);

/* Updates between checkpoints for a run of `expected` updates (<= 0: unknown). */
int			cq_schedule_checkpoint_every(int64_t expected);

/*
 * Calibration: seconds per update timed on gradient passes over the run's own
 * batches.  The first pass grows the workspace and warms the caches, so it is
 * timed apart; up to CQ_SCHEDULE_CALIBRATION_PASSES more follow while the
 * calibration has used less than CQ_SCHEDULE_CALIBRATION_SHARE of the time
 * budget.  A budget whose first pass alone uses that share is too short to
 * measure a rate: the run then expects an unknown number of updates.
 */
#define CQ_SCHEDULE_CALIBRATION_PASSES 5
#define CQ_SCHEDULE_CALIBRATION_SHARE 0.05

typedef struct cq_calibration
{
	double		budget;			/* seconds of the time budget left */
	int			passes;			/* done, the first included */
	double		first;			/* seconds of the first pass */
	double		timed;			/* seconds of the others */
} cq_calibration;

void		cq_calibration_start(cq_calibration *c, double budget_seconds);
/* Whether to time another pass. */
bool		cq_calibration_more(const cq_calibration *c);
void		cq_calibration_add(cq_calibration *c, double seconds);
/* Seconds spent calibrating. */
double		cq_calibration_seconds(const cq_calibration *c);
/* Mean seconds of the passes after the first; NaN when there was none. */
double		cq_calibration_seconds_per_update(const cq_calibration *c);

/*
 * Updates expected in seconds_left at seconds_per_update (at least 1);
 * 0 (unknown) when the rate is not a positive finite number.
 */
int64_t		cq_schedule_expected_updates(double seconds_left, double seconds_per_update);

#endif
