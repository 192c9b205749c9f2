/*
 * The option tables of model/ (model.h): corpq.model_quantize()'s options,
 * model_import's (precision), and on_too_long, the option of every function that runs a model.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "nn/ops/qgemm.h"
#include "pg/base/options.h"
#include "pg/model/model.h"

const char *const corpq_precision_names[] = {"float32", "int8", NULL};
static const int precision_values[] = {CQ_PRECISION_FLOAT32, CQ_PRECISION_INT8};

/*
 * weight_bits 8: codes in [-127, 127]; 7: [-63, 63], whose products AVX2
 * CPUs without VNNI run in three instructions instead of four (qgemm.h).
 * Every CPU computes a version's bits the same way whatever its width.
 * embedding_precision int8 (the default) stores the token embeddings as
 * codes of the same width too, so the image is about a quarter of the
 * float32 one; float32 keeps them as they are (docs/models.md measures
 * both).
 */
static const CorpqOption quantize_rows[] = {
	{.key = "weight_bits", CORPQ_OPT_FIELD(CorpqQuantizeOptions, weight_bits), .type = CORPQ_OPT_INT,
	.min = CQ_QGEMM_BITS_MIN, .max = CQ_QGEMM_BITS_MAX, .def = 8},
	{.key = "embedding_precision", CORPQ_OPT_FIELD(CorpqQuantizeOptions, embedding_precision),
		.type = CORPQ_OPT_ENUM, .names = corpq_precision_names, .values = precision_values,
	.def = CQ_PRECISION_INT8},
	{0}
};

const CorpqOptionTable corpq_quantize_options = {"model_quantize", quantize_rows};

/*
 * model_import's and model_import_lo's: precision "float32" stores the
 * image as it is; "int8" stores the int8 image model_quantize would make of
 * it (weight_bits and embedding_precision as model_quantize's), quantized
 * while the float32 image streams (model_quantize.c).
 */
static const CorpqOption import_rows[] = {
	{.key = "precision", CORPQ_OPT_FIELD(CorpqImportOptions, precision),
		.type = CORPQ_OPT_ENUM, .names = corpq_precision_names, .values = precision_values,
	.def = CQ_PRECISION_FLOAT32},
	{.key = "weight_bits", CORPQ_OPT_FIELD(CorpqImportOptions, quantize.weight_bits),
		.type = CORPQ_OPT_INT, .min = CQ_QGEMM_BITS_MIN, .max = CQ_QGEMM_BITS_MAX, .def = 8},
	{.key = "embedding_precision", CORPQ_OPT_FIELD(CorpqImportOptions, quantize.embedding_precision),
		.type = CORPQ_OPT_ENUM, .names = corpq_precision_names, .values = precision_values,
	.def = CQ_PRECISION_INT8},
	{0}
};

const CorpqOptionTable corpq_import_options = {"model_import", import_rows};

const char *const corpq_too_long_names[] = {"null", "error", NULL};

CorpqTooLong
corpq_too_long_from_name(const char *name)
{
	for (int i = 0; corpq_too_long_names[i]; i++)
		if (strcmp(name, corpq_too_long_names[i]) == 0)
			return (CorpqTooLong) i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid on_too_long \"%s\"", name),
			 errdetail("Valid values: null (a pair longer than the model accepts scores NULL), error.")));
	pg_unreachable();
}

CorpqTooLong
corpq_too_long_arg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_NARGS() <= argno)
		return CORPQ_TOO_LONG_NULL;
	return corpq_too_long_from_name(text_to_cstring(PG_GETARG_TEXT_PP(argno)));
}

void
corpq_import_options_arg(FunctionCallInfo fcinfo, int argno, CorpqImportOptions *o)
{
	Jsonb	   *j = PG_NARGS() > argno && !PG_ARGISNULL(argno) ? PG_GETARG_JSONB_P(argno) : NULL;

	corpq_options_parse(&corpq_import_options, j, o);
	if (o->precision == CQ_PRECISION_INT8 || j == NULL)
		return;
	for (int i = 0; i < 2; i++)
	{
		const char *key = i == 0 ? "weight_bits" : "embedding_precision";

		if (DatumGetBool(DirectFunctionCall2(jsonb_exists, JsonbPGetDatum(j), CStringGetTextDatum(key))))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("model_import option \"%s\" needs \"precision\": \"int8\"", key),
					 errhint("A float32 image is stored as it is; add \"precision\": \"int8\" to quantize it while importing.")));
	}
}
