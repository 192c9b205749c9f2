/*
 * pg/curate/curate_job.h: corpq.curate(corpus, target, options), one call
 * that curates a table (docs/curation.md, "One call: curate()").
 *
 * A row job (pg/jobs/row_job.h, kind "curate"): the submission builds, from
 * the corpus table and the options, one query that computes the cheap steps
 * over the whole corpus -- the rule filters and language ID
 * (corpq.filter_rejects with the spec pinned at submission), copies, and the
 * first id of each exact and near duplicate group among the pairs that pass
 * them (window functions: PostgreSQL sorts, spilling past work_mem) -- in
 * id order.  The row job holds that query's result across its transactions
 * (so duplicates are found across the whole corpus, and a resumed job reads
 * the same rows), and the kind turns each row into (id, decision,
 * probability, reasons), calling the classifier (corpq.pair_quality) on the
 * pairs left.  Every output depends on its row alone: a job resumed after a
 * crash writes what an uninterrupted one writes.
 *
 * With the option clean_query (and src_lang, tgt_lang) and no classifier,
 * the job first trains what it needs, each artefact stored in its own final
 * transaction by the code of its own job kind: a lexicon (lexicon_build) on
 * the clean pairs, then a classifier (classifier_build) with the languages
 * and that lexicon; a job started again finds what it stored (the catalog
 * rows carry its job id) and goes on without training it again.
 */
#ifndef CORPQ_PG_CURATE_JOB_H
#define CORPQ_PG_CURATE_JOB_H

#include "postgres.h"

#include "pg/base/options.h"

/* The duplicate step (option "dedup"). */
typedef enum CurateDedup
{
	CURATE_DEDUP_NONE,
	CURATE_DEDUP_EXACT,
	CURATE_DEDUP_NEAR			/* near duplicates, and exact ones */
} CurateDedup;

/* The options of curate() but "filters" (a jsonb array, taken apart before). */
typedef struct CurateOptions
{
	char	   *src_lang;		/* NULL: no language ID of that side */
	char	   *tgt_lang;
	int			dedup;			/* CurateDedup; unset until resolved */
	bool		copies;			/* the copy check (default resolved) */
	char	   *classifier;		/* NULL: no classifier step (unless trained) */
	char	   *clean_query;	/* NULL: train nothing; else the job trains a
								 * lexicon and a classifier on it first */
	double		max_seconds;	/* the training's budget; unset: none */
	double		threshold;		/* unset (NaN) until resolved */
	char	   *id_column;		/* the corpus's columns */
	char	   *src_column;
	char	   *tgt_column;
	int			chunk_rows;
	int			threads;
	bool		skip_existing;
	bool		foreign_target;
} CurateOptions;

/*
 * What curate() trains from a clean query is named after the target table:
 * "<target>_lex" (a lexicon) and "<target>_pq" (a classifier).
 */
#define CURATE_LEXICON_SUFFIX "_lex"
#define CURATE_CLASSIFIER_SUFFIX "_pq"

/*
 * The default filters (step 1's rules) when a classifier judges the pairs
 * (given, or trained from a clean query): only what the classifier does not
 * see, markup (docs/curation.md, "The cheap steps in front of a
 * classifier").  Without one: corpq.filter_defaults().
 */
#define CURATE_CLASSIFIER_FILTERS "[{\"name\": \"html_tags\"}]"

/* The default threshold of the classifier's probability. */
#define CURATE_DEFAULT_THRESHOLD 0.5

extern const CorpqOptionTable corpq_curate_options;

/* Registers the job kind "curate" (module.c). */
void		corpq_curate_job_init(void);

#endif
