/*
 * The schedule a train job fixes before its first update (docs/training.md, "How a
 * budgeted run is scheduled"): the updates it expects and which budget says
 * so, the warm-up and the checkpoint and validation cadence derived from
 * them (the rules are nn/train/schedule.h's), and a time budget's calibration.
 * Its JSON goes into every checkpoint's cursor, the first train_log row and
 * the result; a resumed run restores it instead of planning again, so it
 * keeps the same numbers (the warm-up also lives in the core's state image).
 */
#ifndef CORPQ_TRAIN_SCHEDULE_H
#define CORPQ_TRAIN_SCHEDULE_H

#include "pg/train/train.h"

typedef struct TrainSchedule
{
	int64		expected;		/* updates expected, 0 unknown */
	double		lr;				/* peak learning rate */
	int			warmup;
	int			checkpoint_every;
	int			validate_every;
	double		calibration_seconds;	/* spent calibrating, 0 none */
	char	   *json;			/* all of it, with its reasons */
} TrainSchedule;

/* Seconds one calibration pass took: the gradients of update k, not applied. */
typedef double (*TrainCalibrationPass) (void *arg, int k);

/*
 * Plan a fresh run of a model of width d_model: the peak learning rate,
 * expected updates from the step budget, else the fewer of epoch_updates
 * (epochs in batches) and what the time left after calibrating allows (a
 * time budget calls pass() for the calibration); explicit lr, warmup,
 * checkpoint_every and validate_every options win.  In CurrentMemoryContext.
 */
void		train_schedule_plan(const TrainOptions *o, int d_model, int64 epoch_updates,
								double seconds_spent, TrainCalibrationPass pass, void *arg,
								TrainSchedule *s);

/* The schedule saved in a checkpoint (json as the plan wrote it). */
void		train_schedule_restore(const char *json, TrainSchedule *s);

#endif
