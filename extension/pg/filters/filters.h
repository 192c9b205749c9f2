/*
 * pg/filters: the rule filters and language identification in SQL
 * (rules_sql.c, langid_sql.c), and filter specs (filter_spec.c; each kind's
 * option table in filters_options.c).
 *
 * Filter specs: the jsonb list of {name, args, threshold, label} objects that
 * filter_report(), filter_stats(), filter_rejects() and filter_predicate()
 * take, parsed once into core filters (filters/filter_set.h).
 *
 * Each filter's args and threshold are one option table of the shared
 * parser (base/options.h): unknown keys list the valid ones, values out of
 * range say what was expected.  A spec is checked whole before any row is
 * read.
 *
 * Model filters (dual_xent, embedding_cosine, classifier) cannot be core
 * filters: their score needs the catalog's models or classifiers
 * (pg/score/dual_xent.h, pg/embed/embed_cosine.h, pg/classifier/classifier.h).  They keep one decision rule all the same:
 * filter_model_verdict() on the score the kind's one batched function
 * computes (filter_model.c), whichever function evaluates the spec.  Their
 * model names are stored pinned ("name@N") once parsed, so a spec means the
 * same versions wherever it goes next (an aggregate's workers, a written
 * predicate); a classifier's name likewise.
 */
#ifndef CORPQ_PG_FILTERS_H
#define CORPQ_PG_FILTERS_H

#include "postgres.h"

#include "utils/jsonb.h"

#include "filters/filter_set.h"
#include "pg/base/options.h"
#include "pg/embed/embed_cosine.h"
#include "pg/score/dual_xent.h"

struct ClassifierScorer;		/* pg/classifier/classifier.h */

/* Everything a filter's args and threshold can hold (the option tables' target). */
typedef struct FilterArgs
{
	double		threshold;
	int			ithreshold;		/* repetition: an integer threshold */
	int			unit;			/* cq_length_unit */
	char	   *src;			/* script or language of each side */
	char	   *tgt;
	bool		exclude_whitespace;
	bool		keep_same_tags;	/* html_tags: the sides' markup the same passes */
	bool		hint;			/* langid: cq_langid_rule */
	bool		keep_unreliable;
	int			min_chars;
	int			min_length;
	int			max_length;
	char	   *forward;		/* dual_xent: model names, "name@N" once parsed */
	char	   *backward;
	char	   *model;			/* embedding_cosine: the encoder, likewise */
	char	   *classifier;		/* classifier: its name, likewise */
	int			on_too_long;	/* model filters: CorpqTooLong */
	bool		reject_copies;	/* embedding_cosine: reject a target copied from its source */
} FilterArgs;

/* What scores a model filter. */
typedef enum FilterModelKind
{
	FILTER_MODEL_NONE,			/* a rule filter: the core decides */
	FILTER_MODEL_DUAL_XENT,		/* corpq_dual_xent_score() */
	FILTER_MODEL_EMBEDDING_COSINE,	/* corpq_embed_cosine_score() */
	FILTER_MODEL_CLASSIFIER		/* classifier_scorer_prob(): pair_quality() */
} FilterModelKind;

/* A filter kind: its name, core kind and option table (filters_options.c). */
typedef struct FilterKind
{
	const char *name;
	cq_filter_kind kind;		/* unused by model filters */
	CorpqOptionTable options;
	FilterModelKind model;		/* decided on a model's score, not by the core */
} FilterKind;

/* The kind named name; ERROR listing the valid names. */
const FilterKind *filter_kind_find(const char *name);

/* The kinds' names, separated by commas. */
char	   *filter_kind_names(void);

typedef struct FilterSpec
{
	const char *name;			/* the filter's name */
	char	   *label;			/* what the reports call it (default: name) */
	FilterArgs	args;			/* as given, defaults filled in */
	cq_filter	filter;			/* what the core evaluates (not model filters) */
	bool		model;			/* a model filter: filter_model_verdict() decides */
	FilterModelKind model_kind;
	/* model filters: the kind's scorer, created on first use */
	CorpqDualXent *dual_xent;
	CorpqEmbedCosine *embed_cosine;
	struct ClassifierScorer *classifier;
} FilterSpec;

typedef struct FilterList
{
	int			n;
	FilterSpec *items;
	int			n_models;		/* model filters among them */
	MemoryContext cxt;			/* where it was parsed: the scorers go there */
} FilterList;

/*
 * What a parser accepts as a model filter's model: pinned versions only (the
 * IMMUTABLE filter_keeps, filter_rejects, filter_stats: a name's latest
 * version can change, a pinned one cannot), or also names, pinned to their
 * latest version when parsed (the STABLE filter_report, filter_predicate).
 */
typedef enum FilterModels
{
	FILTER_MODELS_PINNED,
	FILTER_MODELS_LATEST
} FilterModels;

/* Pairs a batched evaluation (filter_stats) holds before scoring them. */
#define FILTER_MODEL_CHUNK 1024

/* Examples of rejected pairs a report may ask for, per filter. */
#define FILTER_MAX_EXAMPLES 100

/*
 * What filter_rejects() appends to a classifier filter's label when it
 * rejects a pair for having no probability (a model feature NULL), e.g.
 * "classifier:null", rather than a probability below the threshold.
 */
#define FILTER_NO_SCORE_SUFFIX ":null"

/*
 * What filter_rejects() appends to an embedding_cosine filter's label when
 * it rejects a pair as a copy (reject_copies), e.g. "embedding_cosine:copy".
 */
#define FILTER_COPY_SUFFIX ":copy"

/* The label of the pseudo-filter "rejected by any filter" in reports. */
#define FILTER_ALL_LABEL "all"

/* Parse and check a spec; palloc'd in CurrentMemoryContext. */
FilterList *filter_list_parse(Jsonb *spec, FilterModels models);

/* The list as a spec again, every default written out and names pinned. */
Jsonb	   *filter_list_jsonb(const FilterList *list);

/* What a model filter decided on a pair, and why it rejected it. */
typedef enum FilterVerdict
{
	FILTER_KEEP,
	FILTER_REJECT_SCORE,		/* the score is below the threshold */
	FILTER_REJECT_NO_SCORE,		/* no score (NaN): a side too long, no probability */
	FILTER_REJECT_COPY			/* embedding_cosine's reject_copies: the target is a copy */
} FilterVerdict;

/*
 * THE decision of model filter s on pair p of this score: a copy
 * (cq_dedup_is_copy(), filters/dedup.h) when the filter rejects copies,
 * whatever its score; then no score; then the score against the threshold.
 */
FilterVerdict filter_model_verdict(const FilterSpec *s, const cq_pair *p, double score);

/* Does s reject copies (an embedding_cosine filter with reject_copies)? */
bool		filter_rejects_copies(const FilterSpec *s);

/*
 * The scores of model filter list->items[i] for n pairs into out[n], in
 * batches (filter_model.c); the same bits for a pair alone or in any batch.
 * A pair the models cannot score (a side longer than they accept, with
 * on_too_long "null") gets NaN, which filter_model_verdict() rejects.
 */
void		filter_model_scores(FilterList *list, int i, const cq_pair *pairs, int n,
								double *out);

/* Free the scorers the list's model filters loaded. */
void		filter_list_release(FilterList *list);

/*
 * The SQL condition under which filter s keeps a pair, over the column
 * expressions src and tgt (already quoted): a call of corpq.filter_keeps()
 * with s and its defaults written out, so the predicate and the reports take
 * their decision in one place, cq_filter_keep(), e.g.
 * "corpq.filter_keeps(src, tgt, '[{"name": "length_ratio", ...}]')".
 */
char	   *filter_keep_sql(const FilterSpec *s, const char *src, const char *tgt);

/* A script's UScriptCode, a language's langid.h id; ERROR if unknown. */
int			filter_script(const char *name);
int			filter_language(const char *code);

/* Decode a text datum for the core (palloc'd code points). */
void		filter_utext(text *t, cq_utext *u);

#endif
