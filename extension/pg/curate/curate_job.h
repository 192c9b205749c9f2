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
 * and that lexicon; when the budget allows, an encoder (train_build) between
 * the two, which the classifier then takes as a feature.  A job started
 * again finds what it stored (the catalog rows carry its job id; the
 * encoder's checkpoints do) and goes on without training it again.
 */
#ifndef CORPQ_PG_CURATE_JOB_H
#define CORPQ_PG_CURATE_JOB_H

#include "postgres.h"

#include "pg/base/options.h"
#include "pg/jobs/jobs.h"

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
	char	   *encoder;		/* NULL: none given; else the trained
								 * classifier's encoder (pinned) */
	bool		train_encoder;	/* false: never train one */
	double		encoder_seconds;	/* the encoder's budget; unset: derived */
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
 * The encoder curate() trains when the budget allows (and the BPE model and
 * vocabulary it reads with) are all named "<target>_enc": a `small` encoder
 * preset, one joint BPE vocabulary of up to 15,000 merges (the recipe of
 * docs/embeddings.md), trained with corpq.train()'s defaults on the
 * lexicon's half of the clean pairs.  It is trained when max_seconds is at
 * least CURATE_ENCODER_MIN_BUDGET, with CURATE_ENCODER_SHARE of it (the
 * option encoder_seconds sets its budget itself): docs/curation.md says
 * why.
 */
#define CURATE_ENCODER_SUFFIX "_enc"
#define CURATE_ENCODER_CONFIG "{\"preset\": \"small\", \"kind\": \"encoder\"}"
#define CURATE_ENCODER_MERGES 15000
#define CURATE_ENCODER_MIN_BUDGET 1200.0
#define CURATE_ENCODER_SHARE 0.5

/*
 * The default filters (step 1's rules) when a classifier judges the pairs
 * (given, or trained from a clean query): only what the classifier does not
 * see, markup: on one side only, or different on the two (keep_same_tags:
 * localisation strings carry the same markup on both sides, which the
 * plain rule rejects; docs/curation.md, "The cheap steps in front of a
 * classifier").  Without one: corpq.filter_defaults().
 */
#define CURATE_CLASSIFIER_FILTERS "[{\"name\": \"html_tags\", \"args\": {\"keep_same_tags\": true}}]"

/* The default threshold of the classifier's probability. */
#define CURATE_DEFAULT_THRESHOLD 0.5

extern const CorpqOptionTable corpq_curate_options;

/*
 * In a job, outside a transaction: train the encoder model (model_id) on
 * pairs (a query of (src, tgt)) for seconds with corpq.train()'s defaults,
 * resuming from this job's last checkpoint of it (curate_encoder.c);
 * returns train_build's result, *updates the updates this call made.
 */
char	   *curate_encoder_train(CorpqJob *job, const char *name, int64 model_id,
								 const char *pairs, double seconds, MemoryContext cxt,
								 int64 *updates);

/* Registers the job kind "curate" (module.c). */
void		corpq_curate_job_init(void);

#endif
