/*
 * Transformer models in the corpq catalog (corpq.model_catalog,
 * corpq.model_versions) and the backend cache of loaded models: the catalog
 * (model_resolve.c, model_versions.c, model_sql.c, model_quantize.c; option
 * tables model_options.c), the cache (model_cache.c), pinning (model_pin.c: corpq_model_pin and the type
 * corpq.pinned_model) and the model session every user of a model goes
 * through (model_session.h).  Scoring is pg/score, translation
 * pg/translate, embeddings pg/embed.
 *
 * A version's weights never change and its number is issued once
 * (corpq.issued_versions: a dropped model's numbers are never given to a new
 * model of the same name), so "name@N" means one weight image for ever.  A
 * loaded model is cached under (catalog, model id, version, checksum) and is
 * never stale; resolving a name to a version is the only lookup that can
 * change between queries, and SQL functions do it once per query
 * (model_session.h).
 */
#ifndef CORPQ_PG_MODEL_H
#define CORPQ_PG_MODEL_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/jsonb.h"

#include "nn/model/model.h"
#include "pg/base/options.h"
#include "text/vocabulary.h"

/* ---- options (model_options.c) ---- */

/*
 * on_too_long, the option of the functions that run a model (pg/score,
 * pg/embed), which a model session's encoding obeys (model_session.h): what
 * a pair gets when a side is longer than the model accepts
 * (max_positions - 1 tokens).  Hours into a corpus, one overlong line must
 * not cost the statement, so NULL is the default; 'error' stops at the
 * first one, naming the limit.
 */
typedef enum CorpqTooLong
{
	CORPQ_TOO_LONG_NULL,		/* no score (NULL, no rows), counted */
	CORPQ_TOO_LONG_ERROR		/* ERROR program_limit_exceeded */
} CorpqTooLong;

/* The names on_too_long takes, NULL-terminated, in CorpqTooLong's order. */
extern const char *const corpq_too_long_names[];

/* The value of an on_too_long argument; ERROR listing the valid ones. */
CorpqTooLong corpq_too_long_from_name(const char *name);

/*
 * The on_too_long argument at position argno of a SQL call, or 'null' when
 * the call has fewer arguments: each scoring function has a signature
 * without it (0.1.0's, kept for the views and indexes that call it) on the
 * same C function, and a library newer than the catalog is called through
 * the older definitions until ALTER EXTENSION corpq UPDATE.  Arguments
 * beyond PG_NARGS() are not there to read.
 */
CorpqTooLong corpq_too_long_arg(FunctionCallInfo fcinfo, int argno);

/* corpq.model_quantize()'s options (model_quantize.c). */
typedef struct CorpqQuantizeOptions
{
	int			weight_bits;	/* the weights' code width (nn/ops/qgemm.h) */
	int			embedding_precision;	/* cq_precision of the token embeddings */
} CorpqQuantizeOptions;

extern const CorpqOptionTable corpq_quantize_options;

/*
 * corpq.model_import()'s and model_import_lo()'s options (model_options.c):
 * precision (a cq_precision: float32 stores the image as given, int8
 * quantizes a float32 image while importing it) and, with int8, the
 * quantization's (weight_bits, embedding_precision: ERROR without int8).
 */
typedef struct CorpqImportOptions
{
	int			precision;
	CorpqQuantizeOptions quantize;
} CorpqImportOptions;

extern const CorpqOptionTable corpq_import_options;

/*
 * The import options at argument argno of fcinfo ('{}' when the call has
 * fewer arguments: the 0.1.0 signature until ALTER EXTENSION UPDATE).
 */
void		corpq_import_options_arg(FunctionCallInfo fcinfo, int argno, CorpqImportOptions *o);

/* The bytes of an image's head corpq_quantize_begin reads ahead (at most). */
#define CORPQ_QUANTIZE_HEAD ((Size) 4 * 1024 * 1024)

/* The names of embedding_precision's values, by cq_precision. */
extern const char *const corpq_precision_names[];

/* ---- the catalog ---- */

/* A model version a name resolved to. */
typedef struct CorpqModelRef
{
	Oid			catalog;		/* corpq.model_versions' OID: ids restart with a new extension */
	int64		id;				/* corpq.model_catalog.id */
	int32		version;
	int64		checksum;		/* the image's CRC-32 */
	char	   *name;			/* model name, without @N */
	char	   *src_vocab;
	char	   *tgt_vocab;
} CorpqModelRef;

/*
 * GUC corpq.model_cache_mb: bound of the backend's model cache, at most
 * corpq.max_model_cache_mb (superuser): refused above it when a role sets it
 * (corpq_guc_ceiling_applies), and the cache is trimmed to the smaller.
 */
extern int	corpq_model_cache_mb;
extern int	corpq_max_model_cache_mb;

/*
 * GUC corpq.max_model_mb: the backend memory one model operation may take.
 * Checked before anything is allocated, from the model's size and the
 * measured peak of the operation (docs/models.md, "Memory"):
 *   writing a model (model_create, model_import): the parsed model and its
 *     image side by side, then PostgreSQL's insertion of the image (its tuple
 *     copy and toasting): 5.5 times the image for the base preset (293 MB,
 *     1.62 GB at the peak), counted as CORPQ_WRITE_PEAK times;
 *   loading a model for inference (the cache): computed exactly from the
 *     image's configuration before the model is allocated
 *     (cq_modelfile_memory: the image, the weights as read, their packed
 *     copies, the sinusoid table), plus CORPQ_CONTEXT_SLACK for the memory
 *     contexts; a cache entry never holds more than that.
 */
extern int	corpq_max_model_mb;

#define CORPQ_WRITE_PEAK 6

/*
 * What a model's memory context takes beyond the bytes the core asks for:
 * its first blocks and the chunk headers (a cached model's context holds a
 * few small allocations and one chunk per large one).
 */
#define CORPQ_CONTEXT_SLACK ((Size) 256 * 1024)

/*
 * ERROR (program_limit_exceeded) when `factor` times `bytes` (a model's
 * parameter block or weight image, named by what) exceeds corpq.max_model_mb;
 * doing says what would have taken the memory ("create", "import", "load").
 */
void		corpq_check_model_memory(double bytes, int factor, const char *what,
									 const char *doing);

/*
 * GUCs corpq.max_models_per_role and corpq.max_model_bytes_per_role
 * (superuser, per role with ALTER ROLE ... SET; -1: no limit): the models a
 * role owns, and the bytes of the weight images of all their versions.
 */
extern int	corpq_max_models_per_role;
extern int	corpq_max_model_bytes_per_role;

/* model_init's call: define the two. */
void		corpq_model_quota_init(void);

/*
 * With SPI connected: ERROR (configuration_limit_exceeded) when owner's
 * models would pass a quota: new_model, one more model than
 * corpq.max_models_per_role; new_bytes more (a version's image) than
 * corpq.max_model_bytes_per_role.  Every path that writes a model's row or
 * a version calls it first (insert_model in model_sql.c,
 * corpq_model_write_version).
 */
void		corpq_model_quota_check(Oid owner, bool new_model, int64 new_bytes);

/*
 * GUC corpq.max_batch_mb: largest work space one scoring or translation batch
 * may take.  Batches are cut to fit (a pair's result does not depend on its
 * batch); a single pair or sentence that needs more is an error.
 */
extern int	corpq_max_batch_mb;

/* corpq.max_batch_mb in bytes. */
Size		corpq_batch_bytes_limit(void);

/*
 * ERROR (program_limit_exceeded) for a batch of n items (what: "sentence
 * pair", "sentence"; plural with an s) that needs need bytes, more than
 * corpq.max_batch_mb.
 */
void		corpq_batch_too_large(int n, const char *what, Size need) pg_attribute_noreturn();

/*
 * _PG_init's call for model/: define corpq.max_model_cache_mb,
 * corpq.model_cache_mb, corpq.max_model_mb and corpq.max_batch_mb.
 */
void		corpq_model_init(void);

/*
 * Resolve "name" (latest version) or "name@N" into ref, its strings allocated
 * in CurrentMemoryContext.  With pinned, only "name@N" is accepted.  ERROR
 * (undefined_object) for an unknown model, listing the existing ones, for a
 * version that was dropped (its number is never reused), or for a missing
 * version, listing the model's versions.
 */
void		corpq_model_resolve(const char *spec, bool pinned, CorpqModelRef *ref);

/* Split "name@N": returns true and sets *version (>= 1) if spec has that form. */
bool		corpq_model_split_spec(const char *spec, int *name_len, int32 *version);

/*
 * The one pin of a model name (model_pin.c): spec ("name" or "name@N") as
 * "name@N" with the version it names now (the latest for a bare name), so
 * that a job, a filter spec or a long call keeps that version whatever is
 * committed meanwhile.  ERROR, as corpq_model_resolve, if the model or
 * version does not exist.
 */
char	   *corpq_model_pin(const char *spec);

/*
 * The loaded model of ref, from the backend cache (loading it on a miss).
 * The pointer is valid until the next call of corpq_model_get (which may
 * evict it): call it again after running anything that may score.
 */
const cq_model *corpq_model_get(const CorpqModelRef *ref);

/*
 * ---- one copy per server (model_shared.c, docs/models.md) ----
 *
 * With corpq in shared_preload_libraries, loaded versions live once in
 * dynamic shared memory segments pinned for the server's life, listed in a
 * shared directory keyed by (database, catalog, model id, version,
 * checksum); every backend, parallel worker and job attaches instead of
 * loading.  GUC corpq.shared_model_cache_mb (superuser; 0: off) bounds the
 * segments; unused entries are evicted least recently used first, an
 * ordinary role's load evicting only entries that role loaded (and dead
 * ones).  A full budget makes a load keep a private copy with a NOTICE.
 * The backend cache (model_cache.c) holds an entry from find or publish
 * until it evicts its private entry (release) or exits.
 */
extern int	corpq_shared_model_cache_mb;

typedef struct CorpqSharedUse
{
	int			slot;			/* -1: none */
	uint64		serial;
	int32		version;
	Size		bytes;			/* the segment's */
	char		name[NAMEDATALEN];
} CorpqSharedUse;

/* What an entry of the shared directory holds. */
typedef enum CorpqSharedKind
{
	CORPQ_SHARED_MODEL,			/* a model version (nn/model/model.h's arena) */
	CORPQ_SHARED_VOCAB,			/* a vocabulary's token table (text/vocabulary.h) */
	CORPQ_SHARED_WORDPIECE		/* a WordPiece segmenter (text/wordpiece.h) */
} CorpqSharedKind;

typedef struct CorpqSharedInfo
{
	CorpqSharedKind kind;
	int			slot;
	uint64		serial;
	char		name[NAMEDATALEN];
	int32		version;
	Size		bytes;
	int			refs;			/* backends attached */
	uint64		last_use;
	bool		dead;
} CorpqSharedInfo;

/* _PG_init's call: the GUC, and the shared memory hooks when preloading. */
void		corpq_model_shared_init(void);
bool		corpq_shared_models_enabled(void);

/* The shared copy of ref attached (in CurrentMemoryContext), or NULL: none. */
cq_model   *corpq_shared_model_find(const CorpqModelRef *ref, CorpqSharedUse *use);

/*
 * Copy m (loaded privately, packed and compact) into a new segment and
 * return the model attached to it, or NULL when it stays private (a NOTICE
 * says why when the budget or shared memory is short).
 */
cq_model   *corpq_shared_model_publish(const CorpqModelRef *ref, const cq_model *m,
									   CorpqSharedUse *use);
void		corpq_shared_model_release(CorpqSharedUse *use);

/* model_drop: the entries of model name (this database) die. */
void		corpq_shared_model_forget(const char *name);

/* Bumped by every forget; a use whose entry died (forgotten or gone). */
uint64		corpq_shared_model_deaths(void);
bool		corpq_shared_model_dead(const CorpqSharedUse *use);

/* The ready entries of the directory of this database (models). */
int			corpq_shared_model_list(CorpqSharedInfo *out, int max);

/*
 * Vocabularies' token tables share the directory, the budget, its eviction
 * and fairness rules and the crash-restart rule (docs/models.md, "One copy
 * per server"), keyed by a ref whose catalog is corpq.vocabularies' OID, id
 * the row's xmin, version its size and checksum its creation time, name the
 * vocabulary's (corpq_vocab_identity), so a vocabulary dropped and created
 * again under its name is never served from the old copy: a lookup that
 * meets a copy of the name under another identity makes it die.  A backend
 * holds a copy once per find or publish (one per loaded CorpqVocab, let go
 * with corpq_shared_model_release when that is freed).
 *
 * find: true with *v reading the shared copy in place, else false (none).
 * publish: private_v copied into a new segment and *v attached to it, or
 * false when it stays private (a NOTICE says why when short of room).
 */
bool		corpq_shared_vocab_find(const CorpqModelRef *ref, CorpqSharedUse *use, cq_vocabulary *v);
bool		corpq_shared_vocab_publish(const CorpqModelRef *ref, const cq_vocabulary *private_v,
									   CorpqSharedUse *use, cq_vocabulary *v);
/*
 * The ready vocabulary and segmenter entries of this database (version:
 * the token count).
 */
int			corpq_shared_vocab_list(CorpqSharedInfo *out, int max);

/*
 * Segmenters (kind CORPQ_SHARED_WORDPIECE) share the directory under the
 * same rules as token tables, keyed by a ref whose catalog is
 * corpq.bpe_models' OID, id the row's xmin, version its size (n_merges)
 * and checksum its creation time, name the segmenter's
 * (corpq_segmenter_identity); the caller attaches the bytes itself.
 *
 * blob_find: the address of the ready entry's copy (use->bytes long), held
 * once more, or NULL (none).  blob_publish: a new entry of bytes filled by
 * fill(obj), held, its address; NULL when it stays private (a NOTICE says
 * why when short of room; what names the object in it).  A caller that
 * cannot attach the copy lets go (corpq_shared_model_release) and loads.
 */
typedef cq_code (*CorpqSharedFill) (const void *obj, void *dst, size_t size, cq_error *err);

void	   *corpq_shared_blob_find(const CorpqModelRef *ref, CorpqSharedKind kind,
								   CorpqSharedUse *use);
void	   *corpq_shared_blob_publish(const CorpqModelRef *ref, CorpqSharedKind kind,
									  const char *what, Size bytes, CorpqSharedFill fill,
									  const void *obj, CorpqSharedUse *use);

/*
 * How many models this backend's cache has evicted so far.  Code that keeps
 * a model pointer across calls that may load other models (a translator
 * held while a user query runs) compares it before using the pointer again:
 * if it changed, the pointer may be gone, and corpq_model_get gives the
 * current one.
 */
uint64		corpq_model_cache_evictions(void);

/*
 * ---- storage of a version's image (model_versions.c) ----
 *
 * A version's image is the rows of corpq.model_chunks (model, version,
 * chunk 0, 1, ...), each CORPQ_MODEL_CHUNK bytes but the last; its row in
 * corpq.model_versions holds its length (bytes) and CRC-32 trailer
 * (checksum).  Written and read as a stream, a chunk at a time: no image is
 * ever one datum, so no image size meets bytea's 1 GB, and pg_dump writes
 * one chunk per row.
 */
#define CORPQ_MODEL_CHUNK ((Size) 16 * 1024 * 1024)

/* Import and export report progress (a NOTICE) every this many chunks. */
#define CORPQ_MODEL_PROGRESS_CHUNKS 16

/* A version being written, chunk by chunk (corpq_image_writer_*). */
typedef struct CorpqImageWriter
{
	int64		model_id;
	int32		version;
	char	   *name;			/* model name, without @N */
	Size		total;			/* the image's length, as announced */
	Size		written;		/* bytes given so far */
	uint32		checksum;		/* the announced CRC-32 trailer */
	uint32		crc;			/* CRC-32 of the bytes before the trailer so far */
	int32		chunk;			/* chunks stored (in order: the next one's number) */
	bool		progress;		/* NOTICEs every CORPQ_MODEL_PROGRESS_CHUNKS chunks */
	MemoryContext cxt;			/* begin's: what the writer allocates later */
	bytea	   *buf;			/* the chunk being filled */
	Size		fill;
	/* corpq_image_writer_put_chunk */
	int32		n_chunks;		/* the image's */
	bool	   *chunk_seen;
	uint32	   *chunk_crc;		/* each chunk's CRC-32 of its bytes before the trailer */
	unsigned char trailer[4];
} CorpqImageWriter;

/*
 * Begin the next version of model model_id, an image of total bytes whose
 * CRC-32 trailer is checksum: the owner and quota checks, the version's
 * number and its corpq.model_versions row (as corpq_model_write_version
 * says).  Then corpq_image_writer_put the image's bytes in order, in pieces
 * of any size (a full chunk is inserted as soon as it is), and
 * corpq_image_writer_end, which ERRORs (data_corrupted) unless exactly
 * total bytes came and their CRC-32 is checksum: the transaction then
 * rolls back, so no version is ever half visible.
 */
void		corpq_image_writer_begin(CorpqImageWriter *w, int64 model_id, Size total,
									 uint32 checksum, const char *source, int64 step,
									 Jsonb *metrics, bool best, bool int8, bool progress);
void		corpq_image_writer_put(CorpqImageWriter *w, const void *data, Size len);
int32		corpq_image_writer_end(CorpqImageWriter *w);

/*
 * The other way to write the image, for a writer whose chunks complete out
 * of order (the int8 image of a float32 one, corpq_quantize_*): begin with
 * checksum 0, then corpq_image_writer_put_chunk each chunk once, whole
 * (CORPQ_MODEL_CHUNK bytes but the last), in any order, and
 * corpq_image_writer_end_chunks, which ERRORs (data_corrupted) unless every
 * chunk came and their CRC-32, joined in chunk order, is the image's
 * trailer, then sets the version row's checksum (the version stays
 * invisible until the transaction commits).  The memory is one chunk.
 */
void		corpq_image_writer_put_chunk(CorpqImageWriter *w, int32 chunk, const void *data, Size len);
int32		corpq_image_writer_end_chunks(CorpqImageWriter *w);

/*
 * ---- quantizing a float32 image as it streams (model_quantize.c) ----
 *
 * The one path every int8 image the server makes goes through
 * (model_quantize, and model_import / model_import_lo with precision int8):
 * nn/model/modelfile.h's cq_modelquant, which writes the int8 image
 * corpq_model_quantize always wrote, byte for byte, from the float32 image's
 * bytes in order, never holding the float32 image, the model or the int8
 * image: the int8 image comes out in chunks (CORPQ_MODEL_CHUNK), each
 * stored as soon as its last byte is written (corpq_image_writer_put_chunk),
 * so the memory is the few chunks being filled (peak_chunks, counted before
 * the stream) plus one row.  corpq_quantize_begin takes the image's first
 * head_len bytes (header, configuration and tensor table) and its length,
 * checks them (ERROR "<what> is int8 already" for an int8 image, a model
 * too wide for qgemm, an invalid head, chunks over corpq.max_model_mb);
 * corpq_quantize_open begins the next version of model_id (owner and
 * quota checks, its row); then corpq_quantize_put every byte of the image
 * in order, from byte 0; corpq_quantize_store checks the stream (length,
 * CRC-32, values: ERROR data_corrupted-like, the transaction rolls back),
 * stores the last chunks and sets the version's checksum; returns the
 * version.
 */
typedef struct CorpqQuantizeStream
{
	const char *name;			/* the model, for messages */
	void	   *q;				/* cq_modelquant */
	Size		out_len;		/* the int8 image's */
	int			peak_chunks;	/* the most chunks of it open at once */
	bool		open;			/* corpq_quantize_open was called */
	MemoryContext cxt;			/* begin's: the open chunks live in it (a put may
								 * come from a reader's shorter-lived context) */
	CorpqImageWriter w;
	CorpqQuantizeOptions o;
} CorpqQuantizeStream;

void		corpq_quantize_begin(CorpqQuantizeStream *s, const char *name, const char *what,
								 const char *head, Size head_len, Size image_len,
								 const CorpqQuantizeOptions *o);
void		corpq_quantize_open(CorpqQuantizeStream *s, int64 model_id, const char *source,
								Jsonb *metrics);
void		corpq_quantize_put(CorpqQuantizeStream *s, const char *data, Size len);
int32		corpq_quantize_store(CorpqQuantizeStream *s);

/*
 * Called by corpq_model_image_stream with each chunk of an image in order
 * (data valid only during the call), at offset bytes from its start.
 */
typedef void (*CorpqImageSink) (void *arg, const char *data, Size len, Size offset);

/*
 * The length of version `version` of model id (named name in errors), and
 * its first min(want, length) bytes into head (when head is not NULL).
 * expect_checksum >= 0: the version must have that checksum.  ERROR
 * (undefined_object) when the version is gone.
 */
Size		corpq_model_image_head(int64 id, int32 version, const char *name,
								   int64 expect_checksum, char *head, Size want);

/*
 * Stream that version's image to sink, a chunk at a time, as the caller
 * (RLS).  Checks the chunks are 0..n-1, their lengths add up to the
 * version's bytes and the CRC-32 of the stream is its checksum: ERROR
 * (data_corrupted) naming the model and version otherwise, after the sink
 * has seen the chunks before the damage (callers discard them).  progress:
 * NOTICEs every CORPQ_MODEL_PROGRESS_CHUNKS chunks.
 */
void		corpq_model_image_stream(int64 id, int32 version, const char *name,
									 int64 expect_checksum, bool progress,
									 CorpqImageSink sink, void *arg);

/*
 * The whole image of that version in one allocation of CurrentMemoryContext
 * (a huge allocation: any size), its length in *len.
 */
char	   *corpq_model_image_read(int64 id, int32 version, const char *name,
								   int64 expect_checksum, Size *len);

/*
 * Insert the next version of model model_id with weight image weights (a
 * valid image, e.g. from cq_modelfile_write; its CRC-32 trailer becomes the
 * checksum), through the image writer.  Its number is one more than the last the model's name ever
 * issued (corpq.issued_versions), so it is never one a dropped version had.  source is 'create', 'import', 'checkpoint' or 'quantize';
 * int8 says the image's precision; step < 0 and metrics NULL store NULL;
 * best clears the flag on the other versions.  ERROR unless the current user
 * is a member of the model's owner role.  Returns the version number written.
 */
int32		corpq_model_write_version(int64 model_id, bytea *weights, const char *source,
									  int64 step, Jsonb *metrics, bool best, bool int8);

/*
 * Whether version of model_id is int8 (corpq.model_quantize); *from: the
 * version it was quantized from (0 when unknown, e.g. imported int8).
 */
bool		corpq_model_version_int8(int64 model_id, int32 version, int32 *from);

/*
 * The weight image of spec ("name" or "name@N"), as model_export returns it:
 * ERROR (program_limit_exceeded) for an image a bytea cannot hold, with a
 * hint at corpq.model_export_lo.
 */
bytea	   *corpq_model_image(const char *spec, bool pinned);

/*
 * ERROR unless config is a configuration model_create accepts with these
 * vocabularies (checked as model_create does, nothing written): for callers
 * that create models later, in a job.
 */
void		corpq_model_config_check(Jsonb *config, const char *src_vocab,
									 const char *tgt_vocab);


#endif
