/*
 * Named BPE models and vocabularies from the corpq catalog, for any glue
 * that segments or encodes text (bpe_sql.c, vocab_sql.c, model scoring, CAV,
 * lexicons).
 *
 * A BPE name is a row of corpq.bpe_models, or the reserved name
 * "whitespace" (CORPQ_WHITESPACE), which segments on whitespace only; a
 * vocabulary remembers its BPE name (NULL in the catalog = whitespace).
 *
 * Loaded objects live in their own memory context, a child of the context
 * given to the loader; free them with corpq_segmenter_free /
 * corpq_vocab_free or by deleting the parent.  Loading reads the catalog
 * through SPI with the caller's privileges (every role may read every
 * model).  Segmenting grows a word cache inside the object's context.
 */
#ifndef CORPQ_PG_TEXT_H
#define CORPQ_PG_TEXT_H

#include "postgres.h"

#include "fmgr.h"

#include "pg/base/catalog.h"
#include "pg/base/options.h"

#include "text/bpe.h"
#include "text/spm.h"
#include "text/vocabulary.h"
#include "text/wordpiece.h"


typedef struct CorpqSegmenter
{
	MemoryContext cxt;			/* owns everything below */
	char	   *name;			/* BPE name, or "whitespace" */
	cq_bpe	   *bpe;			/* NULL for whitespace */
	cq_spm	   *spm;			/* a SentencePiece model (version 'sentencepiece'),
								 * freed with cxt; bpe is then NULL */
	cq_wordpiece *wp;			/* a WordPiece model (version 'wordpiece');
								 * bpe is then NULL */
	cq_bpe_cache cache;
	cq_tokens	tokens;			/* result of the last corpq_segment */
} CorpqSegmenter;

typedef struct CorpqVocab
{
	MemoryContext cxt;			/* owns everything below */
	char	   *name;
	CorpqSegmenter *seg;		/* the vocabulary's BPE (child of cxt) */
	cq_vocabulary	vocab;
} CorpqVocab;

/*
 * Load a BPE model by name (NULL or "whitespace" = whitespace segmentation)
 * into a new child of parent.  ERROR (undefined_object) for an unknown name;
 * the hint lists existing names.
 */
CorpqSegmenter *corpq_segmenter_load(const char *name, MemoryContext parent);
void		corpq_segmenter_free(CorpqSegmenter *seg);

/*
 * Segment a sentence; the result is owned by seg and valid until the next
 * call.  BPE tokens carry the "@@" continuation marker; SentencePiece
 * tokens are its pieces ("\u2581" marks a word start); WordPiece tokens
 * its pieces ("##" marks a continuation).
 */
const cq_tokens *corpq_segment(CorpqSegmenter *seg, const char *text, int len);

/*
 * The text of token ids (<s>, <pad>, </s> skipped): the tokens joined, then
 * the segmentation undone (BPE's "@@ ", WordPiece's " ##", or
 * SentencePiece's decoder);
 * palloc'd in CurrentMemoryContext, *len its length.
 */
char	   *corpq_vocab_text(CorpqVocab *v, const int32 *ids, int n, size_t *len);

/* Load a vocabulary (with its BPE) by name into a new child of parent. */
CorpqVocab *corpq_vocab_load(const char *name, MemoryContext parent);

/*
 * corpq_vocab_load or corpq_vocab_wrap (tokens NULL or not) with the
 * vocabulary's segmenter from seg_load(segmenter name or NULL for
 * whitespace, the vocabulary's context, arg) instead of
 * corpq_segmenter_load: the model session's way to a shared segmenter.
 */
typedef CorpqSegmenter *(*CorpqSegmenterLoader) (const char *name, MemoryContext parent,
												 void *arg);
CorpqVocab *corpq_vocab_load_with(const char *name, const cq_vocabulary *tokens,
								  CorpqSegmenterLoader seg_load, void *arg,
								  MemoryContext parent);
void		corpq_vocab_free(CorpqVocab *v);

/*
 * A vocabulary whose token table is tokens (an attached, read-only copy,
 * text/vocabulary.h: cq_vocabulary_attach, which must outlive it), with its
 * segmenter loaded by name: what corpq_vocab_load gives, without reading
 * the tokens.
 */
CorpqVocab *corpq_vocab_wrap(const char *name, const cq_vocabulary *tokens, MemoryContext parent);

/*
 * The identity of vocabulary name's row as stored now (ERROR
 * undefined_object for an unknown name): the table's OID, the row's xmin,
 * its creation time (a TimestampTz) and size.  A vocabulary's tokens never
 * change in place (only corpq's functions write them, and only when they
 * create it), so a vocabulary dropped and created again under its name has
 * another identity: the key of its shared copy (pg/model/model.h).
 */
typedef struct CorpqVocabIdentity
{
	Oid			catalog;
	int64		xmin;
	int64		created;
	int32		size;
} CorpqVocabIdentity;

void		corpq_vocab_identity(const char *name, CorpqVocabIdentity *id);

/*
 * The same for segmenter name's corpq.bpe_models row (size: n_merges, a
 * WordPiece model's token count); *wordpiece: whether it is a WordPiece
 * model (version 'wordpiece'), whose tokens and options are written once
 * with the row.  ERROR undefined_object for an unknown name.
 */
void		corpq_segmenter_identity(const char *name, CorpqVocabIdentity *id, bool *wordpiece);

/*
 * A segmenter named name over a WordPiece model read in place from the
 * arena at base (bytes long; text/wordpiece.h: cq_wordpiece_attach), which
 * must outlive it, in a new child of parent; NULL when the arena is refused
 * (a NOTICE then says why).
 */
CorpqSegmenter *corpq_segmenter_attach_wordpiece(const char *name, const void *base, Size bytes,
												 MemoryContext parent);

/*
 * Segment and encode a sentence: a palloc'd array (CurrentMemoryContext) of
 * *n_ids token ids, unknown tokens = 3, no <s> or </s> added.
 */
int32	   *corpq_vocab_encode_text(CorpqVocab *v, const char *text, int len,
									int *n_ids);

/*
 * Per-query cache for SQL functions: the object named name, kept in
 * fcinfo->flinfo->fn_extra (fn_mcxt) and reloaded only when the name changes
 * between calls.
 */
CorpqSegmenter *corpq_segmenter_cached(FunctionCallInfo fcinfo, const char *name);
CorpqVocab *corpq_vocab_cached(FunctionCallInfo fcinfo, const char *name);

/*
 * Run a corpus query (a single SELECT returning one text or varchar column)
 * through an SPI cursor with the caller's privileges, calling fn for every
 * non-NULL row in batches, checking for interrupts.  Returns the number of
 * non-NULL rows.  ERROR if the query is not such a SELECT or returns no rows.
 */
typedef void (*CorpqRowFn) (void *arg, const char *text, int len);

int64		corpq_scan_corpus(const char *query, CorpqRowFn fn, void *arg);

/*
 * corpq_scan_corpus for a count of words: counts is initialised in cxt, fn
 * adds a row's words to it.  ERROR if the corpus has no word.
 */
void		corpq_count_corpus(const char *query, cq_strmap *counts, MemoryContext cxt,
							   CorpqRowFn fn, void *arg);

/*
 * WordPiece segmenters (wordpiece_sql.c): load name's row into seg->wp
 * (inside the caller's SPI connection), and segment with it.
 */
void		corpq_wordpiece_load(CorpqSegmenter *seg, const char *name);
const cq_tokens *corpq_wordpiece_segment(CorpqSegmenter *seg, const char *text, int len);

/*
 * The name argument (0) of a function that creates a segmenter: not the
 * reserved "whitespace", free in corpq.bpe_models (text_catalog.c).
 */
char	   *corpq_segmenter_new_name(FunctionCallInfo fcinfo);

/* ERROR unless the database encoding is UTF8 or SQL_ASCII (the core reads UTF-8). */
void		corpq_require_utf8(void);

/* ---- options (text_options.c) ---- */

/* corpq.wordpiece_import()'s options (wordpiece_sql.c), under the names of transformers' tokenizer_config.json. */
typedef struct CorpqWordpieceOptions
{
	bool		do_lower_case;
	bool		strip_accents;
	bool		tokenize_chinese_chars;
	int			max_input_chars_per_word;
	char	   *special[CQ_WORDPIECE_N_SPECIAL];	/* "" = none */
	int			variant;
} CorpqWordpieceOptions;
extern const CorpqOptionTable corpq_wordpiece_options;

#endif
