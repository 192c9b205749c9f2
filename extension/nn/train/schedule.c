#include "nn/train/schedule.h"

#include <math.h>

double
cq_inverse_sqrt_lr(double peak, double init, int64_t warmup, int64_t u)
{
	if (u < warmup)
		return init + (peak - init) * (double) u / (double) warmup;
	if (warmup <= 0)
		return peak / sqrt((double) (u > 1 ? u : 1));
	return peak * sqrt((double) warmup / (double) u);
}

double
cq_schedule_default_lr(int d_model, int64_t warmup)
{
	double		peak = 1.0 / sqrt((double) CQ_SCHEDULE_WARMUP_MAX * (d_model > 0 ? d_model : 1)),
				factor = CQ_SCHEDULE_SHORT_LR_FACTOR;

	if (warmup >= CQ_SCHEDULE_WARMUP_MAX)
		factor = 1.0;
	else if (warmup > 0)
	{
		factor = pow((double) CQ_SCHEDULE_WARMUP_MAX / (double) warmup, 0.25);
		factor = factor < CQ_SCHEDULE_SHORT_LR_FACTOR ? factor : CQ_SCHEDULE_SHORT_LR_FACTOR;
	}
	return peak * factor;
}

int
cq_schedule_warmup(int64_t expected)
{
	int64_t		w;

	if (expected <= 0)
		return CQ_SCHEDULE_WARMUP_MIN;
	w = expected / CQ_SCHEDULE_WARMUP_SHARE;
	if (w < CQ_SCHEDULE_WARMUP_MIN)
		/* a run shorter than the minimum warms up over all of it */
		w = expected < CQ_SCHEDULE_WARMUP_MIN ? expected : CQ_SCHEDULE_WARMUP_MIN;
	return (int) (w > CQ_SCHEDULE_WARMUP_MAX ? CQ_SCHEDULE_WARMUP_MAX : w);
}

int
cq_schedule_checkpoint_every(int64_t expected)
{
	int64_t		c;

	if (expected <= 0)
		return CQ_SCHEDULE_CHECKPOINT_MAX;
	c = (expected + CQ_SCHEDULE_CHECKPOINTS - 1) / CQ_SCHEDULE_CHECKPOINTS;
	return (int) (c > CQ_SCHEDULE_CHECKPOINT_MAX ? CQ_SCHEDULE_CHECKPOINT_MAX : c);
}

void
cq_calibration_start(cq_calibration *c, double budget_seconds)
{
	*c = (cq_calibration) {budget_seconds, 0, 0.0, 0.0};
}

bool
cq_calibration_more(const cq_calibration *c)
{
	if (c->passes == 0)
		return true;
	return c->passes <= CQ_SCHEDULE_CALIBRATION_PASSES &&
		cq_calibration_seconds(c) < CQ_SCHEDULE_CALIBRATION_SHARE * c->budget;
}

void
cq_calibration_add(cq_calibration *c, double seconds)
{
	if (c->passes++ == 0)
		c->first = seconds;
	else
		c->timed += seconds;
}

double
cq_calibration_seconds(const cq_calibration *c)
{
	return c->first + c->timed;
}

double
cq_calibration_seconds_per_update(const cq_calibration *c)
{
	return c->passes >= 2 ? c->timed / (c->passes - 1) : NAN;
}

int64_t
cq_schedule_expected_updates(double seconds_left, double seconds_per_update)
{
	double		e;

	if (!(seconds_per_update > 0) || !isfinite(seconds_per_update))
		return 0;
	e = floor(seconds_left / seconds_per_update);
	if (!(e >= 1))
		return 1;
	return e > 1e15 ? (int64_t) 1e15 : (int64_t) e;
}
