/*
 * The pair-quality classifier in SQL (docs/curation.md): the glue of the
 * core extension/curate.  Below pg/curate (corpq.curate()) and pg/filters
 * (the filter kind "classifier"), which call it; it calls no glue above it.
 *
 *   noise_sql.c              corpq.synthetic_noise()
 *   classifier_options.c     classifier_train()'s options: one table, the
 *                            languages and models resolved (models pinned)
 *   classifier_features.c    a pair's feature vector: the core's string and
 *                            language ID features, and the model features
 *                            computed by calling the SQL functions' own C
 *                            code through fmgr (equal to them by construction)
 *   classifier_train.c       corpq.classifier_train() and its job
 *   classifier_store.c       the catalog: writing a version, classifier_drop()
 *   classifier_sql.c         name resolution, pair_quality(),
 *                            classifier_features()
 *
 * Catalog (extension/sql/97_curate.sql): corpq.classifier_catalog (name,
 * owner), corpq.classifier_versions (the serialised classifier, its
 * features, pinned models, options, report).  Writes follow
 * base/internal_sql.h: checked, then run as the catalog owner, owners from
 * the job row.
 */
#ifndef CORPQ_PG_CLASSIFIER_H
#define CORPQ_PG_CLASSIFIER_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/jsonb.h"

#include "curate/noise.h"
#include "pg/jobs/jobs.h"

/*
 * The classifier's core types, declared only: curate/features.h brings
 * filters/filter_set.h, whose cq_pair clashes with nn's, and module.c sees
 * this header beside the model subsystem's.
 */
struct cq_classifier;
struct cq_feature_set;

/* A clean query must give at least this many pairs with both sides. */
#define CURATE_MIN_CLEAN_PAIRS 50

/* The models of the model features: pinned specs, NULL when not given. */
typedef struct CurateModels
{
	char	   *encoder;		/* "enc@3": embedding_cosine */
	char	   *forward;		/* "f@2": dual_xent, with backward */
	char	   *backward;
	char	   *lexicon;		/* "lex@1": a lexicon and its version count
								 * (corpq.lexicons.version), checked at use */
} CurateModels;

/* ---- classifier_options.c ---- */

typedef struct ClassifierOptions
{
	char	   *src_lang;		/* CLD2 codes, both or neither */
	char	   *tgt_lang;
	CurateModels models;
	char	   *other_language_query;
	int64		seed;
	int			max_pairs;
	double		holdout;
	int			kind;			/* cq_classifier_kind (curate/classifier.h) */
	double		max_seconds;	/* unset (NaN): no limit */
	double		share[CQ_NOISE_NTYPES]; /* from the "noise" object */
	int			threads;
} ClassifierOptions;

/*
 * Parse options (NULL: defaults); ERROR naming a bad key or value, an
 * unknown language or model.  With resolve, model names are pinned
 * (name@N of the version they name now): at submission.
 */
void		classifier_options_parse(Jsonb *options, ClassifierOptions *o);
/* The same from the resolved JSON a job stores (models already pinned). */
void		classifier_options_parse_text(const char *json, ClassifierOptions *o);
char	   *classifier_options_json(const ClassifierOptions *o);
/* The feature set the options give: strings, langid with the languages,
 * the model features of the models given. */
void		classifier_options_feature_set(const ClassifierOptions *o, struct cq_feature_set *fs);
/* The models as the catalog's jsonb text: {"encoder": "enc@3", ...}. */
char	   *curate_models_json(const CurateModels *m);
/* Parse that text back (into CurrentMemoryContext). */
void		curate_models_parse(const char *json, CurateModels *m);

/* ---- classifier_features.c ---- */

typedef struct CurateFeatures CurateFeatures;

/*
 * Prepare to compute fs's features with models m: the SQL functions of the
 * model features are looked up once and their FmgrInfo kept in a child of
 * parent, so their own caches (fn_extra) last as long as it does.  A model
 * feature whose model m lacks is an ERROR (the classifier is damaged).
 */
CurateFeatures *curate_features_create(const struct cq_feature_set *fs, const CurateModels *m,
									   MemoryContext parent);
void		curate_features_free(CurateFeatures *f);

/*
 * The features of (src, tgt) into x[0 .. d).  False when a model function
 * returned NULL (null[j] set for it when null is not NULL; its x[j] is NAN):
 * the pair has no probability.  Every other value is computed.
 */
bool		curate_features_compute(CurateFeatures *f, text *src, text *tgt, double *x,
									bool *null);

/* ---- classifier_train.c ---- */

/*
 * At submission: ERROR unless query is a clean query of (src, tgt) with at
 * least CURATE_MIN_CLEAN_PAIRS pairs with both sides, and o's
 * other-language query (if any) one text column.  classifier_train()'s
 * checks, which corpq.curate() makes too before it trains a classifier.
 */
void		classifier_check_clean_query(const char *query, const ClassifierOptions *o);

/*
 * In a job, outside a transaction: train the classifier name on query with
 * options o (models pinned), the job's progress reported, then begin the
 * final transaction and write the new version in it (classifier_store);
 * returns the training's result (a JSON object {"classifier", "version",
 * "report"}, allocated in cxt; *version gets the version when not NULL)
 * with that transaction still open: the caller commits it.  The one
 * training of classifier_train() and of corpq.curate()'s classifier phase.
 */
char	   *classifier_build(CorpqJob *job, const char *name, const char *query,
							 const ClassifierOptions *o, MemoryContext cxt, int32 *version);

/* _PG_init's call for classifier/: register the "classifier_train" job kind. */
void		corpq_classifier_init(void);

/* ---- classifier_store.c ---- */

typedef struct ClassifierResult
{
	const char *name;
	const struct cq_classifier *c;
	const ClassifierOptions *opt;
	const char *report_json;
	int64		job_id;
} ClassifierResult;

/* In the job's final transaction: the next version of r->name; returns its number. */
int32		classifier_store(CorpqJob *job, const ClassifierResult *r);

/* ---- classifier_sql.c ---- */

/* ERROR unless name is a valid classifier name (not empty, no @). */
void		classifier_check_name(const char *name);

/*
 * "name" (its latest version) or "name@N" as the pinned "name@N" it means
 * now; ERROR undefined_object for an unknown name or version.  A job that
 * uses a classifier pins it at submission, so a version trained while the
 * job runs does not change its later chunks.
 */
char	   *classifier_pin(const char *spec);

/*
 * A pinned classifier version for C callers (the filter kind "classifier",
 * score_job): the same load and the same computation as
 * corpq.pair_quality(), so a probability is the SQL function's, bit for bit.
 */
typedef struct ClassifierScorer ClassifierScorer;

/*
 * Load pinned ("name@N"; ERROR for anything else, or an unknown name or
 * version) into a child context of parent; deleting parent frees it too.
 */
ClassifierScorer *classifier_scorer_open(const char *pinned, MemoryContext parent);

/* The probability of (src, tgt) into *p; false when it is NULL (a model feature NULL). */
bool		classifier_scorer_prob(ClassifierScorer *s, text *src, text *tgt, double *p);

void		classifier_scorer_close(ClassifierScorer *s);

#endif
