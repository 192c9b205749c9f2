/*
 * Bilingual lexicons in the corpq catalog: training options
 * (lexicon_options.c), the corpus reader of the training job
 * (lexicon_corpus.c), the job (lexicon_train.c), the catalog writer
 * (lexicon_store.c), and the loaded form (lexicon_load.c) the per-row SQL
 * functions (lexicon_sql.c, uncsamp.c) use.
 */
#ifndef CORPQ_PG_LEXICON_H
#define CORPQ_PG_LEXICON_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/jsonb.h"

#include "align/bitext.h"
#include "align/fastalign.h"
#include "align/lexicon.h"
#include "align/symmetrize.h"
#include "align/vocab.h"
#include "pg/jobs/jobs.h"
#include "pg/text/text.h"

typedef enum LexModel
{
	LEX_MODEL_FAST_ALIGN,
	LEX_MODEL_IBM1				/* fast_align's trainer with a uniform prior */
} LexModel;

typedef struct LexOptions
{
	int			model;			/* a LexModel */
	int			iterations;
	double		p0;
	double		tension;
	bool		optimize_tension;
	bool		variational_bayes;
	double		alpha;
	bool		favor_diagonal;
	cq_sym_mode symmetrize;
	char	   *bpe;			/* segmenter name, "whitespace" by default */
	bool		lowercase;
	bool		replace;
	int			threads;		/* the job's (pg/jobs/jobs.h) */
} LexOptions;

/*
 * Parse and validate options (NULL = all defaults); ERROR naming the key and
 * the valid values on anything unknown or out of range.
 */
void		lexicon_options_parse(Jsonb *options, LexOptions *o);

/* The resolved options as a JSON object (every key, defaults filled in). */
char	   *lexicon_options_json(const LexOptions *o);

/* fast_align trainer options of one direction. */
void		lexicon_fa_options(const LexOptions *o, bool reverse, cq_fa_options *fo);

/* Lowercase (if asked) and segment a sentence; result valid until the next call. */
const cq_tokens *lexicon_tokenize(CorpqSegmenter *seg, bool lowercase,
								  const char *text, int len);

/* ---- the training job's corpus ---- */

typedef struct LexCorpus
{
	cq_bitext	bitext;			/* CSR arrays below, ids from the vocabularies */
	cq_vocab   *src_vocab;
	cq_vocab   *tgt_vocab;
	int64	   *src_counts;		/* [src_vocab] token frequency on the source side */
	int64		src_tokens;
	int64		tgt_tokens;
	int64		rows;			/* rows the query returned */
	int64		null_rows;		/* rows with a NULL side, not trained on */
} LexCorpus;

/*
 * Run the corpus query (SPI connected, inside a transaction) and read every
 * pair into c, allocating in cxt.  ERROR if the query is not one SELECT of
 * two text columns.
 */
void		lexicon_read_corpus(CorpqJob *job, const char *query,
								const LexOptions *o, LexCorpus *c,
								MemoryContext cxt);

/* ERROR unless query parses as one SELECT returning two text columns. */
void		lexicon_check_corpus_query(const char *query);

/* ---- writing a trained lexicon ---- */

typedef struct LexResult
{
	const char *name;
	const LexOptions *opt;
	const LexCorpus *corpus;
	const cq_lexicon *lexicon;
	const cq_lexdict *dict;
	const char *stats_json;
	int64		job_id;
} LexResult;

/*
 * Write (or atomically replace) the lexicon's catalog rows; SPI connected,
 * inside the job's final transaction.  Returns the translation rows written.
 */
int64		lexicon_store(CorpqJob *job, const LexResult *r);

/*
 * In a job, outside a transaction: train the lexicon name on the pairs of
 * query (run as the job's owner) with options o, the job's progress
 * reported, then begin the final transaction and write the lexicon in it
 * (lexicon_store, which honours o->replace); returns the training's result
 * (a JSON object, allocated in cxt) with that transaction still open: the
 * caller commits it (lexicon_train's job finishes itself in it first).  The
 * one training of lexicon_train() and of corpq.curate()'s lexicon phase.
 */
char	   *lexicon_build(CorpqJob *job, const char *name, const char *query,
						  const LexOptions *o, MemoryContext cxt);

/* ---- the loaded form, for SQL functions ---- */

typedef struct LexLoaded
{
	MemoryContext cxt;			/* owns everything below */
	char	   *name;
	LexOptions	opt;
	CorpqSegmenter *seg;
	cq_vocab   *src_vocab;
	cq_vocab   *tgt_vocab;
	int64	   *src_counts;
	int64		src_total;
	cq_lexdict	dict;			/* only n_src, row_links and entropy are set */
	bool		have_model;
	cq_lexicon	model;
} LexLoaded;

/*
 * The named lexicon, cached in fn_extra for the query (reloaded when the
 * name changes); with_model also loads the serialised alignment models.
 * ERROR (undefined_object) listing the existing names when it is unknown.
 */
LexLoaded  *lexicon_cached(FunctionCallInfo fcinfo, const char *name, bool with_model);

/* Token ids of a sentence (-1 for unknown tokens), palloc'd; *n gets the count. */
int32	   *lexicon_encode(LexLoaded *lx, bool source, const char *text, int len, int *n);

/* _PG_init's call for lexicon/: register the "lexicon_train" job kind. */
void		corpq_lexicon_init(void);

#endif
