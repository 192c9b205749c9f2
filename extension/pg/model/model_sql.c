/*
 * SQL functions of the model catalog: model_create, model_import,
 * model_export, model_drop.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "libpq/be-fsstubs.h"
#include "libpq/libpq-fs.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"

#include "common/le.h"
#include "nn/model/config.h"
#include "nn/model/model.h"
#include "nn/model/modelfile.h"
#include "pg/base/catalog.h"
#include "pg/base/errors.h"
#include "pg/base/internal_sql.h"
#include "pg/base/base.h"
#include "pg/model/model.h"
#include "pg/text/text.h"

PG_FUNCTION_INFO_V1(corpq_model_create);
PG_FUNCTION_INFO_V1(corpq_model_import);
PG_FUNCTION_INFO_V1(corpq_model_export);
PG_FUNCTION_INFO_V1(corpq_model_export_pinned);
PG_FUNCTION_INFO_V1(corpq_model_drop);
PG_FUNCTION_INFO_V1(corpq_model_import_lo);
PG_FUNCTION_INFO_V1(corpq_model_export_lo);

/*
 * A pipeline reserves the names of the models it will create when it is
 * submitted (corpq.pipelines.reserved): another role may not take them
 * meanwhile and make a stage fail.
 */
static void
check_not_reserved(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	Oid			owner = InvalidOid;
	char	   *pipeline = NULL;

	SPI_connect();
	if (corpq_sql_as_owner("SELECT name, owner::pg_catalog.oid FROM corpq.pipelines "
						   "WHERE $1 OPERATOR(pg_catalog.=) ANY (reserved)",
						   1, argtypes, values, NULL, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.pipelines");
	if (SPI_processed > 0)
	{
		bool		isnull;

		pipeline = SPI_palloc(NAMEDATALEN * 2);
		strlcpy(pipeline, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), NAMEDATALEN * 2);
		owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	}
	SPI_finish();
	if (pipeline && !corpq_caller_is_member(owner))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("model name \"%s\" is reserved by pipeline \"%s\" of another role", name, pipeline),
				 errhint("Choose another model name.")));
}

static void
check_model_name(const char *name)
{
	if (strchr(name, '@') != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model name \"%s\" contains @", name),
				 errhint("The @ separates a model name from a version number (name@N).")));
	corpq_check_new_name(&corpq_kind_model, name);
	check_not_reserved(name);
}

/* The size of vocabulary name (ERROR listing the existing ones if unknown). */
static int
vocab_size(const char *name)
{
	bool		isnull;
	int			size;

	SPI_connect();
	size = DatumGetInt32(corpq_catalog_value(&corpq_kind_vocabulary, "c.size", name, &isnull));
	SPI_finish();
	return size;
}

/*
 * The configuration of model_create: the preset's keys, then the given ones,
 * then the vocabulary sizes; unknown keys are errors (the core would ignore
 * a misspelt one).
 */
static cq_model_config
merge_config(Jsonb *config, int src_size, int tgt_size)
{
	Oid			argtypes[3] = {JSONBOID, TEXTOID, TEXTOID};
	Datum		values[3];
	bool		isnull;
	char	   *preset = NULL;
	char		base[1024] = "{}";
	char	   *merged;
	/* the keys model_create takes: a preset and the core's architecture keys */
	char	   *config_keys = psprintf("{preset,%s}", cq_config_arch_keys());
	cq_model_config cfg;
	cq_error err = {0};
	cq_code s;
	MemoryContext caller = CurrentMemoryContext;

	values[0] = PointerGetDatum(config);
	values[2] = CStringGetTextDatum(config_keys);
	SPI_connect();
	if (corpq_sql_as_caller("SELECT pg_catalog.jsonb_typeof($1), $1 OPERATOR(pg_catalog.->>) 'preset', "
							"(SELECT pg_catalog.string_agg(k, ', ' ORDER BY k) "
							"FROM pg_catalog.jsonb_object_keys(CASE WHEN pg_catalog.jsonb_typeof($1) "
							"OPERATOR(pg_catalog.=) 'object' THEN $1 ELSE '{}' END) k "
							"WHERE k OPERATOR(pg_catalog.<>) ALL ($3::pg_catalog.text[])), "
							"$1 OPERATOR(pg_catalog.->>) 'kind'",
							3, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the model configuration");
	if (strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "object") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model configuration must be a JSON object"),
				 errhint("Pass for example '{\"preset\": \"tiny\", \"dropout\": 0.2}'.")));
	if (SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown model configuration keys: %s",
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3)),
				 errdetail("Valid keys: %s; the vocabulary sizes are taken from the vocabularies.",
						   config_keys)));
	preset = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	if (preset != NULL)
	{
		char	   *kind = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4);

		s = cq_config_preset(preset, src_size, tgt_size, &cfg, &err);
		if (s != CQ_OK)
			corpq_core_error(&err, NULL, "invalid model configuration");
		/*
		 * An encoder's preset is the preset without its decoder, and without
		 * dropout: a dual encoder trained from scratch for minutes to hours
		 * sees its corpus a few times at most, and dropout only slows it
		 * (bench_embed_mining.sh, 300 s of small: precision at 1 0.870
		 * without, 0.814 with the preset's 0.1).  Keys given win.
		 */
		if (kind != NULL && strcmp(kind, "encoder") == 0)
		{
			cq_config_make_encoder(&cfg);
			cfg.dropout = cfg.attention_dropout = cfg.activation_dropout = 0.0f;
		}
		cq_config_to_json(&cfg, base, sizeof(base));
	}
	values[1] = CStringGetTextDatum(base);
	values[2] = CStringGetTextDatum(psprintf("{\"src_vocab_size\": %d, \"tgt_vocab_size\": %d}",
											 src_size, tgt_size));
	if (corpq_sql_as_caller("SELECT ($2::pg_catalog.jsonb OPERATOR(pg_catalog.||) "
							"($1 OPERATOR(pg_catalog.-) 'preset'::pg_catalog.text) "
							"OPERATOR(pg_catalog.||) $3::pg_catalog.jsonb)::pg_catalog.text",
							3, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not merge the model configuration");
	merged = MemoryContextStrdup(caller,
								 TextDatumGetCString(SPI_getbinval(SPI_tuptable->vals[0],
																   SPI_tuptable->tupdesc, 1,
																   &isnull)));
	SPI_finish();
	s = cq_config_from_json(merged, strlen(merged), &cfg, &err);
	if (s != CQ_OK)
		corpq_core_error(&err, NULL, "invalid model configuration");
	return cfg;
}

void
corpq_model_config_check(Jsonb *config, const char *src_vocab, const char *tgt_vocab)
{
	(void) merge_config(config, vocab_size(src_vocab), vocab_size(tgt_vocab));
}

/* An encoder model reads both languages with one vocabulary. */
static void
check_encoder_vocab(const cq_model_config *cfg, const char *src_vocab, const char *tgt_vocab)
{
	if (cfg->kind == CQ_KIND_ENCODER && strcmp(src_vocab, tgt_vocab) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("an encoder model has one vocabulary for both languages, got \"%s\" and \"%s\"",
						src_vocab, tgt_vocab),
				 errhint("Pass the same joint vocabulary as src_vocab and tgt_vocab.")));
}

/* Insert the catalog row of a new model; returns its id. */
static int64
insert_model(const char *name, const cq_model_config *cfg, int64 parameters,
			 const char *src_vocab, const char *tgt_vocab)
{
	Oid			argtypes[6] = {TEXTOID, TEXTOID, INT8OID, TEXTOID, TEXTOID, OIDOID};
	Datum		values[6];
	char		json[1024];
	bool		isnull;
	int64		id;

	cq_config_to_json(cfg, json, sizeof(json));
	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(json);
	values[2] = Int64GetDatum(parameters);
	values[3] = CStringGetTextDatum(src_vocab);
	values[4] = CStringGetTextDatum(tgt_vocab);
	values[5] = ObjectIdGetDatum(GetUserId());
	SPI_connect();
	corpq_model_quota_check(GetUserId(), true, 0);
	if (corpq_sql_as_owner("INSERT INTO corpq.model_catalog (name, config, parameters, src_vocab, tgt_vocab, owner) "
						   "VALUES ($1, $2::pg_catalog.jsonb, $3, $4, $5, $6::pg_catalog.regrole) RETURNING id",
						   6, argtypes, values, NULL, 0) != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "could not insert into corpq.model_catalog");
	id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return id;
}

/* The weight image of m in CurrentMemoryContext, *len its size. */
static char *
model_image(const cq_model *m, Size *len)
{
	size_t		size = cq_modelfile_size(m);
	char	   *b;
	cq_error err = {0};
	cq_code s;

	if (size == 0 || size > MaxAllocHugeSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("model weight image of %zu bytes is too large", size)));
	/* a huge allocation: the image is stored in chunks, of any size */
	b = MemoryContextAllocHuge(CurrentMemoryContext, size);
	s = cq_modelfile_write(m, b, size, &err);
	if (s != CQ_OK)
		corpq_core_error(&err, NULL, "could not write the model weight image");
	*len = size;
	return b;
}

Datum
corpq_model_create(PG_FUNCTION_ARGS)
{
	char	   *name,
			   *src_vocab,
			   *tgt_vocab;
	cq_model_config cfg;
	cq_model   *m = NULL;
	cq_error err = {0};
	cq_code s;
	char	   *image;
	Size		len;
	CorpqImageWriter w;
	int64		id,
				parameters;

	corpq_require_arg(fcinfo, 0, "name");
	corpq_require_arg(fcinfo, 1, "config");
	corpq_require_arg(fcinfo, 2, "src_vocab");
	corpq_require_arg(fcinfo, 3, "tgt_vocab");
	corpq_require_arg(fcinfo, 4, "seed");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	src_vocab = text_to_cstring(PG_GETARG_TEXT_PP(2));
	tgt_vocab = text_to_cstring(PG_GETARG_TEXT_PP(3));
	check_model_name(name);
	cfg = merge_config(PG_GETARG_JSONB_P(1), vocab_size(src_vocab), vocab_size(tgt_vocab));
	check_encoder_vocab(&cfg, src_vocab, tgt_vocab);
	/* the role's quota before the model is built (checked again as it is written) */
	SPI_connect();
	corpq_model_quota_check(GetUserId(), true, 0);
	SPI_finish();
	{
		size_t		floats,
					params;

		cq_model_size_for(&cfg, &floats, &params);
		/* the parameter block, and the sinusoid table beside it */
		corpq_check_model_memory((double) floats * sizeof(float) + cq_model_position_bytes(&cfg),
								 CORPQ_WRITE_PEAK, "a model", "create");
	}

	s = cq_model_new(&cfg, &m, &err);
	if (s != CQ_OK)
		corpq_core_error(&err, NULL, "could not create the model");
	cq_model_init_random(m, (uint64) PG_GETARG_INT64(4));
	parameters = (int64) cq_model_param_count(m);
	image = model_image(m, &len);
	cq_model_free(m);

	id = insert_model(name, &cfg, parameters, src_vocab, tgt_vocab);
	corpq_image_writer_begin(&w, id, len, cq_le_get_u32((const unsigned char *) image + len - 4),
							 "create", -1, NULL, false, false, false);
	corpq_image_writer_put(&w, image, len);
	PG_RETURN_INT32(corpq_image_writer_end(&w));
}

/* The model named name: id, config and vocabularies; false if absent. */
static bool
find_model(const char *name, int64 *id, cq_model_config *cfg, char **src_vocab, char **tgt_vocab)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	MemoryContext caller = CurrentMemoryContext;
	bool		isnull;
	char	   *json;
	cq_error err = {0};

	SPI_connect();
	if (corpq_sql_as_caller("SELECT id, config::pg_catalog.text, src_vocab, tgt_vocab "
							"FROM corpq.model_catalog WHERE name OPERATOR(pg_catalog.=) $1",
							1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read corpq.model_catalog");
	if (SPI_processed == 0)
	{
		SPI_finish();
		return false;
	}
	*id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	json = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	if (cq_config_from_json(json, strlen(json), cfg, &err) != CQ_OK)
	{
		/* it was valid when it was stored */
		if (err.code != CQ_ENOMEM)
			err.code = CQ_ECORRUPT;
		corpq_core_error(&err, NULL, "model \"%s\" has an invalid configuration in corpq.model_catalog",
						 name);
	}
	*src_vocab = MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3));
	*tgt_vocab = MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4));
	SPI_finish();
	return true;
}

static void
check_vocab_arg(FunctionCallInfo fcinfo, int i, const char *model, const char *have)
{
	char	   *given;

	if (PG_ARGISNULL(i))
		return;
	given = text_to_cstring(PG_GETARG_TEXT_PP(i));
	if (strcmp(given, have) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" uses %s vocabulary \"%s\", not \"%s\"", model,
						i == 2 ? "source" : "target", have, given),
				 errhint("Leave the vocabularies NULL to add a version, or import under a new name.")));
}

/*
 * The model an import of an image with configuration cfg (parameters: its
 * float32 architecture's) writes the next version of: model name, whose
 * configuration must be cfg's, or (with the vocabularies given, arguments 2
 * and 3 of fcinfo) a new model of that name created from cfg.
 */
static int64
import_target(FunctionCallInfo fcinfo, const char *name, const cq_model_config *cfg,
			  int64 parameters)
{
	cq_model_config have;
	char	   *src_vocab,
			   *tgt_vocab;
	char		json_a[1024],
				json_b[1024];
	int64		id;

	if (find_model(name, &id, &have, &src_vocab, &tgt_vocab))
	{
		check_vocab_arg(fcinfo, 2, name, src_vocab);
		check_vocab_arg(fcinfo, 3, name, tgt_vocab);
		if (!cq_config_equal(&have, cfg))
		{
			cq_config_to_json(&have, json_a, sizeof(json_a));
			cq_config_to_json(cfg, json_b, sizeof(json_b));
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("weights do not match the configuration of model \"%s\"", name),
					 errdetail("The model has %s; the weights have %s.", json_a, json_b),
					 errhint("Versions of a model share one configuration; import under a new name.")));
		}
		return id;
	}
	if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", name),
				 errhint("Pass src_vocab and tgt_vocab to create it from the weights.")));
	check_model_name(name);
	src_vocab = text_to_cstring(PG_GETARG_TEXT_PP(2));
	tgt_vocab = text_to_cstring(PG_GETARG_TEXT_PP(3));
	check_encoder_vocab(cfg, src_vocab, tgt_vocab);
	if (vocab_size(src_vocab) != cfg->src_vocab_size ||
		vocab_size(tgt_vocab) != cfg->tgt_vocab_size)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("weights do not fit the vocabularies"),
				 errdetail("The weights have vocabulary sizes %d and %d; \"%s\" has %d tokens and \"%s\" %d.",
						   cfg->src_vocab_size, cfg->tgt_vocab_size,
						   src_vocab, vocab_size(src_vocab), tgt_vocab, vocab_size(tgt_vocab))));
	/* the catalog holds the architecture; the precision is a version's */
	have = *cfg;
	cq_config_float32(&have);
	return insert_model(name, &have, parameters, src_vocab, tgt_vocab);
}

/* The metrics of a version quantized while it was imported. */
static Jsonb *
import_metrics(const CorpqImportOptions *o)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(
		psprintf("{\"quantized_on_import\": true, \"weight_bits\": %d, \"embedding_precision\": \"%s\"}",
				 o->quantize.weight_bits, corpq_precision_names[o->quantize.embedding_precision]))));
}

/*
 * The head of a float32 image being imported with precision int8: its
 * configuration, for import_target (the streaming quantizer checks the rest).
 */
static void
import_head(const char *head, Size head_len, Size image_len, const char *where,
			cq_model_config *cfg, int64 *params)
{
	cq_model_config f32;
	size_t		floats,
				p;
	cq_error err = {0};

	if (cq_modelfile_head(head, Min(head_len, CQ_MODELFILE_HEAD_MAX), image_len, cfg, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "invalid model weights%s", where);
	f32 = *cfg;
	cq_config_float32(&f32);
	cq_model_size_for(&f32, &floats, &p);
	*params = (int64) p;
}

Datum
corpq_model_import(PG_FUNCTION_ARGS)
{
	char	   *name;
	bytea	   *image;
	cq_model   *m = NULL;
	cq_error err = {0};
	cq_code s;
	int64		id;
	bool		int8;
	CorpqImportOptions o;

	corpq_require_arg(fcinfo, 0, "name");
	corpq_require_arg(fcinfo, 1, "weights");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	corpq_import_options_arg(fcinfo, 4, &o);
	image = PG_GETARG_BYTEA_PP(1);

	if (o.precision == CQ_PRECISION_INT8)
	{
		/* quantized as model_quantize does, the int8 image beside the argument */
		CorpqQuantizeStream qs;
		cq_model_config cfg;
		int64		params;
		Size		len = VARSIZE_ANY_EXHDR(image);

		import_head(VARDATA_ANY(image), len, len, "", &cfg, &params);
		corpq_quantize_begin(&qs, name, psprintf("the image imported as model \"%s\"", name),
							 VARDATA_ANY(image), len, len, &o.quantize);
		id = import_target(fcinfo, name, &cfg, params);
		corpq_quantize_open(&qs, id, "import", import_metrics(&o));
		corpq_quantize_put(&qs, VARDATA_ANY(image), len);
		PG_RETURN_INT32(corpq_quantize_store(&qs));
	}

	/* the loader allocates no more than the image holds (models/FORMAT.md) */
	corpq_check_model_memory((double) VARSIZE_ANY_EXHDR(image), CORPQ_WRITE_PEAK,
							 "a weight image", "import");
	/* every byte is checked before anything is written */
	s = cq_modelfile_load(VARDATA_ANY(image), VARSIZE_ANY_EXHDR(image), &m, &err);
	if (s != CQ_OK)
		corpq_core_error(&err, NULL, "invalid model weights");
	id = import_target(fcinfo, name, &m->cfg, (int64) cq_model_param_count(m));
	int8 = m->cfg.precision == CQ_PRECISION_INT8;
	cq_model_free(m);
	PG_RETURN_INT32(corpq_model_write_version(id, image, "import", -1, NULL, false, int8));
}

/* lo_read all of buf[0..len) from fd (the large object lo), or ERROR. */
static void
lo_read_exactly(int fd, Oid lo, char *buf, Size len)
{
	while (len > 0)
	{
		int			n = lo_read(fd, buf, (int) Min(len, CORPQ_MODEL_CHUNK));

		if (n <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("large object %u ended early", lo)));
		buf += n;
		len -= n;
	}
}

Datum
corpq_model_import_lo(PG_FUNCTION_ARGS)
{
	char	   *name;
	Oid			lo;
	int			fd;
	int64		len;
	unsigned char trailer[4];
	char	   *piece;
	Size		head_len,
				done;
	cq_model_config cfg,
				f32;
	size_t		floats,
				params;
	cq_error err = {0};
	int64		id;
	CorpqImageWriter w;
	int32		version;
	CorpqImportOptions o;
	CorpqQuantizeStream qs;
	bool		quantize;

	corpq_require_arg(fcinfo, 0, "name");
	corpq_require_arg(fcinfo, 1, "image");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	lo = PG_GETARG_OID(1);
	corpq_import_options_arg(fcinfo, 4, &o);
	quantize = o.precision == CQ_PRECISION_INT8;

	/* PostgreSQL's own open: the caller's SELECT privilege on the object */
	fd = DatumGetInt32(DirectFunctionCall2(be_lo_open, ObjectIdGetDatum(lo), Int32GetDatum(INV_READ)));
	len = DatumGetInt64(DirectFunctionCall3(be_lo_lseek64, Int32GetDatum(fd), Int64GetDatum(0),
											Int32GetDatum(SEEK_END)));
	if (len < CQ_MODELFILE_HEADER + 4)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("large object %u holds %lld bytes, too few for a weight image", lo, (long long) len)));
	/* the CRC-32 trailer, which the stream's CRC must match */
	DirectFunctionCall3(be_lo_lseek64, Int32GetDatum(fd), Int64GetDatum(len - 4), Int32GetDatum(SEEK_SET));
	lo_read_exactly(fd, lo, (char *) trailer, 4);
	DirectFunctionCall3(be_lo_lseek64, Int32GetDatum(fd), Int64GetDatum(0), Int32GetDatum(SEEK_SET));

	/* the header and configuration, from the first piece, before anything is written */
	piece = palloc(Min((Size) len, CORPQ_MODEL_CHUNK));
	head_len = Min((Size) len, CORPQ_MODEL_CHUNK);
	lo_read_exactly(fd, lo, piece, head_len);
	if (cq_modelfile_head(piece, Min(head_len, CQ_MODELFILE_HEAD_MAX), (size_t) len, &cfg, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "invalid model weights in large object %u", lo);
	f32 = cfg;
	cq_config_float32(&f32);
	cq_model_size_for(&f32, &floats, &params);
	/* with precision int8: quantized as the float32 image streams, checked as it goes */
	if (quantize)
		corpq_quantize_begin(&qs, name, psprintf("large object %u", lo), piece, head_len, (Size) len,
							 &o.quantize);
	id = import_target(fcinfo, name, &cfg, (int64) params);

	/* the rest, a chunk at a time; the CRC over the whole stream at the end */
	if (quantize)
	{
		corpq_quantize_open(&qs, id, "import", import_metrics(&o));
		corpq_quantize_put(&qs, piece, head_len);
	}
	else
	{
		corpq_image_writer_begin(&w, id, (Size) len, cq_le_get_u32(trailer), "import", -1, NULL, false,
								 cfg.precision == CQ_PRECISION_INT8, true);
		corpq_image_writer_put(&w, piece, head_len);
	}
	for (done = head_len; done < (Size) len; done += head_len)
	{
		CHECK_FOR_INTERRUPTS();
		head_len = Min((Size) len - done, CORPQ_MODEL_CHUNK);
		lo_read_exactly(fd, lo, piece, head_len);
		if (quantize)
			corpq_quantize_put(&qs, piece, head_len);
		else
			corpq_image_writer_put(&w, piece, head_len);
		if (quantize && (done / CORPQ_MODEL_CHUNK + 1) % CORPQ_MODEL_PROGRESS_CHUNKS == 0)
			ereport(NOTICE,
					(errmsg("model \"%s\": %zu of %zu MB quantized", name, done >> 20, (Size) len >> 20)));
	}
	DirectFunctionCall1(be_lo_close, Int32GetDatum(fd));
	pfree(piece);
	if (quantize)
		version = corpq_quantize_store(&qs);
	else
		version = corpq_image_writer_end(&w);
	PG_RETURN_INT32(version);
}

typedef struct LoSink
{
	int			fd;
	Oid			lo;
} LoSink;

static void
lo_sink(void *arg, const char *data, Size len, Size offset)
{
	LoSink	   *s = arg;

	if (lo_write(s->fd, data, (int) len) != (int) len)
		ereport(ERROR,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("could not write large object %u", s->lo)));
}

Datum
corpq_model_export_lo(PG_FUNCTION_ARGS)
{
	CorpqModelRef ref;
	LoSink		s;

	corpq_model_resolve(text_to_cstring(PG_GETARG_TEXT_PP(0)), false, &ref);
	/* a new large object, owned by the caller */
	s.lo = DatumGetObjectId(DirectFunctionCall1(be_lo_create, ObjectIdGetDatum(InvalidOid)));
	s.fd = DatumGetInt32(DirectFunctionCall2(be_lo_open, ObjectIdGetDatum(s.lo), Int32GetDatum(INV_WRITE)));
	corpq_model_image_stream(ref.id, ref.version, ref.name, -1, true, lo_sink, &s);
	DirectFunctionCall1(be_lo_close, Int32GetDatum(s.fd));
	PG_RETURN_OID(s.lo);
}

/* corpq_model_image's sink: the chunk at its offset of the bytea. */
static void
export_sink(void *arg, const char *data, Size len, Size offset)
{
	memcpy(*(char **) arg + offset, data, len);
}

bytea *
corpq_model_image(const char *spec, bool pinned)
{
	CorpqModelRef ref;
	Size		len;
	bytea	   *out;
	char	   *data;

	corpq_model_resolve(spec, pinned, &ref);
	len = corpq_model_image_head(ref.id, ref.version, ref.name, -1, NULL, 0);
	if (len > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the weight image of model \"%s@%d\" has %zu bytes, more than a bytea holds",
						ref.name, ref.version, len),
				 errhint("Export it into a large object with corpq.model_export_lo('%s@%d').",
						 ref.name, ref.version)));
	out = palloc(VARHDRSZ + len);
	SET_VARSIZE(out, VARHDRSZ + len);
	data = VARDATA(out);
	corpq_model_image_stream(ref.id, ref.version, ref.name, -1, false, export_sink, &data);
	return out;
}

Datum
corpq_model_export(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P(corpq_model_image(text_to_cstring(PG_GETARG_TEXT_PP(0)), false));
}

Datum
corpq_model_export_pinned(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P(corpq_model_image(text_to_cstring(PG_GETARG_TEXT_PP(0)), true));
}

Datum
corpq_model_drop(PG_FUNCTION_ARGS)
{
	char	   *name;

	corpq_require_arg(fcinfo, 0, "name");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	corpq_catalog_drop(&corpq_kind_model, name);
	/* its loaded versions are never served again, and their shared memory goes */
	corpq_shared_model_forget(name);
	PG_RETURN_VOID();
}
