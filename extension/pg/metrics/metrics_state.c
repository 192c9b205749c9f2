/*
 * The aggregate state of bleu() and chrf(): a bigint[]
 *
 *   [0] tag       which metric and layout (METRIC_TAG_BLEU, METRIC_TAG_CHRF)
 *   [1] options   the options packed into one word (metrics_options_pack)
 *   [2] value     the IEEE-754 bits of BLEU's smoothing value / chrF's beta
 *   [3..]         the summed sufficient statistics, sacreBLEU's order
 *
 * A plain array rather than internal: partial states travel between
 * parallel workers, postgres_fdw and Citus nodes as an ordinary value (no
 * serial/deserial functions), they read back in text (`{...}`), and the
 * combine function is an element-wise sum.  The options travel with the
 * statistics, so the final function needs nothing else and two partial
 * states computed with different options are refused, not mixed.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"

#include "pg/metrics/metrics.h"

#define METRIC_TAG_BLEU ((INT64CONST(0x424C4555) << 16) | 1)	/* "BLEU", layout 1 */
#define METRIC_TAG_CHRF ((INT64CONST(0x63687246) << 16) | 1)	/* "chrF", layout 1 */
#define HEADER 3

static void
malformed(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("malformed BLEU or chrF aggregate state")));
}

static int64
double_bits(double x)
{
	int64		b;

	memcpy(&b, &x, sizeof(b));
	return b;
}

static double
bits_double(int64 b)
{
	double		x;

	memcpy(&x, &b, sizeof(x));
	return x;
}

int64
metrics_state_tag(MetricKind kind)
{
	return kind == METRIC_BLEU ? METRIC_TAG_BLEU : METRIC_TAG_CHRF;
}

void
metrics_options_pack(const MetricOptions *o, int64 *word, int64 *value_bits)
{
	if (o->kind == METRIC_BLEU)
	{
		const cq_bleu_options *b = &o->bleu;

		*word = (int64) b->tokenize | (int64) b->lowercase << 4 | (int64) b->smooth << 8 |
			(int64) b->effective_order << 12 | (int64) b->max_order << 16;
		*value_bits = double_bits(b->smooth_value);
	}
	else
	{
		const cq_chrf_options *c = &o->chrf;

		*word = (int64) c->char_order | (int64) c->word_order << 8 | (int64) c->lowercase << 16 |
			(int64) c->whitespace << 17 | (int64) c->eps_smoothing << 18;
		*value_bits = double_bits(c->beta);
	}
}

void
metrics_options_unpack(int64 tag, int64 word, int64 value_bits, MetricOptions *o)
{
	memset(o, 0, sizeof(*o));
	cq_bleu_options_init(&o->bleu);
	cq_chrf_options_init(&o->chrf);
	if (tag == METRIC_TAG_BLEU)
	{
		cq_bleu_options *b = &o->bleu;

		o->kind = METRIC_BLEU;
		b->tokenize = (cq_tokenizer) (word & 0xF);
		b->lowercase = (word >> 4) & 1;
		b->smooth = (cq_bleu_smooth) ((word >> 8) & 0xF);
		b->effective_order = (word >> 12) & 1;
		b->max_order = (int) ((word >> 16) & 0xFF);
		b->smooth_value = bits_double(value_bits);
		if (b->tokenize >= CQ_TOK_COUNT || b->smooth >= CQ_SMOOTH_COUNT || b->max_order < 1 ||
			b->max_order > CQ_BLEU_MAX_ORDER || !(b->smooth_value >= 0))
			malformed();
	}
	else if (tag == METRIC_TAG_CHRF)
	{
		cq_chrf_options *c = &o->chrf;

		o->kind = METRIC_CHRF;
		c->char_order = (int) (word & 0xFF);
		c->word_order = (int) ((word >> 8) & 0xFF);
		c->lowercase = (word >> 16) & 1;
		c->whitespace = (word >> 17) & 1;
		c->eps_smoothing = (word >> 18) & 1;
		c->beta = bits_double(value_bits);
		if (c->char_order < 1 || c->char_order > CQ_CHRF_MAX_CHAR_ORDER ||
			c->word_order > CQ_CHRF_MAX_WORD_ORDER || !(c->beta > 0))
			malformed();
	}
	else
		malformed();
}

ArrayType *
metrics_state_new(const MetricOptions *o)
{
	int			n = HEADER + metrics_nstats(o);
	Datum	   *d = palloc0(n * sizeof(Datum));
	int64		word,
				bits;

	metrics_options_pack(o, &word, &bits);
	d[0] = Int64GetDatum(metrics_state_tag(o->kind));
	d[1] = Int64GetDatum(word);
	d[2] = Int64GetDatum(bits);
	for (int i = HEADER; i < n; i++)
		d[i] = Int64GetDatum(0);
	return construct_array(d, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

bool
metrics_state_is_empty(ArrayType *state)
{
	return ARR_NDIM(state) == 0 || ArrayGetNItems(ARR_NDIM(state), ARR_DIMS(state)) == 0;
}

int64 *
metrics_state_stats(ArrayType *state, int *n, MetricOptions *o)
{
	MetricOptions local;
	int			items;
	int64	   *v;

	if (ARR_NDIM(state) != 1 || ARR_ELEMTYPE(state) != INT8OID || ARR_HASNULL(state))
		malformed();
	items = ArrayGetNItems(1, ARR_DIMS(state));
	if (items < HEADER)
		malformed();
	v = (int64 *) ARR_DATA_PTR(state);
	metrics_options_unpack(v[0], v[1], v[2], o ? o : &local);
	if (items != HEADER + metrics_nstats(o ? o : &local))
		malformed();
	*n = items - HEADER;
	return v + HEADER;
}

void
metrics_state_check_options(ArrayType *state, const MetricOptions *o)
{
	const int64 *v = (const int64 *) ARR_DATA_PTR(state);
	int64		word,
				bits;

	metrics_options_pack(o, &word, &bits);
	if (ARR_NDIM(state) != 1 || ArrayGetNItems(1, ARR_DIMS(state)) < HEADER ||
		v[0] != metrics_state_tag(o->kind))
		malformed();
	if (v[1] != word || v[2] != bits)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s options must be the same in every row of an aggregate",
						o->kind == METRIC_BLEU ? "BLEU" : "chrF")));
}

void
metrics_stats_add(int64 *acc, const int64 *add, int n)
{
	for (int i = 0; i < n; i++)
		if (pg_add_s64_overflow(acc[i], add[i], &acc[i]))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("BLEU or chrF statistics out of range for bigint")));
}
