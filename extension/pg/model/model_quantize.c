/*
 * corpq.model_quantize(): an int8 version of a model version (models/
 * FORMAT.md, "precision" and "Weight file version 2").  The new version's
 * image holds every linear layer's and the output projection's weights (and
 * by default the token embeddings) as int8 codes and per-row scales
 * (nn/ops/qgemm.h's rule, the one a
 * version stored with float32 weights is quantized by when it loads), so
 * those weights take a quarter of their float32 bytes; loading it packs the
 * stored codes as they are.  It computes exactly what quantizing the float32
 * weights at load computes, on every load and every CPU.  Its metrics say
 * which version it was quantized from and how.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "nn/model/modelfile.h"
#include "nn/ops/qgemm.h"
#include "pg/base/catalog.h"
#include "pg/base/errors.h"
#include "pg/base/options.h"
#include "pg/model/model.h"

/* The loaded version; ERROR when it is int8 already or too wide for qgemm. */
static cq_model *
load_float32(const char *name, const CorpqModelRef *ref, const char *image, Size len)
{
	cq_model   *m;
	cq_error	err = {0};
	cq_code		s;

	s = cq_modelfile_load(image, len, &m, &err);
	if (s != CQ_OK)
		corpq_core_error(&err, NULL, "could not load model");
	if (m->cfg.precision == CQ_PRECISION_INT8)
	{
		cq_model_free(m);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" version %d is int8 already", name, ref->version)));
	}
	if (m->cfg.ffn_dim > CQ_QGEMM_MAX_K || m->cfg.d_model > CQ_QGEMM_MAX_K)
	{
		cq_model_free(m);
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" is too wide to quantize", name),
				 errdetail("An int8 layer takes at most %d inputs.", CQ_QGEMM_MAX_K)));
	}
	return m;
}

PG_FUNCTION_INFO_V1(corpq_model_quantize);

Datum
corpq_model_quantize(PG_FUNCTION_ARGS)
{
	char	   *spec,
			   *name;
	CorpqModelRef ref;
	char	   *image;
	Size		len;
	bytea	   *out;
	cq_model   *m;
	cq_error	err = {0};
	size_t		size;
	cq_code		s;
	Jsonb	   *metrics;
	CorpqQuantizeOptions o;

	corpq_require_arg(fcinfo, 0, "model");
	spec = text_to_cstring(PG_GETARG_TEXT_PP(0));
	corpq_options_parse(&corpq_quantize_options, PG_ARGISNULL(1) ? NULL : PG_GETARG_JSONB_P(1), &o);
	corpq_model_resolve(spec, false, &ref);
	name = ref.name;
	(void) corpq_catalog_check_writer(&corpq_kind_model, name, "quantize",
									  "Only members of the model's owner role can write its versions.");
	/* the bound from the stored length, before the image is read */
	len = corpq_model_image_head(ref.id, ref.version, name, ref.checksum, NULL, 0);
	corpq_check_model_memory((double) len, CORPQ_WRITE_PEAK, "a weight image", "quantize");
	image = corpq_model_image_read(ref.id, ref.version, name, ref.checksum, &len);
	m = load_float32(name, &ref, image, len);
	pfree(image);
	m->cfg.precision = CQ_PRECISION_INT8;
	m->cfg.weight_bits = o.weight_bits;
	m->cfg.embedding_precision = o.embedding_precision;
	/* the image: the codes and scales of m's float32 weights */
	size = cq_modelfile_size(m);
	if (size == 0)
	{
		cq_model_free(m);
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	}
	out = palloc(VARHDRSZ + size);
	SET_VARSIZE(out, VARHDRSZ + size);
	s = cq_modelfile_write(m, VARDATA(out), size, &err);
	cq_model_free(m);
	if (s != CQ_OK)
		corpq_core_error(&err, NULL, "could not write the int8 version");
	metrics = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(
		psprintf("{\"quantized_from\": %d, \"weight_bits\": %d, \"embedding_precision\": \"%s\"}",
				 ref.version, o.weight_bits, corpq_precision_names[o.embedding_precision]))));
	PG_RETURN_INT32(corpq_model_write_version(ref.id, out, "quantize", -1, metrics, false, true));
}
