/*
 * ANTAP in SQL (docs/cav.md, "Predicting token accuracy from CAVs: ANTAP"): the
 * glue of extension/antap.
 *
 *   antap_options.c  antap_train()'s options: one table, architecture and training
 *   antap_input.c    a cav datum and a token -> the pooled, normalised grid
 *   antap_data.c     the job's two queries -> the tokens with a CAV and an accuracy
 *   antap_train.c    corpq.antap_train() and the "antap_train" job
 *   antap_store.c    the catalog: writing a version, corpq.antap_drop()
 *   antap_sql.c      name resolution, corpq.antap_predict(), corpq.antap_eval()
 *
 * Catalog (extension/sql/88_antap.sql): corpq.antap_models (name, owner),
 * corpq.antap_versions (config, options, the two states' weight files,
 * result), corpq.antap_tokens (every token's split, accuracy and both
 * states' predictions).  Writes follow base/internal_sql.h: checked, then
 * run as the catalog owner, owners from the job row.
 */
#ifndef CORPQ_PG_ANTAP_H
#define CORPQ_PG_ANTAP_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/jsonb.h"

#include "antap/model.h"
#include "antap/train.h"
#include "cav/cav_view.h"
#include "pg/cav/cav.h"
#include "pg/jobs/jobs.h"

/* ---- antap_options.c ---- */

typedef struct AntapOptions
{
	cq_antap_config cfg;
	cq_antap_train_options train;
	int64		seed;			/* initialisation, split and shuffling */
	double		lr;
	double		beta1,
				beta2,
				eps,
				weight_decay;
	int			threads;		/* the job's (pg/jobs/jobs.h) */
} AntapOptions;

/* Parse (NULL: defaults) and check the architecture; ERROR naming the key. */
void		antap_options_parse(Jsonb *options, AntapOptions *o);
void		antap_options_parse_text(const char *json, AntapOptions *o);
char	   *antap_options_json(const AntapOptions *o);

/* ---- antap_input.c ---- */

/*
 * The last cav value read, kept while the next datums are the same stored
 * value (same toast pointer): a query passing one corpus CAV with each of its
 * tokens detoasts and validates it once, not once per row.
 */
typedef struct AntapCavCache
{
	CavValueCache value;		/* the stored cav, read once (cav.h) */
	MemoryContext cxt;			/* holds cells */
	double	   *cells;			/* [rows * cols] */
	int			n_cells;
} AntapCavCache;

void		antap_cav_cache_init(AntapCavCache *c, MemoryContext parent);

/*
 * The input of token (len bytes) from the cav datum d: CAV(token) normalised
 * over the whole matrix and pooled to rows x cols, into out.  False when the
 * CAV has no matrix for the token.  ERROR data_corrupted for an invalid cav.
 */
bool		antap_cav_input(AntapCavCache *c, Datum d, const char *token, int len,
							int rows, int cols, float *out);

/* ---- antap_data.c ---- */

typedef struct AntapData
{
	int			n;				/* tokens with both, in byte order */
	char	  **tokens;
	float	   *x;				/* [n, rows, cols] */
	double	   *accuracy;		/* [n] as given */
	float	   *y;				/* [n] the training targets (float32) */
	/* counts for the job result */
	int64		cav_rows;
	int64		accuracy_rows;
	int64		null_tokens;	/* rows whose token is NULL, in either query */
	int64		skipped;		/* distinct tokens left out */
	int64		without_cav;	/* ... of which without a CAV (or no matrix in it) */
	int64		without_accuracy;	/* ... without an accuracy (absent or NULL) */
} AntapData;

/* ERROR unless the queries are single SELECTs of the right columns (at submission). */
void		antap_check_queries(const char *cavs, const char *accuracy);

/*
 * Run both queries (SPI connected, the job's owner) and keep the tokens
 * that have a CAV and an accuracy, in cxt.  ERROR for a duplicated token, a
 * NaN or infinite accuracy (naming the token), fewer than
 * CQ_ANTAP_MIN_TOKENS tokens.
 */
void		antap_read_data(CorpqJob *job, const char *cavs, const char *accuracy,
							const cq_antap_config *cfg, AntapData *d, MemoryContext cxt);

/* ---- antap_train.c ---- */

/* _PG_init's call for antap/: register the "antap_train" job kind. */
void		corpq_antap_init(void);

/* ---- antap_store.c ---- */

/* What a training produced, for the catalog. */
typedef struct AntapResult
{
	const char *name;
	const AntapOptions *opt;
	const AntapData *data;
	const uint8 *split;			/* [n] cq_antap_split_kind */
	const float *pred_i;		/* [n] */
	const float *pred_ii;
	const cq_antap_model *state_i;
	const cq_antap_model *state_ii;
	const char *result_json;
	int64		job_id;
} AntapResult;

/* In the job's final transaction: the next version of r->name; returns its number. */
int32		antap_store(CorpqJob *job, const AntapResult *r);

/* ---- antap_sql.c ---- */

/* A version a name resolved to. */
typedef struct AntapRef
{
	int64		id;
	int32		version;
	char	   *name;
} AntapRef;

/* "name" (latest version) or "name@N"; ERROR undefined_object listing what exists. */
void		antap_resolve(const char *spec, AntapRef *ref);

/* ERROR unless name is a valid ANTAP model name (not empty, no @). */
void		antap_check_name(const char *name);

#endif
