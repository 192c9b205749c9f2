/*
 * The SQL side of the evaluation metrics (extension/metrics): option
 * parsing, the per-query cache of the transition functions and the bigint[]
 * aggregate state, shared by metrics_agg.c (bleu(), chrf()), metrics_sql.c
 * (the scalar functions) and bootstrap_sql.c.
 */
#ifndef CORPQ_PG_METRICS_H
#define CORPQ_PG_METRICS_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"
#include "utils/jsonb.h"

#include "metrics/bleu.h"
#include "metrics/chrf.h"
#include "metrics/work.h"

typedef enum MetricKind
{
	METRIC_BLEU,
	METRIC_CHRF
} MetricKind;

/* The options of one metric, as parsed from jsonb. */
typedef struct MetricOptions
{
	MetricKind	kind;
	cq_bleu_options bleu;
	cq_chrf_options chrf;
} MetricOptions;

/* ---- metrics_options.c ---------------------------------------------------- */

/*
 * Parse options (NULL: defaults) for kind; sentence-level BLEU defaults to
 * the effective order, as sacreBLEU's sentence_bleu does.  Unknown keys and
 * bad values are ERRORs naming the valid ones.
 */
void		metrics_options_parse(MetricKind kind, bool sentence, Jsonb *options, MetricOptions *o);

/* paired_bootstrap's options: "metric" plus that metric's options. */
void		metrics_bootstrap_options_parse(Jsonb *options, MetricOptions *o);

/* ---- metrics_cache.c ----------------------------------------------------- */

/*
 * What a function keeps for the query in fn_extra: the workspace of the core
 * (in fn_mcxt, reused row after row) and the last options seen with their
 * parse, so a constant options argument is parsed once.
 */
typedef struct MetricsCache
{
	MemoryContext mcxt;
	cq_metrics_work work;
	Jsonb	   *last_jsonb;		/* copy in mcxt; NULL: defaults parsed */
	bool		parsed;
	MetricOptions options;
} MetricsCache;

MetricsCache *metrics_cache(FunctionCallInfo fcinfo);

/* The options of argument argno (absent: defaults), parsed at most once per
 * distinct value.  bootstrap selects metrics_bootstrap_options_parse. */
const MetricOptions *metrics_cached_options(FunctionCallInfo fcinfo, MetricsCache *c, int argno,
											MetricKind kind, bool sentence, bool bootstrap);

/* The UTF-8 bytes of a text argument (converted from the database encoding). */
void		metrics_text_utf8(text *t, const char **s, size_t *len);

/* The sentence statistics of (hyp, ref) as a flat row (sacreBLEU's order),
 * nstats values; ERROR on a core failure. */
int			metrics_nstats(const MetricOptions *o);
void		metrics_sentence_row(MetricsCache *c, const MetricOptions *o,
								 text *hyp, text *ref, int64 *row);
double		metrics_score_row(const MetricOptions *o, const int64 *row);

/* ---- metrics_state.c ---------------------------------------------------- */

/*
 * The aggregate state, a bigint[]: [tag, packed options, option value bits,
 * statistics...].  An empty array is the initial state (no row yet).
 */
ArrayType  *metrics_state_new(const MetricOptions *o);

/* The statistics of a non-empty state (ERROR if the state is malformed);
 * *n their number; options decoded into o if not NULL. */
int64	   *metrics_state_stats(ArrayType *state, int *n, MetricOptions *o);

bool		metrics_state_is_empty(ArrayType *state);

/* ERROR unless the options equal those the state was started with. */
void		metrics_state_check_options(ArrayType *state, const MetricOptions *o);

/* acc += add, element-wise; ERROR on overflow (2^63 n-grams: never in practice). */
void		metrics_stats_add(int64 *acc, const int64 *add, int n);

/* The tag a state of this metric starts with. */
int64		metrics_state_tag(MetricKind kind);

/* The packed form of the options (two words), as stored in states. */
void		metrics_options_pack(const MetricOptions *o, int64 *word, int64 *value_bits);
void		metrics_options_unpack(int64 tag, int64 word, int64 value_bits, MetricOptions *o);

#endif
