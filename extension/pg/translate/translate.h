/*
 * Translation in SQL (extension/pg/translate/translate_*.c): the options of
 * corpq.translate(), translate_nbest(), translate_rows() and translate_job(),
 * and the engine all four decode with.
 *
 * The engine (translate_engine.c) holds a model resolved once (a model
 * session, pg/model/model_session.h: the query keeps the version it started
 * with), the core's
 * translator (nn/infer/translate.h) in one workspace, and a queue of sentences in
 * the order they were added.  The caller adds sources and runs the engine;
 * the engine admits them into free slots, steps the batch (checking for
 * interrupts at every step), takes finished sentences out, and hands every
 * sentence back through a callback in the order it was added -- so a
 * caller streaming a query gets its rows back in the query's order while
 * the batch stays full.  A sentence's result does not depend on its batch
 * (see the core's determinism note), so all four functions agree.
 *
 * The translator is sized for the longest source seen so far; a longer one
 * waits until the batch has drained, then the translator is rebuilt larger.
 * Between steps a user query may have run and loaded other models: when the
 * model cache evicted anything meanwhile, the translator (which points into
 * the model) is rebuilt and the unfinished sentences start again -- with
 * the same result, decoding being deterministic per sentence.
 */
#ifndef CORPQ_TRANSLATE_TRANSLATE_H
#define CORPQ_TRANSLATE_TRANSLATE_H

#include "postgres.h"

#include "utils/jsonb.h"

#include "nn/infer/translate.h"
#include "pg/base/corpus_query.h"
#include "pg/model/model_session.h"

/* Which function's options: each accepts its own keys. */
typedef enum CorpqTranslateCall
{
	CORPQ_TRANSLATE_ONE,		/* translate(), translate_nbest() */
	CORPQ_TRANSLATE_ROWS,		/* translate_rows(): also batch */
	CORPQ_TRANSLATE_JOB			/* translate_job(): also batch, chunk_rows, threads */
} CorpqTranslateCall;

typedef struct CorpqTranslateOptions
{
	cq_translate_options core;
	int			batch;			/* sentences decoded together */
	int			chunk_rows;		/* a job commits at least this many rows at once */
	int			threads;		/* a job's (pg/jobs/jobs.h) */
	bool		skip_too_long;	/* a source over the model's length: a NULL row */
	bool		foreign_target; /* a job's: a target of another role's is intended (row_job.h) */
	char	   *version_column; /* a job's: the target's column for the model's version */
} CorpqTranslateOptions;

/*
 * Parse options (NULL: all defaults) for call; ERROR invalid_parameter_value
 * for an unknown key (listing the valid ones) or a value out of range.  The
 * checks that need the model (beam and topk against the vocabulary, nbest
 * against beam, topk/topp with beam search) come when the engine gets them.
 */
void		corpq_translate_options_parse(CorpqTranslateCall call, Jsonb *options,
										  CorpqTranslateOptions *o);
void		corpq_translate_options_parse_text(CorpqTranslateCall call, const char *json,
											   CorpqTranslateOptions *o);
char	   *corpq_translate_options_json(CorpqTranslateCall call,
										 const CorpqTranslateOptions *o);

/* ---- the engine ---- */

/* A finished sentence as the callback sees it (valid during the call). */
typedef struct CorpqTranslated
{
	int64		id;				/* the caller's */
	bool		null_source;	/* added as NULL: no hypotheses */
	int			n_hyps;			/* best first */
	const cq_hypothesis *hyps;
	uint64		mark;			/* the caller's, as given to corpq_translate_add */
} CorpqTranslated;

typedef void (*CorpqTranslatedFn) (void *arg, const CorpqTranslated *t);

/* Counters since the engine was created. */
typedef struct CorpqTranslateStats
{
	int64		sentences;		/* handed back, NULL sources included */
	int64		translated;		/* of them, with a source */
	int64		tokens;			/* of the best hypotheses, </s> included */
	double		step_seconds;	/* inside cq_translator_step */
	int			rebuilds;		/* translators rebuilt after an eviction */
	int64		skipped_too_long;	/* sources over the model's length, as NULL */
} CorpqTranslateStats;

typedef struct CorpqTranslateEngine CorpqTranslateEngine;

/* An engine in a new child context of parent; fn gets every sentence. */
CorpqTranslateEngine *corpq_translate_engine_create(MemoryContext parent,
													CorpqTranslatedFn fn, void *arg);

/*
 * Use model spec (pinned: only "name@N") with options o, batch sentences at
 * a time.  ERROR for invalid options (naming the option).  Nothing may be
 * waiting: call it between sentences.
 */
void		corpq_translate_engine_use(CorpqTranslateEngine *e, const char *spec, bool pinned,
									   const CorpqTranslateOptions *o, int batch);

/*
 * Segment and encode a source with the model's source vocabulary (ids
 * palloc'd in CurrentMemoryContext).  A source longer than the model's
 * positions gives NULL (counted in skipped_too_long) with the option
 * skip_too_long, else ERROR program_limit_exceeded naming the limit.
 */
int32	   *corpq_translate_encode(CorpqTranslateEngine *e, const char *src, int len,
								   int *n_ids);

/*
 * Queue a source (ids are copied) with the caller's id, its sampling key and
 * a mark handed back with it, or a NULL source (ids NULL), handed back
 * without hypotheses.
 */
void		corpq_translate_add(CorpqTranslateEngine *e, int64 id, uint64 key,
								const int32 *ids, int n, uint64 mark);

/*
 * Row i of a batch of a query returning (id, src): queued with its id as
 * the sampling key (a NULL src as a NULL source) and mark (a job's row mark,
 * pg/jobs/row_job.h).  ERROR for a NULL id.
 */
void		corpq_translate_add_row(CorpqTranslateEngine *e, const CorpqBatch *b, uint64 i,
									uint64 mark);

/*
 * Decode until every queued source is in the batch (drain false: the caller
 * can add more while the batch is still full) or until every sentence is
 * handed back (drain true).  Sentences are handed back only from here (the
 * callback may start and commit transactions of its own).
 */
void		corpq_translate_run(CorpqTranslateEngine *e, bool drain);

/* Detokenised text of a hypothesis (palloc'd in CurrentMemoryContext). */
text	   *corpq_translate_text(CorpqTranslateEngine *e, const cq_hypothesis *h);

/* Forget every queued and unfinished sentence (left behind by an error). */
void		corpq_translate_reset(CorpqTranslateEngine *e);

const CorpqTranslateStats *corpq_translate_stats(const CorpqTranslateEngine *e);

/* ---- the job kind (translate_job.c) ---- */

/* _PG_init's call for translate/: register the job kind "translate" (a row job). */
void		corpq_translate_init(void);

#endif
