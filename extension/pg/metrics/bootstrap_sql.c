/*
 * paired_bootstrap(system_a, system_b, ref [, n [, seed [, options]]]):
 * Koehn's (2004) paired bootstrap resampling as sacreBLEU computes it
 * (metrics/bootstrap.h), as an aggregate returning corpq.bootstrap_result.
 *
 * The state keeps one row of sentence statistics per (a, b, ref) triple --
 * resampling needs them per sentence, so unlike bleu() the state grows with
 * the input (2 x 10 int32 per row for BLEU: 80 bytes) and is internal, with
 * serial/deserial functions for parallel workers.  The final function
 * resamples a copy in canonical order, so the result is the same however the
 * rows were split and ordered by the plan.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "metrics/bootstrap.h"
#include "pg/base/errors.h"
#include "pg/metrics/metrics.h"

PG_FUNCTION_INFO_V1(corpq_paired_bootstrap_trans);
PG_FUNCTION_INFO_V1(corpq_paired_bootstrap_combine);
PG_FUNCTION_INFO_V1(corpq_paired_bootstrap_serial);
PG_FUNCTION_INFO_V1(corpq_paired_bootstrap_deserial);
PG_FUNCTION_INFO_V1(corpq_paired_bootstrap_final);

#define DEFAULT_RESAMPLES 1000
#define DEFAULT_SEED 12345		/* sacreBLEU's SACREBLEU_SEED default */
#define MAX_RESAMPLES 1000000
#define SERIAL_MAGIC 0x63716273	/* "cqbs" */

typedef struct BootState
{
	int32		n;				/* resamples */
	int64		seed;
	int64		options[3];		/* tag-less packed options: kind, word, value */
	int32		width;			/* int32 values per row: both systems */
	int64		nrows;
	int64		cap;
	int32	   *rows;
} BootState;

static BootState *
state_new(MemoryContext cxt, int32 n, int64 seed, const MetricOptions *o)
{
	BootState  *st = MemoryContextAllocZero(cxt, sizeof(BootState));

	st->n = n;
	st->seed = seed;
	st->options[0] = o->kind;
	metrics_options_pack(o, &st->options[1], &st->options[2]);
	st->width = 2 * metrics_nstats(o);
	return st;
}

static void
reserve_rows(BootState *st, MemoryContext cxt, int64 more)
{
	int64		need = st->nrows + more;

	if (need <= st->cap)
		return;
	st->cap = Max(need, Max(st->cap * 2, 1024));
	st->rows = st->rows == NULL ?
		MemoryContextAllocHuge(cxt, st->cap * st->width * sizeof(int32)) :
		repalloc_huge(st->rows, st->cap * st->width * sizeof(int32));
}

static void
check_same(const BootState *st, int32 n, int64 seed, const MetricOptions *o)
{
	int64		word,
				bits;

	metrics_options_pack(o, &word, &bits);
	if (st->n != n || st->seed != seed || st->options[0] != o->kind ||
		st->options[1] != word || st->options[2] != bits)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("paired_bootstrap's n, seed and options must be the same in every row")));
}

static int32
arg_n(FunctionCallInfo fcinfo)
{
	int32		n;

	if (PG_NARGS() <= 4)
		return DEFAULT_RESAMPLES;
	if (PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("paired_bootstrap's n must not be null")));
	n = PG_GETARG_INT32(4);
	if (n < 1 || n > MAX_RESAMPLES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("paired_bootstrap's n must be between 1 and %d, not %d", MAX_RESAMPLES, n)));
	return n;
}

static int64
arg_seed(FunctionCallInfo fcinfo)
{
	if (PG_NARGS() <= 5)
		return DEFAULT_SEED;
	if (PG_ARGISNULL(5))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("paired_bootstrap's seed must not be null")));
	return PG_GETARG_INT64(5);
}

/* Sentence statistics as int32 (a sentence's counts are below 2^31: texts
 * are at most CQ_METRICS_MAX_TEXT bytes). */
static void
append_row(BootState *st, MemoryContext cxt, const int64 *a, const int64 *b)
{
	int			half = st->width / 2;
	int32	   *dst;

	reserve_rows(st, cxt, 1);
	dst = st->rows + st->nrows * st->width;
	for (int i = 0; i < half; i++)
	{
		Assert(a[i] >= 0 && a[i] <= PG_INT32_MAX && b[i] >= 0 && b[i] <= PG_INT32_MAX);
		dst[i] = (int32) a[i];
		dst[half + i] = (int32) b[i];
	}
	st->nrows++;
}

/* (state, a, b, ref [, n [, seed [, options]]]) -> state; NULL a, b or ref skips the row */
Datum
corpq_paired_bootstrap_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	BootState  *st = PG_ARGISNULL(0) ? NULL : (BootState *) PG_GETARG_POINTER(0);
	MetricsCache *c;
	const MetricOptions *o;
	int32		n;
	int64		seed;
	int64		ra[CQ_CHRF_MAX_STATS],
				rb[CQ_CHRF_MAX_STATS];

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "corpq_paired_bootstrap_trans called in non-aggregate context");
	n = arg_n(fcinfo);
	seed = arg_seed(fcinfo);
	if (PG_NARGS() > 6 && PG_ARGISNULL(6))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("paired_bootstrap's options must not be null")));
	c = metrics_cache(fcinfo);
	o = metrics_cached_options(fcinfo, c, 6, METRIC_BLEU, false, true);
	if (st == NULL)
		st = state_new(aggcxt, n, seed, o);
	else
		check_same(st, n, seed, o);
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		PG_RETURN_POINTER(st);
	metrics_sentence_row(c, o, PG_GETARG_TEXT_PP(1), PG_GETARG_TEXT_PP(3), ra);
	metrics_sentence_row(c, o, PG_GETARG_TEXT_PP(2), PG_GETARG_TEXT_PP(3), rb);
	append_row(st, aggcxt, ra, rb);
	PG_RETURN_POINTER(st);
}

Datum
corpq_paired_bootstrap_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	BootState  *a = PG_ARGISNULL(0) ? NULL : (BootState *) PG_GETARG_POINTER(0),
			   *b = PG_ARGISNULL(1) ? NULL : (BootState *) PG_GETARG_POINTER(1);

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "corpq_paired_bootstrap_combine called in non-aggregate context");
	if (b == NULL)
		PG_RETURN_POINTER(a);
	if (a == NULL)
	{
		/* b may live in another context: a copy of it in ours */
		a = MemoryContextAllocZero(aggcxt, sizeof(BootState));
		*a = *b;
		a->rows = NULL;
		a->nrows = a->cap = 0;
	}
	else if (a->n != b->n || a->seed != b->seed || a->width != b->width ||
			 memcmp(a->options, b->options, sizeof(a->options)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("paired_bootstrap's n, seed and options must be the same in every row")));
	if (b->nrows > 0)
	{
		reserve_rows(a, aggcxt, b->nrows);
		memcpy(a->rows + a->nrows * a->width, b->rows, b->nrows * b->width * sizeof(int32));
		a->nrows += b->nrows;
	}
	PG_RETURN_POINTER(a);
}

Datum
corpq_paired_bootstrap_serial(PG_FUNCTION_ARGS)
{
	BootState  *st = (BootState *) PG_GETARG_POINTER(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint32(&buf, SERIAL_MAGIC);
	pq_sendint32(&buf, st->n);
	pq_sendint64(&buf, st->seed);
	for (int i = 0; i < 3; i++)
		pq_sendint64(&buf, st->options[i]);
	pq_sendint32(&buf, st->width);
	pq_sendint64(&buf, st->nrows);
	for (int64 i = 0; i < st->nrows * st->width; i++)
		pq_sendint32(&buf, st->rows[i]);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

Datum
corpq_paired_bootstrap_deserial(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);
	MemoryContext aggcxt;
	StringInfoData buf;
	BootState  *st;
	MetricOptions o;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "corpq_paired_bootstrap_deserial called in non-aggregate context");
	buf.data = VARDATA_ANY(b);
	buf.len = VARSIZE_ANY_EXHDR(b);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	st = MemoryContextAllocZero(aggcxt, sizeof(BootState));
	if (pq_getmsgint(&buf, 4) != SERIAL_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("malformed paired_bootstrap state")));
	st->n = pq_getmsgint(&buf, 4);
	st->seed = pq_getmsgint64(&buf);
	for (int i = 0; i < 3; i++)
		st->options[i] = pq_getmsgint64(&buf);
	st->width = pq_getmsgint(&buf, 4);
	st->nrows = pq_getmsgint64(&buf);
	/* the options must decode, and the width and length agree with them */
	if (st->options[0] != METRIC_BLEU && st->options[0] != METRIC_CHRF)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("malformed paired_bootstrap state")));
	metrics_options_unpack(metrics_state_tag((MetricKind) st->options[0]), st->options[1],
						   st->options[2], &o);
	if (st->n < 1 || st->n > MAX_RESAMPLES || st->width != 2 * metrics_nstats(&o) || st->nrows < 0 ||
		(uint64) st->nrows * st->width * sizeof(int32) != (uint64) (buf.len - buf.cursor))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("malformed paired_bootstrap state")));
	reserve_rows(st, aggcxt, st->nrows);
	for (int64 i = 0; i < st->nrows * st->width; i++)
		st->rows[i] = pq_getmsgint(&buf, 4);
	pq_getmsgend(&buf);
	PG_RETURN_POINTER(st);
}

static void
tick(void *ctx)
{
	CHECK_FOR_INTERRUPTS();
}

static double
score_row(const int64 *sum, const void *ctx)
{
	return metrics_score_row(ctx, sum);
}

/* -> corpq.bootstrap_result; NULL when no row had a, b and ref */
Datum
corpq_paired_bootstrap_final(PG_FUNCTION_ARGS)
{
	BootState  *st = PG_ARGISNULL(0) ? NULL : (BootState *) PG_GETARG_POINTER(0);
	MetricOptions o;
	TupleDesc	desc;
	int32	   *rows;
	double		score_a,
				score_b;
	cq_bootstrap_result res;
	cq_error	err;
	Datum		values[9];
	bool		nulls[9] = {0};

	if (st == NULL || st->nrows == 0)
		PG_RETURN_NULL();
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "paired_bootstrap must return a composite type");
	metrics_options_unpack(metrics_state_tag((MetricKind) st->options[0]), st->options[1], st->options[2], &o);
	/* resample a copy: the final function leaves the state as it found it */
	rows = palloc_extended(st->nrows * st->width * sizeof(int32), MCXT_ALLOC_HUGE);
	memcpy(rows, st->rows, st->nrows * st->width * sizeof(int32));
	if (cq_bootstrap_paired(rows, st->nrows, st->width, st->n, (uint64) st->seed, score_row, &o,
							tick, NULL, &score_a, &score_b, &res, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not run the paired bootstrap");
	pfree(rows);
	values[0] = Float8GetDatum(score_a);
	values[1] = Float8GetDatum(score_b);
	values[2] = Float8GetDatum(res.p_value);
	values[3] = Float8GetDatum(res.mean_a);
	values[4] = Float8GetDatum(res.ci_a);
	values[5] = Float8GetDatum(res.mean_b);
	values[6] = Float8GetDatum(res.ci_b);
	values[7] = Int32GetDatum(st->n);
	values[8] = Int64GetDatum(st->nrows);
	desc = BlessTupleDesc(desc);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
