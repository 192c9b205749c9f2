/*
 * corpq.temperature_weights(size bigint, tau float8): window function giving
 * temperature-scaled corpus shares (MultiUAT Eq. 4, fairseq's sampling):
 *
 *     q(n) = size_n / sum size,   q_tau(n) = q(n)^(1/tau) / sum_i q(i)^(1/tau)
 *
 * The sum of sizes cancels, so with m = max_i ln(size_i)
 * q_tau(n) = exp((ln(size_n) - m)/tau - LSE_i (ln(size_i) - m)/tau), computed
 * in log space (sizes up to 2^62, any normal tau).  The partition is read
 * twice, on its first row; every row after costs O(1).
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
	double		log_max;		/* the largest ln(size) */
	double		log_norm;		/* LSE over rows of (ln(size) - log_max)/tau */
	int64		nonzero;		/* rows with size > 0 */
} tw_partition;

/*
 * tau: a normal positive number or +infinity.  A subnormal tau overflows
 * 1/tau, and 0, negatives and NaN have no meaning.
 */
static void
check_tau(double tau)
{
	if (!(tau > 0) || !(isnormal(tau) || isinf(tau)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("temperature tau must be a normal positive number, got %g", tau),
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
 * Two passes over the partition: find tau (the same on every row with a
 * size) and the largest ln(size), then the log-sum-exp of
 * (ln(size) - ln(max size)) / tau.  Every term is <= 0 and the largest is 0,
 * so nothing overflows however small tau is (1/tau alone may be huge).
 */
static void
scan_partition(WindowObject win, tw_partition *part)
{
	Datum		size_d,
				tau_d;
	bool		size_null,
				tau_null;
	bool		have_tau = false;
	double		sum = 0.0;

	part->log_max = -INFINITY;
	for (int64 i = 0; fetch_row(win, i, &size_d, &size_null, &tau_d, &tau_null); i++)
	{
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
		part->log_max = Max(part->log_max, log((double) DatumGetInt64(size_d)));
	}
	if (have_tau && part->nonzero == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("every corpus size in the window partition is zero"),
				 errhint("Temperature shares need at least one corpus with a positive size.")));
	for (int64 i = 0; part->nonzero > 0 && !isinf(part->tau) &&
		 fetch_row(win, i, &size_d, &size_null, &tau_d, &tau_null); i++)
	{
		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!size_null && !tau_null && DatumGetInt64(size_d) > 0)
			sum += exp((log((double) DatumGetInt64(size_d)) - part->log_max) / part->tau);
	}
	part->log_norm = log(sum);
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
	PG_RETURN_FLOAT8(exp((log((double) size) - part->log_max) / part->tau - part->log_norm));
}
