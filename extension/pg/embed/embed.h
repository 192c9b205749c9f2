/*
 * embed/: sentence embeddings in SQL (docs/embeddings.md): sets of vectors
 * read from queries, margin-based mining over them (extension/mine/mine.h),
 * the scalar helpers of the pgvector recipe, and sentence vectors from
 * encoder models (extension/nn/infer/encode.h).
 *
 *   vector_set.c   a set of (id, vector): read from a query or added one by
 *                  one, checked, ordered by id, normalised; its memory, and
 *                  its temporary file past work_mem
 *   embed_options.c the option tables: mine_vectors()', embed_rows()' and
 *                  embed_job()'s options; the core's rows every mining
 *                  function's table starts with
 *   mine_sets.c    mining two sets: in memory, or block by block from their
 *                  files; the memory checks and the core calls (the C entry
 *                  point of every mining function)
 *   mine_sql.c     corpq.mine_vectors()
 *   margin_sql.c   corpq.margin(), corpq.knn_mean()
 *   embed_rows.c   sentences embedded in batches with an encoder model: the
 *                  one path of every function and job that embeds
 *   embed_sql.c    corpq.embed(): a sentence's vector from an encoder model;
 *                  corpq.embed_rows(): a query's vectors in one statement
 *   embed_job.c    corpq.embed_job(): a table's vectors by a row job
 *   embed_cosine.c the cosine of a pair's two sentences (embed_cosine.h):
 *                  corpq.embedding_cosine() and the embedding_cosine filter
 *
 * corpq.mine_pairs() embeds and mines through this folder but lives above
 * it, in pg/mining: with a classifier it calls pg/classifier, which is
 * above this folder (its embedding_cosine feature).
 *
 * Memory.  Mining is bounded by work_mem, as a sort or a hash is, and like
 * them it goes to temporary files past it.  While the sets are small, their
 * vectors are held in memory and mined in one sweep.  A set that outgrows
 * its share goes on being read into a temporary file (BufFile: the
 * vectors; the ids stay in memory), is ordered by id through that file, and
 * mining then streams both sets from their files, a block of targets and a
 * block of sources at a time (blocks sized to fit work_mem), through the
 * core's k-NN sweep (cq_mine_knn_add): the lists of a source over every
 * target block are the merge of its per-block top k, so the pairs are the
 * in-memory run's, bit for bit.  What must stay in memory -- the k-NN lists
 * and means of both sides (8 (k + 1) bytes a vector), the ids, the pairs --
 * must fit work_mem with one source and one target vector: it is counted
 * while the sets are read (reading stops at the first row past it) and again
 * before mining, and the error names work_mem and the size needed.
 */
#ifndef CORPQ_EMBED_H
#define CORPQ_EMBED_H

#include "postgres.h"

#include "utils/jsonb.h"

#include "mine/mine.h"
#include "pg/base/options.h"
#include "pg/model/model_session.h"

/*
 * A set of vectors with their ids, one role in a mining call ("source",
 * "target").  Rows are kept in the order they were added until
 * corpq_vector_set_finish, which orders them by id (so that ties between
 * equal cosines go to the smaller id) and normalises them.  The vectors are
 * in memory (vecs) or, past work_mem, in a temporary file (file, vecs NULL);
 * the ids are always in memory.
 */
typedef struct CorpqVectorSet
{
	const char *what;			/* "source" or "target", for messages */
	int64	   *ids;			/* [n] */
	float	   *vecs;			/* [n, dim], or NULL when in file */
	int			n;
	int			cap;			/* rows allocated (ids; and vecs in memory) */
	int			dim;			/* 0 until the first vector */
	int			k;				/* the mining's k: its lists are counted */
	struct BufFile *file;		/* the vectors past work_mem: while read, in
								 * the order added; finished, in id order
								 * and normalised */
	const struct CorpqVectorSet *other; /* the set that shares work_mem and
										 * the dimension (NULL: none yet, and
										 * this set is the sources) */
	MemoryContext cxt;			/* where the rows are (init's current one) */
} CorpqVectorSet;

/*
 * An empty set in CurrentMemoryContext for mining with k; other: see above
 * (NULL for the sources, the sources for the targets).
 */
void		corpq_vector_set_init(CorpqVectorSet *s, const char *what,
								  const CorpqVectorSet *other, int k);

/*
 * Add one vector of dim floats (copied; into the set's file once it is
 * past work_mem).  ERROR for a dimension other than the set's (or the other
 * set's) and when what mining must hold in memory outgrows work_mem.
 */
void		corpq_vector_set_add(CorpqVectorSet *s, int64 id, const float *v, int dim);

/*
 * Add the rows of query, a SELECT returning (id integer, embedding real[]):
 * rows whose id or embedding is NULL are skipped; an embedding that is
 * empty, multidimensional or has a NULL element is an ERROR naming its id.
 */
void		corpq_vector_set_read(CorpqVectorSet *s, const char *query);

/*
 * Order by id (ERROR for a duplicate id), normalise (ERROR naming the id of
 * a vector with a non-finite component or no direction), and shrink the
 * arrays to the rows: finish a set before reading the one that shares its
 * work_mem.  A set in a file is ordered through a second file (one seek per
 * row), which replaces the first.
 */
void		corpq_vector_set_finish(CorpqVectorSet *s);

/* Bytes the set holds in memory (capacity: vectors if held, ids, the sort). */
Size		corpq_vector_set_bytes(const CorpqVectorSet *s);

/*
 * Bytes mining must hold in memory whatever the blocks, for n sources and
 * m targets with k (the lists, means, ids, pairs, the best sources of
 * mutual, and the temporary files' buffers), counted with k itself (the
 * lists of a side smaller than k are shorter: the exact figure is
 * computed before mining).
 */
double		corpq_mine_floor_bytes(double n, double m, int k, int dim);

/* What a temporary file holds in memory: its buffer and its bookkeeping. */
#define CORPQ_VECTOR_FILE_BYTES (BLCKSZ + 1024)

/* A finished set's vectors moved into a temporary file (its memory freed). */
void		corpq_vector_set_spill(CorpqVectorSet *s);

/* A finished set in a file: read from its first row again. */
void		corpq_vector_set_rewind(CorpqVectorSet *s);

/* A finished set in a file: its next rows (rows * dim floats) into dst. */
void		corpq_vector_set_next(CorpqVectorSet *s, float *dst, int rows);

/* Close a finished set's file, if any. */
void		corpq_vector_set_close(CorpqVectorSet *s);

/* mine_vectors()' options parsed onto the core's (NULL: the defaults). */
void		corpq_mine_options_parse(Jsonb *options, cq_mine_options *o);

/*
 * The core's option rows (k, mutual, min_margin, block_rows, block_cols)
 * for a table of type T whose field m is a cq_mine_options: every mining
 * function's table starts with them.  After parsing (into fields first set
 * by cq_mine_options_default) call corpq_mine_options_finish.
 */
#define CORPQ_MINE_OPTION_ROWS(T, m) \
	{.key = "k", CORPQ_OPT_FIELD(T, m.k), .type = CORPQ_OPT_INT, .min = 1, .max = CQ_MINE_MAX_K, \
	.def = CQ_MINE_DEFAULT_K}, \
	{.key = "mutual", CORPQ_OPT_FIELD(T, m.mutual), .type = CORPQ_OPT_BOOL, .def = false}, \
	/* unset: every best pair; a margin below 0 is never a translation */ \
	{.key = "min_margin", CORPQ_OPT_FIELD(T, m.min_margin), .type = CORPQ_OPT_NUMBER, \
	.flags = CORPQ_OPT_UNSET, .range = CORPQ_RANGE_CLOSED, .lo = 0, .hi = 1e6}, \
	{.key = "block_rows", CORPQ_OPT_FIELD(T, m.block_rows), .type = CORPQ_OPT_INT, .min = 1, \
	.max = 65536, .def = CQ_MINE_DEFAULT_BLOCK_ROWS}, \
	{.key = "block_cols", CORPQ_OPT_FIELD(T, m.block_cols), .type = CORPQ_OPT_INT, .min = 1, \
	.max = 65536, .def = CQ_MINE_DEFAULT_BLOCK_COLS}

/* min_margin unset (not given) as -INFINITY: no threshold. */
void		corpq_mine_options_finish(cq_mine_options *o);

/* One mined pair, by id. */
typedef void (*CorpqMinePairFn) (void *arg, int64 src_id, int64 tgt_id,
								 double cosine, double margin);

/*
 * Mine two finished sets (the one path of every mining function: a caller
 * with sentences embeds them into sets first): in memory when the sets and
 * the work space fit work_mem, else streamed from temporary files in blocks
 * that fit (the same pairs); ERROR, before any product, when the lists and
 * ids alone do not fit.  fn once per pair, in ascending source id.
 * Cancellable between blocks; threads as corpq.threads (or a job's).  The
 * sets' files are closed.
 */
void		corpq_mine_sets(CorpqVectorSet *src, CorpqVectorSet *tgt,
							const cq_mine_options *o, CorpqMinePairFn fn, void *arg);

/*
 * One source's candidates for a re-ranking (mine/select.h,
 * cq_mine_candidates): c[0 .. nc) by descending margin, positions in the
 * sets (ids: src->ids[c[q].src], tgt->ids[c[q].tgt]); nc >= 1.
 */
typedef void (*CorpqMineCandidatesFn) (void *arg, const cq_mine_pair *c, int nc);

/*
 * corpq_mine_sets' lists, then for each source in ascending id its kc
 * (1 .. o->k) best candidates by margin that may be pairs (min_margin, and
 * with mutual the target's best source is it): fn once per source with at
 * least one.  With kc = 1 the candidates are corpq_mine_sets' pairs.  The
 * memory of corpq_mine_sets less the pairs, plus held: the bytes the caller
 * holds meanwhile (what it keeps to judge the candidates), counted against
 * work_mem with the lists.  The sets' files are closed and their ids kept.
 */
void		corpq_mine_sets_candidates(CorpqVectorSet *src, CorpqVectorSet *tgt,
									   const cq_mine_options *o, int kc, double held,
									   CorpqMineCandidatesFn fn, void *arg);

/*
 * The CorpqMinePairFn of the mining functions: the pair as a row (src_id,
 * tgt_id, cosine, margin) of a materialized SRF; rsinfo: its ReturnSetInfo.
 */
void		corpq_mine_put_pair(void *rsinfo, int64 src_id, int64 tgt_id, double cosine,
								double margin);

/* ---- sentences embedded in batches (embed_rows.c) ---- */

/* ERROR unless the session's current model is an encoder model; what: the caller, for the hint. */
void		corpq_embed_require_encoder(const CorpqModelSession *s, const char *what);

/* That ERROR for model (a spec: "name" or "name@N"), when the caller found it is not one. */
void		corpq_embed_not_encoder(const char *model, const char *what) pg_attribute_noreturn();

/* A vector of d floats as a real[] (palloc'd), the value every embedding function returns. */
Datum		corpq_embed_array(const float *v, int d);

/* The dimension of the current (encoder) model's vectors. */
int			corpq_embed_dim(const CorpqModelSession *s);

/* One sentence of a batch: its text in, its tokens and whether it has a vector out. */
typedef struct CorpqEmbedRow
{
	const char *text;			/* NULL: a NULL sentence, no vector */
	int			len;			/* bytes */
	bool		null;			/* out: no vector (a NULL sentence, or too long) */
	int			tokens;			/* out, when not null: the sentence's tokens */
} CorpqEmbedRow;

typedef struct CorpqEmbedArgs
{
	int			batch_size;		/* sentences per pass, at most */
	CorpqTooLong on_too_long;	/* a sentence longer than the model accepts */
} CorpqEmbedArgs;

/* The default of batch_size: as score()'s. */
#define CORPQ_EMBED_BATCH_SIZE 64

/*
 * Rows a caller reads and hands to corpq_embed_rows at once for batch_size:
 * whole batches, enough to sort by length, and their vectors (rows * d
 * floats) small beside the model.
 */
int			corpq_embed_block_rows(int batch_size);

/*
 * Embed rows[0..n) with the session's current model (an encoder: checked):
 * the sentences are encoded, ordered by length and embedded batch_size at a
 * time (cut to corpq.max_batch_mb); row i's vector goes to
 * out[i * dim .. (i + 1) * dim) (untouched for a null row).  A sentence's
 * vector has the same bits alone or in any batch and on any number of
 * threads (nn/infer/encode.h), so every caller agrees with corpq.embed().
 * Scratch memory is freed on return; the workspace stays with the session.
 */
void		corpq_embed_rows(CorpqModelSession *s, const CorpqEmbedArgs *a, CorpqEmbedRow *rows,
							 int n, float *out);

/* ---- option tables of embed_rows() and embed_job() (embed_options.c) ---- */

typedef struct CorpqEmbedRowsOptions
{
	int			batch_size;
	int			on_too_long;	/* CorpqTooLong (model.h) */
} CorpqEmbedRowsOptions;
extern const CorpqOptionTable corpq_embed_rows_options;

typedef struct CorpqEmbedJobOptions
{
	char	   *column;			/* the target's column for the vectors */
	int			batch_size;
	int			chunk_rows;
	int			threads;		/* the job's (pg/jobs/jobs.h) */
	bool		skip_existing;
	int			on_too_long;	/* CorpqTooLong (model.h) */
	bool		foreign_target; /* a target of another role's is intended (row_job.h) */
	char	   *version_column; /* the target's column for the model's version, or NULL */
} CorpqEmbedJobOptions;
extern const CorpqOptionTable corpq_embed_job_options;

/* ---- the job kind "embed" (embed_job.c) ---- */

/* _PG_init's call for embed/: register the job kind "embed". */
void		corpq_embed_init(void);

#endif
