/*
 * corpq.temperature_weights(size bigint, tau float8): window function giving
 * temperature-scaled corpus shares (MultiUAT Eq. 4, fairseq's sampling):
 *
 *     q(n) = size_n / sum size,   q_tau(n) = q(n)^(1/tau) / sum_i q(i)^(1/tau)
 *
 * The sum of sizes cancels, so q_tau(n) = exp(ln(size_n)/tau - LSE_i ln(size_i)/tau),
 * computed in log space (sizes up to 2^62, tau up to 1e6 and beyond).  The
 * partition is read once, on its first row; every row after costs O(1).
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/float.h"
#include "windowapi.h"

typedef struct tw_partition
{
	bool		ready;
	double		tau;			/* tau of the partition's rows */
	double		log_norm;		/* LSE over rows of ln(size)/tau */
	int64		nonzero;		/* rows with size > 0 */
} tw_partition;

static void
check_tau(double tau)
{
	if (isnan(tau) || tau <= 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("temperature tau must be positive, got %g", tau),
				 errhint("Use tau = 1 for proportional shares and tau = 'infinity' for uniform shares.")));
}

static void
check_size(int64 size)
{
	if (size < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("corpus size must not be negative, got " INT64_FORMAT, size)));
}

/* Fetch row i's arguments; false past the partition's end. */
static bool
fetch_row(WindowObject win, int64 i, Datum *size, bool *size_null,
		  Datum *tau, bool *tau_null)
{
	bool		out;

	*size = WinGetFuncArgInPartition(win, 0, i, WINDOW_SEEK_HEAD, false,
									 size_null, &out);
	if (out)
		return false;
	*tau = WinGetFuncArgInPartition(win, 1, i, WINDOW_SEEK_HEAD, false,
									tau_null, &out);
	return true;
}

/*
 * One pass over the partition: find tau (the same on every row with a size)
 * and the log-sum-exp of ln(size)/tau with a running maximum.
 */
static void
scan_partition(WindowObject win, tw_partition *part)
{
	Datum		size_d,
				tau_d;
	bool		size_null,
				tau_null;
	bool		have_tau = false;
	double		max_term = -INFINITY,
				scaled_sum = 0.0;

	for (int64 i = 0; fetch_row(win, i, &size_d, &size_null, &tau_d, &tau_null); i++)
	{
		double		term;

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (size_null || tau_null)
			continue;
		check_size(DatumGetInt64(size_d));
		if (!have_tau)
		{
			part->tau = DatumGetFloat8(tau_d);
			check_tau(part->tau);
			have_tau = true;
		}
		else if (DatumGetFloat8(tau_d) != part->tau)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("temperature tau must be the same for every row of a window partition")));
		if (DatumGetInt64(size_d) == 0)
			continue;
		part->nonzero++;
		/* tau = infinity: every non-empty corpus weighs the same */
		term = isinf(part->tau) ? 0.0 : log((double) DatumGetInt64(size_d)) / part->tau;
		if (term > max_term)
		{
			scaled_sum = scaled_sum * exp(max_term - term) + 1.0;
			max_term = term;
		}
		else
			scaled_sum += exp(term - max_term);
	}
	if (have_tau && part->nonzero == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("every corpus size in the window partition is zero"),
				 errhint("Temperature shares need at least one corpus with a positive size.")));
	part->log_norm = max_term + log(scaled_sum);
	part->ready = true;
}

PG_FUNCTION_INFO_V1(corpq_temperature_weights);

Datum
corpq_temperature_weights(PG_FUNCTION_ARGS)
{
	WindowObject win = PG_WINDOW_OBJECT();
	tw_partition *part;
	bool		size_null,
				tau_null;
	int64		size;

	part = (tw_partition *) WinGetPartitionLocalMemory(win, sizeof(tw_partition));
	if (!part->ready)
		scan_partition(win, part);

	size = DatumGetInt64(WinGetFuncArgCurrent(win, 0, &size_null));
	(void) WinGetFuncArgCurrent(win, 1, &tau_null);
	if (size_null || tau_null)
		PG_RETURN_NULL();
	if (size == 0)
		PG_RETURN_FLOAT8(0.0);
	if (isinf(part->tau))
		PG_RETURN_FLOAT8(1.0 / (double) part->nonzero);
	PG_RETURN_FLOAT8(exp(log((double) size) / part->tau - part->log_norm));
}
