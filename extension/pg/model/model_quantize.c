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
 *
 * The quantization streams (corpq_quantize_*, model.h): the float32 image is
 * read chunk by chunk and quantized row by row into the int8 image's
 * chunks, each stored as soon as it is complete (the int8 image is never
 * whole in memory); model_import and model_import_lo with
 * {"precision": "int8"} go through the same three calls, so the two ways to
 * an int8 version give the same bytes.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "common/le.h"
#include "nn/model/modelfile.h"
#include "nn/ops/qgemm.h"
#include "pg/base/catalog.h"
#include "pg/base/errors.h"
#include "pg/base/options.h"
#include "pg/model/model.h"

void
corpq_quantize_begin(CorpqQuantizeStream *s, const char *name, const char *what, const char *head,
					 Size head_len, Size image_len, const CorpqQuantizeOptions *o)
{
	cq_model_config cfg;
	cq_error	err = {0};
	cq_modelquant *q;
	size_t		out_len;

	memset(s, 0, sizeof(*s));
	s->name = name;
	s->o = *o;
	s->cxt = CurrentMemoryContext;
	if (cq_modelfile_head(head, Min(head_len, CQ_MODELFILE_HEAD_MAX), image_len, &cfg, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "invalid model weights for model \"%s\"", name);
	if (cfg.precision == CQ_PRECISION_INT8 || cq_le_get_u32((const unsigned char *) head + 8) != CQ_MODELFILE_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is int8 already", what),
				 errhint("Quantize a float32 version or image.")));
	if (cfg.ffn_dim > CQ_QGEMM_MAX_K || cfg.d_model > CQ_QGEMM_MAX_K)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" is too wide to quantize", name),
				 errdetail("An int8 layer takes at most %d inputs.", CQ_QGEMM_MAX_K)));
	/* the int8 image comes out in blocks of one chunk each, stored as they fill */
	if (cq_modelquant_begin(head, head_len, image_len, o->weight_bits, (cq_precision) o->embedding_precision,
							CORPQ_MODEL_CHUNK, &q, &out_len, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "invalid model weights for model \"%s\"", name);
	s->q = q;
	s->out_len = out_len;
	/*
	 * The chunks open at once (counted from the two layouts: a few for an
	 * image in parameter order), the one being inserted, and a chunk of the
	 * reader beside them.
	 */
	s->peak_chunks = (int) cq_modelquant_peak_blocks(q);
	corpq_check_model_memory((double) Min((Size) s->peak_chunks + 2, (out_len + CORPQ_MODEL_CHUNK - 1) / CORPQ_MODEL_CHUNK + 1)
							 * CORPQ_MODEL_CHUNK + CORPQ_MODEL_CHUNK, 1,
							 "the chunks of an int8 weight image being written", "quantize");
}

/* Store the int8 image's chunks that are complete. */
static void
quantize_drain(CorpqQuantizeStream *s)
{
	size_t		index,
				len;
	const void *data;

	while (cq_modelquant_next(s->q, &index, &data, &len))
		corpq_image_writer_put_chunk(&s->w, (int32) index, data, len);
}

void
corpq_quantize_open(CorpqQuantizeStream *s, int64 model_id, const char *source, Jsonb *metrics)
{
	MemoryContext old = MemoryContextSwitchTo(s->cxt);

	/* the checksum is the image's last 4 bytes: the writer learns it at the end */
	corpq_image_writer_begin(&s->w, model_id, s->out_len, 0, source, -1, metrics, false, true, true);
	s->open = true;
	quantize_drain(s);
	MemoryContextSwitchTo(old);
}

void
corpq_quantize_put(CorpqQuantizeStream *s, const char *data, Size len)
{
	cq_error	err = {0};
	MemoryContext old;

	Assert(s->open);
	/* the chunks a put opens outlive the caller's context (a reader's slice) */
	old = MemoryContextSwitchTo(s->cxt);
	/* in slices, so that a cancel is seen within a few MB and chunks go as they fill */
	while (len > 0)
	{
		Size		n = Min(len, (Size) 4 * 1024 * 1024);

		CHECK_FOR_INTERRUPTS();
		if (cq_modelquant_put(s->q, data, n, &err) != CQ_OK)
			corpq_core_error(&err, NULL, "invalid model weights for model \"%s\"", s->name);
		quantize_drain(s);
		data += n;
		len -= n;
	}
	MemoryContextSwitchTo(old);
}

int32
corpq_quantize_store(CorpqQuantizeStream *s)
{
	cq_error	err = {0};
	int32		version;
	MemoryContext old;

	Assert(s->open);
	old = MemoryContextSwitchTo(s->cxt);
	if (cq_modelquant_end(s->q, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "invalid model weights for model \"%s\"", s->name);
	quantize_drain(s);
	cq_modelquant_free(s->q);
	s->q = NULL;
	version = corpq_image_writer_end_chunks(&s->w);
	s->open = false;
	MemoryContextSwitchTo(old);
	return version;
}

static void
quantize_sink(void *arg, const char *data, Size len, Size offset)
{
	corpq_quantize_put((CorpqQuantizeStream *) arg, data, len);
}

PG_FUNCTION_INFO_V1(corpq_model_quantize);

Datum
corpq_model_quantize(PG_FUNCTION_ARGS)
{
	char	   *spec,
			   *name;
	CorpqModelRef ref;
	char	   *head;
	Size		len,
				head_len;
	Jsonb	   *metrics;
	CorpqQuantizeOptions o;
	CorpqQuantizeStream qs;

	corpq_require_arg(fcinfo, 0, "model");
	spec = text_to_cstring(PG_GETARG_TEXT_PP(0));
	corpq_options_parse(&corpq_quantize_options, PG_ARGISNULL(1) ? NULL : PG_GETARG_JSONB_P(1), &o);
	corpq_model_resolve(spec, false, &ref);
	name = ref.name;
	(void) corpq_catalog_check_writer(&corpq_kind_model, name, "quantize",
									  "Only members of the model's owner role can write its versions.");
	/* the head (header, configuration, tensor table), then the whole stream */
	len = corpq_model_image_head(ref.id, ref.version, name, ref.checksum, NULL, 0);
	head_len = Min(len, CORPQ_QUANTIZE_HEAD);
	head = palloc(head_len);
	(void) corpq_model_image_head(ref.id, ref.version, name, ref.checksum, head, head_len);
	corpq_quantize_begin(&qs, name, psprintf("model \"%s\" version %d", name, ref.version),
						 head, head_len, len, &o);
	pfree(head);
	metrics = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(
		psprintf("{\"quantized_from\": %d, \"weight_bits\": %d, \"embedding_precision\": \"%s\"}",
				 ref.version, o.weight_bits, corpq_precision_names[o.embedding_precision]))));
	corpq_quantize_open(&qs, ref.id, "quantize", metrics);
	corpq_model_image_stream(ref.id, ref.version, name, ref.checksum, true, quantize_sink, &qs);
	PG_RETURN_INT32(corpq_quantize_store(&qs));
}
