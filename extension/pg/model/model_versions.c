/*
 * What a role stores (model.h): the storage quotas, corpq.max_models_per_role
 * and corpq.max_model_bytes_per_role (superuser settings: a DBA binds a role
 * with ALTER ROLE ... SET; the role cannot raise them), checked before a
 * model's catalog row or a version's image is written; the writing of a new
 * version of a catalog model, which checks them; and the storage of its image
 * as chunks (corpq.model_chunks), written and read as a stream with its
 * CRC-32 checked over the whole image.
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "common/crc32.h"
#include "common/le.h"
#include "pg/base/catalog.h"
#include "pg/base/internal_sql.h"
#include "pg/base/base.h"
#include "pg/model/model.h"
#include "pg/text/text.h"

int			corpq_max_models_per_role = 1000;
int			corpq_max_model_bytes_per_role = 16 * 1024;	/* MB */

void
corpq_model_quota_init(void)
{
	DefineCustomIntVariable("corpq.max_models_per_role",
							"Most models a role may own; -1: no limit.",
							"Superuser setting, also per role with ALTER ROLE ... SET: checked before "
							"model_create or model_import makes a new model of the role.",
							&corpq_max_models_per_role,
							1000, -1, INT_MAX,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("corpq.max_model_bytes_per_role",
							"Most bytes of weight images a role's models may store, all versions; -1: no limit.",
							"Superuser setting, also per role with ALTER ROLE ... SET: checked before any "
							"version is written (create, import, quantize, training checkpoints).",
							&corpq_max_model_bytes_per_role,
							16 * 1024, -1, INT_MAX / 2,
							PGC_SUSET, GUC_UNIT_MB,
							NULL, NULL, NULL);
}

void
corpq_model_quota_check(Oid owner, bool new_model, int64 new_bytes)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(owner)};
	bool		isnull;
	int64		models,
				bytes;
	double		limit = (double) corpq_max_model_bytes_per_role * 1024 * 1024;
	char	   *role;

	if (corpq_max_models_per_role < 0 && corpq_max_model_bytes_per_role < 0)
		return;
	/* every version of the role's models: a count over every row, as the owner */
	if (corpq_sql_as_owner("SELECT (SELECT pg_catalog.count(*) FROM corpq.model_catalog "
						   "        WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $1), "
						   "       (SELECT COALESCE(pg_catalog.sum(v.bytes), 0)::pg_catalog.int8 "
						   "          FROM corpq.model_versions v JOIN corpq.model_catalog c "
						   "            ON c.id OPERATOR(pg_catalog.=) v.model "
						   "         WHERE c.owner::pg_catalog.oid OPERATOR(pg_catalog.=) $1)",
						   1, argtypes, values, NULL, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not count the models of role %u", owner);
	models = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	bytes = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	role = GetUserNameFromId(owner, true);
	if (!role)
		role = psprintf("%u", owner);
	if (new_model && corpq_max_models_per_role >= 0 && models >= corpq_max_models_per_role)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("role \"%s\" owns %lld models, the most corpq.max_models_per_role (%d) allows",
						role, (long long) models, corpq_max_models_per_role),
				 errhint("Drop a model with corpq.model_drop, or ask a superuser to raise "
						 "corpq.max_models_per_role (ALTER ROLE ... SET).")));
	if (corpq_max_model_bytes_per_role >= 0 && (double) bytes + new_bytes > limit)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("a model version of %.1f MB would bring the models of role \"%s\" to %.1f MB, "
						"more than corpq.max_model_bytes_per_role (%d MB)",
						new_bytes / (1024.0 * 1024), role, (bytes + new_bytes) / (1024.0 * 1024),
						corpq_max_model_bytes_per_role),
				 errdetail("The role's models store %.1f MB in all their versions.",
						   bytes / (1024.0 * 1024)),
				 errhint("Drop models with corpq.model_drop, or ask a superuser to raise "
						 "corpq.max_model_bytes_per_role (ALTER ROLE ... SET).")));
}

void
corpq_image_writer_begin(CorpqImageWriter *w, int64 model_id, Size total, uint32 checksum,
						 const char *source, int64 step, Jsonb *metrics, bool best, bool int8,
						 bool progress)
{
	Oid			argtypes[9] = {INT8OID, INT8OID, INT8OID, TEXTOID, INT8OID, JSONBOID, BOOLOID, TEXTOID,
	INT4OID};
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	char	   *name;
	Oid			owner;
	MemoryContext caller = CurrentMemoryContext;

	if (total < 4)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model weight image too short: %zu bytes", total)));
	if (!OidIsValid(get_relname_relid("model_chunks", corpq_schema_oid())))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("corpq's catalog in this database is older than its library: model versions cannot be written"),
				 errhint("Run ALTER EXTENSION corpq UPDATE.")));
	values[0] = Int64GetDatum(model_id);
	values[1] = Int64GetDatum((int64) total);
	values[2] = Int64GetDatum((int64) checksum);
	values[3] = CStringGetTextDatum(source);
	values[4] = Int64GetDatum(step);
	values[5] = PointerGetDatum(metrics);
	values[6] = BoolGetDatum(best);
	values[7] = CStringGetTextDatum(int8 ? "int8" : "float32");
	if (step < 0)
		nulls[4] = 'n';
	if (metrics == NULL)
		nulls[5] = 'n';

	SPI_connect();
	if (corpq_sql_as_caller("SELECT name, owner::pg_catalog.oid FROM corpq.model_catalog "
							"WHERE id OPERATOR(pg_catalog.=) $1",
							1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "model %lld does not exist", (long long) model_id);
	name = MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	if (!corpq_caller_is_member(owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to write a version of model \"%s\"", name),
				 errhint("Only members of the model's owner role can write versions.")));
	/* the owner's storage quota, before anything is written */
	corpq_model_quota_check(owner, false, (int64) total);
	/* Locks the model row: versions are numbered under it. */
	if (corpq_sql_as_owner("UPDATE corpq.model_catalog SET updated = pg_catalog.now() "
						   "WHERE id OPERATOR(pg_catalog.=) $1 RETURNING name",
						   1, argtypes, values, NULL, 0) != SPI_OK_UPDATE_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not update corpq.model_catalog");
	if (best &&
		corpq_sql_as_owner("UPDATE corpq.model_versions SET best = false "
						   "WHERE model OPERATOR(pg_catalog.=) $1 AND best",
						   1, argtypes, values, NULL, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update corpq.model_versions");
	w->version = corpq_catalog_issue_version(&corpq_kind_model, model_id, name);
	values[8] = Int32GetDatum(w->version);
	if (corpq_sql_as_owner("INSERT INTO corpq.model_versions "
						   "(model, version, bytes, checksum, source, step, metrics, best, precision) "
						   "VALUES ($1, $9, $2, $3, $4, $5, $6, $7, $8)",
						   9, argtypes, values, nulls, 0) != SPI_OK_INSERT ||
		SPI_processed != 1)
		elog(ERROR, "could not insert into corpq.model_versions");
	SPI_finish();
	w->model_id = model_id;
	w->name = name;
	w->total = total;
	w->written = 0;
	w->checksum = checksum;
	w->crc = 0;
	w->chunk = 0;
	w->progress = progress && total > CORPQ_MODEL_PROGRESS_CHUNKS * CORPQ_MODEL_CHUNK;
	w->cxt = caller;			/* what it allocates later lives as long as w */
	w->buf = NULL;				/* with the first byte */
	w->fill = 0;
	w->n_chunks = (int32) ((total + CORPQ_MODEL_CHUNK - 1) / CORPQ_MODEL_CHUNK);
	w->chunk_crc = NULL;
	w->chunk_seen = NULL;
	memset(w->trailer, 0, sizeof(w->trailer));
}

/* Insert w->buf's w->fill bytes as chunk number `chunk`; one more stored. */
static void
insert_chunk(CorpqImageWriter *w, int32 chunk)
{
	Oid			argtypes[4] = {INT8OID, INT4OID, INT4OID, BYTEAOID};
	Datum		values[4];
	int32		stored;

	SET_VARSIZE(w->buf, VARHDRSZ + w->fill);
	values[0] = Int64GetDatum(w->model_id);
	values[1] = Int32GetDatum(w->version);
	values[2] = Int32GetDatum(chunk);
	values[3] = PointerGetDatum(w->buf);
	SPI_connect();
	if (corpq_sql_as_owner("INSERT INTO corpq.model_chunks (model, version, chunk, data) "
						   "VALUES ($1, $2, $3, $4)",
						   4, argtypes, values, NULL, 0) != SPI_OK_INSERT || SPI_processed != 1)
		elog(ERROR, "could not insert into corpq.model_chunks");
	SPI_finish();
	stored = ++w->chunk;
	w->fill = 0;
	if (w->progress && stored % CORPQ_MODEL_PROGRESS_CHUNKS == 0)
		ereport(NOTICE,
				(errmsg("model \"%s@%d\": %zu of %zu MB stored",
						w->name, w->version, w->written >> 20, w->total >> 20)));
}

/* Insert the chunk in w->buf, the next in order. */
static void
writer_flush(CorpqImageWriter *w)
{
	if (w->fill == 0)
		return;
	insert_chunk(w, w->chunk);
}

void
corpq_image_writer_put(CorpqImageWriter *w, const void *data, Size len)
{
	const char *p = data;
	Size		body = w->total - 4;	/* the bytes the CRC covers */

	if (len > w->total - w->written)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("weight image of model \"%s@%d\" is longer than its announced %zu bytes",
						w->name, w->version, w->total)));
	if (w->written < body)
		w->crc = cq_crc32(w->crc, p, Min(len, body - w->written));
	if (w->buf == NULL && len > 0)
		w->buf = (bytea *) MemoryContextAlloc(w->cxt, VARHDRSZ + Min(w->total, CORPQ_MODEL_CHUNK));
	while (len > 0)
	{
		Size		n = Min(len, CORPQ_MODEL_CHUNK - w->fill);

		CHECK_FOR_INTERRUPTS();
		memcpy(VARDATA(w->buf) + w->fill, p, n);
		w->fill += n;
		w->written += n;
		p += n;
		len -= n;
		if (w->fill == CORPQ_MODEL_CHUNK)
			writer_flush(w);
	}
}

int32
corpq_image_writer_end(CorpqImageWriter *w)
{
	writer_flush(w);
	if (w->written != w->total)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("weight image of model \"%s@%d\" is truncated: %zu of %zu bytes",
						w->name, w->version, w->written, w->total)));
	if (w->crc != w->checksum)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("weight image of model \"%s@%d\" fails its checksum",
						w->name, w->version),
				 errdetail("The image's CRC-32 is %08x, its trailer says %08x.", w->crc, w->checksum)));
	if (w->buf)
		pfree(w->buf);
	w->buf = NULL;
	return w->version;
}

void
corpq_image_writer_put_chunk(CorpqImageWriter *w, int32 chunk, const void *data, Size len)
{
	Size		start = (Size) chunk * CORPQ_MODEL_CHUNK,
				want,
				body = w->total - 4;

	if (chunk < 0 || chunk >= w->n_chunks ||
		len != (want = Min(CORPQ_MODEL_CHUNK, w->total - start)) ||
		(w->chunk_seen != NULL && w->chunk_seen[chunk]))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("weight image of model \"%s@%d\": chunk %d of %zu bytes does not fit an image of %zu bytes%s",
						w->name, w->version, chunk, len, w->total,
						w->chunk_seen != NULL && chunk >= 0 && chunk < w->n_chunks && w->chunk_seen[chunk]
						? " (it came twice)" : "")));
	if (w->chunk_seen == NULL)
	{
		w->chunk_seen = MemoryContextAllocZero(w->cxt, sizeof(bool) * w->n_chunks);
		w->chunk_crc = MemoryContextAllocZero(w->cxt, sizeof(uint32) * w->n_chunks);
	}
	if (w->buf == NULL)
		w->buf = (bytea *) MemoryContextAlloc(w->cxt, VARHDRSZ + Min(w->total, CORPQ_MODEL_CHUNK));
	CHECK_FOR_INTERRUPTS();
	/* its CRC-32 before the trailer, joined in order at the end */
	w->chunk_crc[chunk] = cq_crc32(0, data, start < body ? Min(len, body - start) : 0);
	for (Size i = Max(start, body); i < start + len; i++)
		w->trailer[i - body] = ((const unsigned char *) data)[i - start];
	w->chunk_seen[chunk] = true;
	memcpy(VARDATA(w->buf), data, len);
	w->fill = len;
	w->written += len;
	insert_chunk(w, chunk);
}

int32
corpq_image_writer_end_chunks(CorpqImageWriter *w)
{
	Oid			argtypes[3] = {INT8OID, INT4OID, INT8OID};
	Datum		values[3];
	Size		body = w->total - 4;
	uint32		crc = 0;

	for (int32 i = 0; i < w->n_chunks; i++)
	{
		Size		start = (Size) i * CORPQ_MODEL_CHUNK;

		if (w->chunk_seen == NULL || !w->chunk_seen[i])
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("weight image of model \"%s@%d\" is truncated: chunk %d never came",
							w->name, w->version, i)));
		crc = cq_crc32_combine(crc, w->chunk_crc[i], start < body ? Min(CORPQ_MODEL_CHUNK, body - start) : 0);
	}
	w->checksum = cq_le_get_u32(w->trailer);
	if (crc != w->checksum)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("weight image of model \"%s@%d\" fails its checksum",
						w->name, w->version),
				 errdetail("The image's CRC-32 is %08x, its trailer says %08x.", crc, w->checksum)));
	/* the version's row, inserted before its first chunk, learns its checksum */
	values[0] = Int64GetDatum(w->model_id);
	values[1] = Int32GetDatum(w->version);
	values[2] = Int64GetDatum((int64) w->checksum);
	SPI_connect();
	if (corpq_sql_as_owner("UPDATE corpq.model_versions SET checksum = $3 "
						   "WHERE model OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2",
						   3, argtypes, values, NULL, 0) != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "could not update corpq.model_versions");
	SPI_finish();
	pfree(w->chunk_seen);
	pfree(w->chunk_crc);
	if (w->buf)
		pfree(w->buf);
	w->chunk_seen = NULL;
	w->chunk_crc = NULL;
	w->buf = NULL;
	return w->version;
}

int32
corpq_model_write_version(int64 model_id, bytea *weights, const char *source,
						  int64 step, Jsonb *metrics, bool best, bool int8)
{
	Size		len = VARSIZE_ANY_EXHDR(weights);
	const unsigned char *p = (const unsigned char *) VARDATA_ANY(weights);
	CorpqImageWriter w;

	if (len < 4)
		elog(ERROR, "model weight image too short");
	corpq_image_writer_begin(&w, model_id, len, cq_le_get_u32(p + len - 4), source, step,
							 metrics, best, int8, false);
	corpq_image_writer_put(&w, p, len);
	return corpq_image_writer_end(&w);
}

/* ---- reading ---- */

/*
 * Whether this database's corpq has corpq.model_chunks.  Between a new
 * library's start and ALTER EXTENSION corpq UPDATE from 0.1.0 (its versions
 * still hold their image in corpq.model_versions.weights), the readers read
 * that column as a version of one chunk, and writers refuse: the server
 * keeps scoring with every stored version until the update moves them.
 */
static bool
chunked_storage(void)
{
	return OidIsValid(get_relname_relid("model_chunks", corpq_schema_oid()));
}

/*
 * The reads of a version's chunks: its head from chunk $4 ($5 bytes), chunk $3,
 * and the count; each in the chunked form and the 0.1.0 one (one chunk 0).
 */
#define CHUNK_HEAD_SQL \
	"SELECT pg_catalog.substring(data, 1, $5) FROM corpq.model_chunks " \
	"WHERE model OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2 " \
	"AND chunk OPERATOR(pg_catalog.=) $4"
#define LEGACY_HEAD_SQL \
	"SELECT pg_catalog.substring(weights, 1, $5) FROM corpq.model_versions " \
	"WHERE model OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2 " \
	"AND $4 OPERATOR(pg_catalog.=) 0"
#define CHUNK_LEN_SQL \
	"SELECT pg_catalog.length(data) FROM corpq.model_chunks " \
	"WHERE model OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2 " \
	"AND chunk OPERATOR(pg_catalog.=) $3"
#define LEGACY_LEN_SQL \
	"SELECT pg_catalog.length(weights) FROM corpq.model_versions " \
	"WHERE model OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2 " \
	"AND $3 OPERATOR(pg_catalog.=) 0"
#define SLICE_SQL \
	"SELECT pg_catalog.substring(data, $4, $5) FROM corpq.model_chunks " \
	"WHERE model OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2 " \
	"AND chunk OPERATOR(pg_catalog.=) $3"
#define LEGACY_SLICE_SQL \
	"SELECT pg_catalog.substring(weights, $4, $5) FROM corpq.model_versions " \
	"WHERE model OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2 " \
	"AND $3 OPERATOR(pg_catalog.=) 0"

/*
 * A chunk is read in slices of this size (a slice of an uncompressed
 * out-of-line value reads only its pages): the reader holds one slice, not
 * one chunk, so a load's peak is the image and the model as counted
 * (cq_modelfile_memory), plus a megabyte.  A chunk's worth would stay
 * resident after it is freed (malloc keeps blocks of that size in its heap).
 */
#define READ_SLICE ((Size) 1024 * 1024)
#define COUNT_SQL \
	"SELECT v.bytes, v.checksum, " \
	"(SELECT pg_catalog.count(*) FROM corpq.model_chunks k " \
	"  WHERE k.model OPERATOR(pg_catalog.=) $1 AND k.version OPERATOR(pg_catalog.=) $2), " \
	"(SELECT COALESCE(pg_catalog.max(k.chunk), -1) FROM corpq.model_chunks k " \
	"  WHERE k.model OPERATOR(pg_catalog.=) $1 AND k.version OPERATOR(pg_catalog.=) $2) " \
	"FROM corpq.model_versions v " \
	"WHERE v.model OPERATOR(pg_catalog.=) $1 AND v.version OPERATOR(pg_catalog.=) $2"
#define LEGACY_COUNT_SQL \
	"SELECT v.bytes, v.checksum, 1::pg_catalog.int8, 0 FROM corpq.model_versions v " \
	"WHERE v.model OPERATOR(pg_catalog.=) $1 AND v.version OPERATOR(pg_catalog.=) $2"

/* ERROR: the stored image of name@version is damaged (what, printf-style). */
static void damaged(const char *name, int32 version, const char *fmt,...) pg_attribute_printf(3, 4) pg_attribute_noreturn();

static void
damaged(const char *name, int32 version, const char *fmt,...)
{
	char		what[256];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("the stored weight image of model \"%s@%d\" is damaged: %s", name, version, what),
			 errhint("Restore corpq.model_chunks from a backup, or drop the model and import it again.")));
}

Size
corpq_model_image_head(int64 id, int32 version, const char *name, int64 expect_checksum,
					   char *head, Size want)
{
	Oid			argtypes[5] = {INT8OID, INT4OID, INT8OID, INT4OID, INT4OID};
	Datum		values[5] = {Int64GetDatum(id), Int32GetDatum(version),
	Int64GetDatum(expect_checksum), Int32GetDatum(0), Int32GetDatum(0)};
	bool		isnull;
	Size		len,
				got = 0;
	bool		chunked = chunked_storage();

	SPI_connect();
	if (corpq_sql_as_caller("SELECT bytes FROM corpq.model_versions "
							"WHERE model OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2 "
							"AND ($3 OPERATOR(pg_catalog.<) 0 OR checksum OPERATOR(pg_catalog.=) $3)",
							3, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.model_versions");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("version %d of model \"%s\" was removed", version, name)));
	len = (Size) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	/* the head may span chunks (a chunk of any size reads: only order and bytes count) */
	for (int32 i = 0; head != NULL && got < Min(want, len); i++)
	{
		bytea	   *b;
		Size		n;

		values[3] = Int32GetDatum(i);
		values[4] = Int32GetDatum((int32) (Min(want, len) - got));
		/* a slice of an uncompressed out-of-line value reads only its pages */
		if (corpq_sql_as_caller(chunked ? CHUNK_HEAD_SQL : LEGACY_HEAD_SQL, 5, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read corpq.model_chunks");
		if (SPI_processed == 0)
			damaged(name, version, "chunk %d is missing", i);
		b = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		n = VARSIZE_ANY_EXHDR(b);
		if (n == 0)
			damaged(name, version, "chunk %d is empty", i);
		memcpy(head + got, VARDATA_ANY(b), n);
		got += n;
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_finish();
	return len;
}

void
corpq_model_image_stream(int64 id, int32 version, const char *name, int64 expect_checksum,
						 bool progress, CorpqImageSink sink, void *arg)
{
	Oid			argtypes[5] = {INT8OID, INT4OID, INT4OID, INT4OID, INT4OID};
	Datum		values[5] = {Int64GetDatum(id), Int32GetDatum(version), Int32GetDatum(0),
	Int32GetDatum(0), Int32GetDatum(0)};
	bool		isnull;
	Size		total,
				done = 0;
	uint32		checksum,
				crc = 0;
	int64		n_chunks,
				max_chunk;
	MemoryContext piece = AllocSetContextCreate(CurrentMemoryContext, "corpq model slice",
												ALLOCSET_DEFAULT_SIZES);
	MemoryContext old;
	bool		chunked = chunked_storage();

	SPI_connect();
	if (corpq_sql_as_caller(chunked ? COUNT_SQL : LEGACY_COUNT_SQL, 2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.model_versions");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("version %d of model \"%s\" was removed", version, name)));
	total = (Size) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	checksum = (uint32) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	n_chunks = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	max_chunk = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4, &isnull));
	if (expect_checksum >= 0 && (int64) checksum != expect_checksum)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("version %d of model \"%s\" was removed", version, name)));
	if (n_chunks == 0)
		damaged(name, version, "it has no chunks");
	/* a gap in the numbers: the loop below names the first missing chunk */
	SPI_freetuptable(SPI_tuptable);
	for (int32 i = 0; i <= max_chunk; i++)
	{
		Size		n;

		CHECK_FOR_INTERRUPTS();
		values[2] = Int32GetDatum(i);
		if (corpq_sql_as_caller(chunked ? CHUNK_LEN_SQL : LEGACY_LEN_SQL, 3, argtypes, values, NULL,
								true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read corpq.model_chunks");
		if (SPI_processed == 0)
			damaged(name, version, "chunk %d is missing", i);
		n = (Size) DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		SPI_freetuptable(SPI_tuptable);
		if (n == 0 || n > total - done)
			damaged(name, version, "chunk %d has %zu bytes, %zu of the image's %zu remain",
					i, n, total - done, total);
		for (Size off = 0; off < n; off += READ_SLICE)
		{
			Size		k = Min(READ_SLICE, n - off);
			bytea	   *b;

			values[3] = Int32GetDatum((int32) off + 1);
			values[4] = Int32GetDatum((int32) k);
			if (corpq_sql_as_caller(chunked ? SLICE_SQL : LEGACY_SLICE_SQL, 5, argtypes, values, NULL,
									true, 1) != SPI_OK_SELECT || SPI_processed != 1)
				elog(ERROR, "could not read corpq.model_chunks");
			old = MemoryContextSwitchTo(piece);
			b = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
			MemoryContextSwitchTo(old);
			if (VARSIZE_ANY_EXHDR(b) != k)
				damaged(name, version, "chunk %d changed while it was read", i);
			if (done < total - 4)
				crc = cq_crc32(crc, VARDATA_ANY(b), Min(k, total - 4 - done));
			sink(arg, VARDATA_ANY(b), k, done);
			done += k;
			SPI_freetuptable(SPI_tuptable);
			MemoryContextReset(piece);
		}
		if (progress && total > CORPQ_MODEL_PROGRESS_CHUNKS * CORPQ_MODEL_CHUNK &&
			(i + 1) % CORPQ_MODEL_PROGRESS_CHUNKS == 0)
			ereport(NOTICE,
					(errmsg("model \"%s@%d\": %zu of %zu MB read", name, version, done >> 20, total >> 20)));
	}
	SPI_finish();
	MemoryContextDelete(piece);
	if (done != total)
		damaged(name, version, "its chunks hold %zu of its %zu bytes (the last chunk is missing or cut)", done, total);
	if (crc != checksum)
		damaged(name, version, "CRC-32 %08x, its checksum is %08x", crc, checksum);
}

typedef struct ImageBuf
{
	char	   *data;
} ImageBuf;

static void
copy_sink(void *arg, const char *data, Size len, Size offset)
{
	memcpy(((ImageBuf *) arg)->data + offset, data, len);
}

char *
corpq_model_image_read(int64 id, int32 version, const char *name, int64 expect_checksum,
					   Size *len)
{
	ImageBuf	b;

	*len = corpq_model_image_head(id, version, name, expect_checksum, NULL, 0);
	b.data = MemoryContextAllocHuge(CurrentMemoryContext, *len);
	corpq_model_image_stream(id, version, name, expect_checksum, false, copy_sink, &b);
	return b.data;
}

bool
corpq_model_version_int8(int64 model_id, int32 version, int32 *from)
{
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2] = {Int64GetDatum(model_id), Int32GetDatum(version)};
	bool		int8 = false,
				isnull;

	*from = 0;
	SPI_connect();
	if (corpq_sql_as_caller("SELECT precision OPERATOR(pg_catalog.=) 'int8', "
							"(metrics OPERATOR(pg_catalog.->>) 'quantized_from')::pg_catalog.int4 "
							"FROM corpq.model_versions WHERE model OPERATOR(pg_catalog.=) $1 "
							"AND version OPERATOR(pg_catalog.=) $2",
							2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.model_versions");
	if (SPI_processed == 1)
	{
		Datum		f;

		int8 = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		f = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
		*from = isnull ? 0 : DatumGetInt32(f);
	}
	SPI_finish();
	return int8;
}
