/*
 * UncSamp sampling weights (thesis Eqs. 6.6-6.7) and Efraimidis-Spirakis
 * keys for weighted sampling without replacement in SQL:
 *   U' = U if U <= U_max else max(2 U_max - U, 0),   w = U'^beta
 * (the thesis writes alpha U with alpha = max(2 U_max / U - 1, 0), the same);
 *   key = r^(1/w), r uniform in (0, 1),
 * so ORDER BY key DESC LIMIT k draws k rows without replacement, each next
 * row with probability proportional to w among the rest.  Rows of weight 0
 * (or a NULL uncertainty) get key -1, below every positive-weight key.
 */
#include "postgres.h"

#include <math.h>

#include "common/pg_prng.h"
#include "fmgr.h"
#include "utils/float.h"

#include "pg/base/errors.h"

static double
weight(double u, double u_max, double beta)
{
	double		up;

	if (isnan(u) || isnan(u_max) || isnan(beta))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("uncsamp arguments must not be NaN")));
	if (u < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("uncertainty must not be negative: %g", u)));
	if (!(u_max > 0) || isinf(u_max))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("u_max must be positive and finite: %g", u_max),
				 errhint("Take U_max as the uncertainty at the R%% point (R = 80 to 100) of the parallel data's sources.")));
	if (beta < 0 || isinf(beta))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("beta must be non-negative and finite: %g", beta)));
	up = u <= u_max ? u : fmax(2 * u_max - u, 0.0);
	return pow(up, beta);
}

/* splitmix64's finaliser: a bijective mix of 64 bits. */
static uint64
mix64(uint64 z)
{
	z = (z ^ (z >> 30)) * UINT64CONST(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64CONST(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Uniform in (0, 1) from (id, seed): 53 bits, never 0 or 1. */
static double
hash_uniform(int64 id, int64 seed)
{
	uint64		z = mix64((uint64) seed + UINT64CONST(0x9e3779b97f4a7c15));

	z = mix64(z ^ ((uint64) id * UINT64CONST(0x9e3779b97f4a7c15) + UINT64CONST(0x632be59bd9b4e019)));
	return ((double) (z >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double
es_key(double w, double r)
{
	if (!(w > 0))
		return -1.0;
	return exp(log(r) / w);
}

/* NULL in u (no uncertainty) weighs 0; NULL in u_max or beta is an error. */
PG_FUNCTION_INFO_V1(corpq_uncsamp_weight);

Datum
corpq_uncsamp_weight(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(weight(PG_GETARG_FLOAT8(0), PG_GETARG_FLOAT8(1), PG_GETARG_FLOAT8(2)));
}

PG_FUNCTION_INFO_V1(corpq_uncsamp_seeded);

Datum
corpq_uncsamp_seeded(PG_FUNCTION_ARGS)
{
	double		w;

	corpq_require_arg(fcinfo, 1, "u_max");
	corpq_require_arg(fcinfo, 2, "beta");
	if (PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("id must not be NULL"),
				 errhint("Pass a row id for a reproducible key, or call corpq.uncsamp(u, u_max, beta) for a random one.")));
	corpq_require_arg(fcinfo, 4, "seed");
	w = PG_ARGISNULL(0) ? 0.0 :
		weight(PG_GETARG_FLOAT8(0), PG_GETARG_FLOAT8(1), PG_GETARG_FLOAT8(2));
	PG_RETURN_FLOAT8(es_key(w, hash_uniform(PG_GETARG_INT64(3), PG_GETARG_INT64(4))));
}

PG_FUNCTION_INFO_V1(corpq_uncsamp_random);

Datum
corpq_uncsamp_random(PG_FUNCTION_ARGS)
{
	double		w;
	double		r;

	corpq_require_arg(fcinfo, 1, "u_max");
	corpq_require_arg(fcinfo, 2, "beta");
	w = PG_ARGISNULL(0) ? 0.0 :
		weight(PG_GETARG_FLOAT8(0), PG_GETARG_FLOAT8(1), PG_GETARG_FLOAT8(2));
	/* pg_prng_double is in [0, 1); 0 would give key 0 for every weight */
	do
		r = pg_prng_double(&pg_global_prng_state);
	while (r == 0.0);
	PG_RETURN_FLOAT8(es_key(w, r));
}
