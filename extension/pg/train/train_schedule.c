/*
 * A train job's schedule: which budget fixes the updates it expects, the
 * calibration of a time budget, the derived warm-up and cadences, and their
 * JSON (train_schedule.h).  The arithmetic is the core's (nn/train/schedule.h).
 */
#include "postgres.h"

#include <math.h>

#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "nn/train/schedule.h"
#include "pg/base/options.h"
#include "pg/train/train_schedule.h"

static char *
num_or_null(double x)
{
	return isfinite(x) ? psprintf("%.6g", x) : pstrdup("null");
}

void
train_schedule_plan(const TrainOptions *o, int d_model, int64 epoch_updates, double seconds_spent,
					TrainCalibrationPass pass, void *arg, TrainSchedule *s)
{
	const char *from = NULL;
	double		per_update = NAN;
	cq_calibration cal;
	bool		calibrated = false;
	char	   *note = NULL;
	StringInfoData b;

	memset(s, 0, sizeof(*s));
	if (o->steps > 0)
	{
		/* an explicit step budget wins over the others */
		s->expected = o->steps;
		from = "steps";
	}
	else
	{
		if (o->epochs > 0)
		{
			s->expected = Max(epoch_updates, 1);
			from = "epochs";
		}
		if (o->max_seconds > 0)
		{
			double		left = o->max_seconds - seconds_spent;
			int64		by_time;

			cq_calibration_start(&cal, left);
			while (cq_calibration_more(&cal))
				cq_calibration_add(&cal, pass(arg, cal.passes));
			calibrated = true;
			s->calibration_seconds = cq_calibration_seconds(&cal);
			per_update = cq_calibration_seconds_per_update(&cal);
			by_time = cq_schedule_expected_updates(left - s->calibration_seconds, per_update);
			if (by_time > 0 && (s->expected == 0 || by_time < s->expected))
			{
				s->expected = by_time;
				from = "max_seconds";
			}
			if (by_time == 0)
				note = psprintf("max_seconds = %g is too short to measure an update rate: the first "
								"update's gradients took %.3g s, more than %g%% of the budget",
								o->max_seconds, cal.first, 100 * CQ_SCHEDULE_CALIBRATION_SHARE);
		}
	}
	s->warmup = o->warmup >= 0 ? o->warmup : cq_schedule_warmup(s->expected);
	s->lr = o->lr > 0 ? o->lr : cq_schedule_default_lr(d_model, s->warmup);
	if (note && s->expected == 0 && o->warmup < 0)
		note = psprintf("%s; warm-up is the documented minimum of %d updates", note, s->warmup);
	s->checkpoint_every = o->checkpoint_every > 0 ? o->checkpoint_every
		: cq_schedule_checkpoint_every(s->expected);
	s->validate_every = o->validate_every > 0 ? o->validate_every : s->checkpoint_every;

	initStringInfo(&b);
	appendStringInfoString(&b, "{\"lr\": ");
	corpq_json_number(&b, s->lr);
	appendStringInfo(&b, ", \"lr_from\": \"%s\", \"expected_updates\": ",
					 o->lr > 0 ? "option" : "default");
	if (s->expected > 0)
		appendStringInfo(&b, INT64_FORMAT ", \"expected_from\": \"%s\"", s->expected, from);
	else
		appendStringInfoString(&b, "null, \"expected_from\": null");
	appendStringInfo(&b, ", \"warmup\": %d, \"warmup_from\": \"%s\""
					 ", \"checkpoint_every\": %d, \"validate_every\": %d",
					 s->warmup,
					 o->warmup >= 0 ? "option" : s->expected > 0 ? "expected_updates" : "minimum",
					 s->checkpoint_every, s->validate_every);
	if (calibrated)
		appendStringInfo(&b, ", \"calibration\": {\"passes\": %d, \"seconds\": %s"
						 ", \"seconds_per_update\": %s}",
						 cal.passes, num_or_null(s->calibration_seconds), num_or_null(per_update));
	if (note)
	{
		appendStringInfoString(&b, ", \"note\": ");
		escape_json(&b, note);
	}
	appendStringInfoChar(&b, '}');
	s->json = b.data;
}

/*
 * The integer at key of a checkpoint's schedule, within [lo, hi]; null and
 * absent read as dflt.  The job wrote it, but a worker trusts no row.
 */
static int64
json_int(Jsonb *j, const char *json, const char *key, int64 dflt, int64 lo, int64 hi)
{
	JsonbValue	v;
	double		d;

	if (getKeyJsonValueFromContainer(&j->root, key, strlen(key), &v) == NULL || v.type == jbvNull)
		return dflt;
	if (v.type != jbvNumeric)
		d = NAN;
	else
		d = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v.val.numeric)));
	if (!(d >= lo && d <= hi) || d != floor(d))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the schedule saved in a training checkpoint has an invalid \"%s\"", key),
				 errdetail("Expected an integer from " INT64_FORMAT " to " INT64_FORMAT "; the schedule is %s.",
						   lo, hi, json)));
	return (int64) d;
}

void
train_schedule_restore(const char *json, TrainSchedule *s)
{
	Jsonb	   *j = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(json)));

	if (!JB_ROOT_IS_OBJECT(j) || JB_ROOT_IS_SCALAR(j))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the schedule saved in a training checkpoint is not a JSON object")));
	memset(s, 0, sizeof(*s));
	s->expected = json_int(j, json, "expected_updates", 0, 1, PG_INT64_MAX / 2);
	s->warmup = (int) json_int(j, json, "warmup", -1, 0, PG_INT32_MAX);
	s->checkpoint_every = (int) json_int(j, json, "checkpoint_every", -1, 1, PG_INT32_MAX);
	s->validate_every = (int) json_int(j, json, "validate_every", -1, 1, PG_INT32_MAX);
	if (s->warmup < 0 || s->checkpoint_every < 1 || s->validate_every < 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the schedule saved in a training checkpoint is incomplete"),
				 errdetail("The schedule is %s.", json)));
	s->json = pstrdup(json);
}
