/*
 * The filters every pipeline applies to its synthetic pairs (a model's
 * translations: rejuvenated targets, self-training's teacher outputs) before
 * a model trains on them, one mechanism for both pipelines:
 *
 *   drop_cut   (true)  drop a hypothesis cut at the length limit (translate's
 *                      finished false): it ran on, and a model trained on it
 *                      learns to run on;
 *   max_words  (250)   drop a pair whose source has more words;
 *   max_ratio  (1.5)   drop a pair whose longer side has more than max_ratio
 *                      times the words of the shorter (or an empty side);
 *   repetition (2)     drop a hypothesis in which a string of 3 to 101
 *                      characters follows itself at least this many more
 *                      times (corpq.repetition(), OpusFilter's
 *                      RepetitionFilter and its defaults; 0: off): a model
 *                      caught in a loop ("de la lista de la lista de la
 *                      lista"), and one trained on loops learns to loop;
 *   max_xent   (unset) drop a hypothesis whose cross-entropy per token,
 *                      minus its search score (-logprob / (len + 1)^lenpen,
 *                      nats per token with the default lenpen 1), is above
 *                      it: the "minimum length-normalised score" as a
 *                      positive bound.
 *
 * Words are whitespace-separated.  A pair is kept when no filter drops it;
 * the stage's output counts, per filter, the pairs it drops (a pair may be
 * dropped by several) and the untranslated ones (NULL source).
 */
#ifndef CORPQ_PIPELINE_SYNTHETIC_H
#define CORPQ_PIPELINE_SYNTHETIC_H

#include "postgres.h"

#include "pg/base/options.h"

typedef struct PipelineSynthetic
{
	bool		drop_cut;
	int			max_words;
	double		max_ratio;
	int			repetition;		/* 0: off */
	double		max_xent;		/* unset (NaN): off */
} PipelineSynthetic;

/* The option rows, for a pipeline whose options struct opts holds one as member. */
#define PIPELINE_SYNTHETIC_OPTIONS(opts, member) \
	{.key = "drop_cut", CORPQ_OPT_FIELD(opts, member.drop_cut), .type = CORPQ_OPT_BOOL, .def = 1}, \
	{.key = "max_words", CORPQ_OPT_FIELD(opts, member.max_words), .type = CORPQ_OPT_INT, \
	 .min = 1, .max = 1000000, .def = 250}, \
	{.key = "max_ratio", CORPQ_OPT_FIELD(opts, member.max_ratio), .type = CORPQ_OPT_NUMBER, \
	 .range = CORPQ_RANGE_CLOSED, .lo = 1, .hi = 1000, .def = 1.5}, \
	{.key = "repetition", CORPQ_OPT_FIELD(opts, member.repetition), .type = CORPQ_OPT_INT, \
	 .min = 0, .max = 1000, .def = 2}, \
	{.key = "max_xent", CORPQ_OPT_FIELD(opts, member.max_xent), .type = CORPQ_OPT_NUMBER, \
	 .range = CORPQ_RANGE_OPEN_LO, .lo = 0, .hi = 1000, .flags = CORPQ_OPT_UNSET}

/* The columns a synthetic-pairs table has for the filters (schema-qualified types). */
#define PIPELINE_SYNTHETIC_COLUMNS \
	"score pg_catalog.float8, finished pg_catalog.bool, src_words pg_catalog.int4, " \
	"tgt_words pg_catalog.int4, repeats pg_catalog.int4, kept pg_catalog.bool"

/* Whitespace-separated words of a text expression, 0 when blank or NULL. */
char	   *pipeline_synthetic_words(const char *expr);

/*
 * corpq.repetition() of a hypothesis expression with the filter's threshold
 * (0 when the filter is off or the hypothesis NULL): the repeats column.
 */
char	   *pipeline_synthetic_repeats(const PipelineSynthetic *f, const char *expr);

/*
 * Sets kept on every row of table, which has the columns score (the search's
 * score), finished, src_words, tgt_words and repeats filled (finished NULL: the source
 * was NULL, nothing translated).  In the stage's transaction, SPI connected.
 */
void		pipeline_synthetic_mark(const PipelineSynthetic *f, const char *table);

/* The stage output's counts over a marked table, as json_build_object arguments. */
char	   *pipeline_synthetic_counts(const PipelineSynthetic *f);

#endif
