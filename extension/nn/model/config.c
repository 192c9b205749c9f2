#include "nn/model/config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

#define MAX_DIM 16384
#define MAX_LAYERS 64
#define MAX_VOCAB (1 << 24)
#define MAX_POSITIONS 65536

cq_code
cq_config_preset(const char *name, int src_vocab, int tgt_vocab,
				 cq_model_config *cfg, cq_error *err)
{
	/* d, heads, layers (enc = dec), ffn, max_positions */
	static const struct
	{
		const char *name;
		int			d,
					heads,
					layers,
					ffn,
					maxpos;
	}			presets[] = {
		{"tiny", 64, 2, 2, 256, 256},
		{"small", 256, 4, 3, 1024, 256},
		{"base", 512, 8, 6, 2048, 512},
	};

	for (int i = 0; i < (int) (sizeof(presets) / sizeof(presets[0])); i++)
		if (strcmp(name, presets[i].name) == 0)
		{
			*cfg = (cq_model_config) {
				.d_model = presets[i].d,
				.heads = presets[i].heads,
				.encoder_layers = presets[i].layers,
				.decoder_layers = presets[i].layers,
				.ffn_dim = presets[i].ffn,
				.activation = CQ_ACT_RELU,
				.dropout = 0.1f,
				.attention_dropout = 0.1f,
				.activation_dropout = 0.1f,
				.max_positions = presets[i].maxpos,
				.positions = CQ_POS_SINUSOIDAL,
				.tie_output = true,
				.share_embeddings = false,
				.src_vocab_size = src_vocab,
				.tgt_vocab_size = tgt_vocab,
			};
			cq_config_default_variants(cfg);
			return cq_config_validate(cfg, err);
		}
	return cq_fail(err, CQ_EINVAL,
					  "unknown model preset \"%s\" (valid: tiny, small, base)", name);
}

void
cq_config_default_variants(cq_model_config *c)
{
	c->post_norm = false;
	c->encoder_final_norm = true;
	c->decoder_final_norm = true;
	c->scale_embeddings = true;
	c->layernorm_embedding = false;
	c->position_offset = 0;
	c->sinusoid_half = false;
	c->layer_norm_eps = CQ_LAYERNORM_EPS;
	c->output_bias = false;
	c->decoder_start_id = CQ_EOS_ID;
	c->norm = CQ_NORM_LAYER;
	c->kind = CQ_KIND_TRANSLATION;
	c->pooling = CQ_POOL_MEAN;
	c->pooler = false;
	c->token_type_embedding = false;
	cq_config_float32(c);
}

/* Only the precision keys: an int8 encoder's float32 version is an encoder. */
void
cq_config_float32(cq_model_config *c)
{
	c->precision = CQ_PRECISION_FLOAT32;
	c->weight_bits = 8;
	c->embedding_precision = CQ_PRECISION_FLOAT32;
}

void
cq_config_make_encoder(cq_model_config *c)
{
	c->kind = CQ_KIND_ENCODER;
	c->decoder_layers = 0;
	c->share_embeddings = true;
	c->tie_output = true;
}

int
cq_config_sentence_tokens(const cq_model_config *c)
{
	return c->max_positions - (c->kind == CQ_KIND_ENCODER ? 2 : 1);
}

static cq_code
range_int(cq_error *err, const char *key, int v, int lo, int hi)
{
	if (v < lo || v > hi)
		return cq_fail(err, CQ_EINVAL, "config key \"%s\" is %d, must be in [%d, %d]",
						  key, v, lo, hi);
	return CQ_OK;
}

static cq_code
range_prob(cq_error *err, const char *key, float v)
{
	if (!(v >= 0.0f && v < 1.0f))
		return cq_fail(err, CQ_EINVAL, "config key \"%s\" is %g, must be in [0, 1)",
						  key, v);
	return CQ_OK;
}

/* The keys of one kind only: the decoder's, or an encoder's pooling. */
static cq_code
validate_kind(const cq_model_config *c, cq_error *err)
{
	cq_model_config d;
	const char *key = NULL;

	cq_config_default_variants(&d);
	if ((unsigned) c->kind > CQ_KIND_ENCODER || (unsigned) c->pooling > CQ_POOL_CLS)
		return cq_fail(err, CQ_EINVAL, "bad kind or pooling value");
	if (c->kind == CQ_KIND_TRANSLATION)
	{
		key = c->pooling != d.pooling ? "pooling" : c->pooler ? "pooler"
			: c->token_type_embedding ? "token_type_embedding" : NULL;
		if (key)
			return cq_fail(err, CQ_EINVAL, "config key \"%s\" applies to encoder models only (\"kind\": \"encoder\")",
						   key);
		return CQ_OK;
	}
	if (c->decoder_layers != 0)
		return cq_fail(err, CQ_EINVAL,
					   "an encoder model has no decoder: config key \"decoder_layers\" is %d, must be 0",
					   c->decoder_layers);
	if (!c->share_embeddings || !c->tie_output)
		return cq_fail(err, CQ_EINVAL,
					   "an encoder model has one embedding: config keys \"share_embeddings\" and \"tie_output\" must be true");
	key = c->output_bias ? "output_bias" : c->decoder_final_norm != d.decoder_final_norm
		? "decoder_final_norm" : c->decoder_start_id != d.decoder_start_id ? "decoder_start_id" : NULL;
	if (key)
		return cq_fail(err, CQ_EINVAL, "config key \"%s\" applies to translation models only", key);
	if (c->max_positions < 2)
		return cq_fail(err, CQ_EINVAL,
					   "config key \"max_positions\" is %d, an encoder model needs at least 2 (<s> and </s>)",
					   c->max_positions);
	return CQ_OK;
}

cq_code
cq_config_validate(const cq_model_config *c, cq_error *err)
{
	cq_code s;

	if ((s = range_int(err, "d_model", c->d_model, 2, MAX_DIM)) ||
		(s = range_int(err, "heads", c->heads, 1, c->d_model < 4095 ? c->d_model : 4095)) ||
		(s = range_int(err, "encoder_layers", c->encoder_layers, 1, MAX_LAYERS)) ||
		(c->kind != CQ_KIND_ENCODER &&
		 (s = range_int(err, "decoder_layers", c->decoder_layers, 1, MAX_LAYERS))) ||
		(s = range_int(err, "ffn_dim", c->ffn_dim, 1, 4 * MAX_DIM)) ||
		(s = range_int(err, "max_positions", c->max_positions, 1, MAX_POSITIONS)) ||
		(s = range_int(err, "src_vocab_size", c->src_vocab_size, 4, MAX_VOCAB)) ||
		(s = range_int(err, "tgt_vocab_size", c->tgt_vocab_size, 4, MAX_VOCAB)) ||
		(s = range_prob(err, "dropout", c->dropout)) ||
		(s = range_prob(err, "attention_dropout", c->attention_dropout)) ||
		(s = range_prob(err, "activation_dropout", c->activation_dropout)))
		return s;
	if (c->d_model % c->heads != 0)
		return cq_fail(err, CQ_EINVAL, "d_model %d is not a multiple of heads %d",
						  c->d_model, c->heads);
	if (c->d_model % 2 != 0)
		return cq_fail(err, CQ_EINVAL, "d_model %d must be even", c->d_model);
	if (c->kind == CQ_KIND_ENCODER && c->src_vocab_size != c->tgt_vocab_size)
		return cq_fail(err, CQ_EINVAL,
					   "an encoder model has one vocabulary for both languages, got sizes %d and %d",
					   c->src_vocab_size, c->tgt_vocab_size);
	if (c->share_embeddings && c->src_vocab_size != c->tgt_vocab_size)
		return cq_fail(err, CQ_EINVAL,
						  "share_embeddings needs equal vocabulary sizes, got %d and %d",
						  c->src_vocab_size, c->tgt_vocab_size);
	if ((unsigned) c->activation > CQ_ACT_SWISH || (unsigned) c->positions > CQ_POS_LEARNED ||
		(unsigned) c->norm > CQ_NORM_RMS)
		return cq_fail(err, CQ_EINVAL, "bad activation, positions or norm value");
	if ((s = range_int(err, "position_offset", c->position_offset, 0, MAX_POSITIONS)) ||
		(s = range_int(err, "decoder_start_id", c->decoder_start_id, 0, c->tgt_vocab_size - 1)))
		return s;
	if (c->positions == CQ_POS_LEARNED && c->position_offset != 0)
		return cq_fail(err, CQ_EINVAL,
						  "position_offset applies to sinusoidal positions only (a learned table is stored from token 0)");
	if (!(c->layer_norm_eps > 0.0f && c->layer_norm_eps < 1.0f))
		return cq_fail(err, CQ_EINVAL, "config key \"layer_norm_eps\" is %g, must be in (0, 1)",
						  c->layer_norm_eps);
	if ((s = range_int(err, "weight_bits", c->weight_bits, 7, 8)))
		return s;
	if (c->weight_bits != 8 && c->precision != CQ_PRECISION_INT8)
		return cq_fail(err, CQ_EINVAL, "config key \"weight_bits\" applies to int8 models only");
	if ((unsigned) c->embedding_precision > CQ_PRECISION_INT8)
		return cq_fail(err, CQ_EINVAL, "bad embedding_precision value");
	if (c->embedding_precision == CQ_PRECISION_INT8 && c->precision != CQ_PRECISION_INT8)
		return cq_fail(err, CQ_EINVAL,
					   "config key \"embedding_precision\" is \"int8\", which needs \"precision\": \"int8\"");
	return validate_kind(c, err);
}

static cq_code
get_typed(const cq_json_object *o, const char *key, cq_json_type type,
		  const cq_json_member **m, cq_error *err)
{
	static const char *const names[] = {"null", "a boolean", "a number", "a string"};

	*m = cq_json_get(o, key);
	if (!*m)
		return cq_fail(err, CQ_EINVAL, "config key \"%s\" is missing", key);
	if ((*m)->type != type)
		return cq_fail(err, CQ_EINVAL, "config key \"%s\" must be %s", key, names[type]);
	return CQ_OK;
}

static cq_code
get_int(const cq_json_object *o, const char *key, int *out, cq_error *err)
{
	const cq_json_member *m;
	cq_code s = get_typed(o, key, CQ_JSON_NUMBER, &m, err);

	if (s)
		return s;
	if (m->number != floor(m->number) || fabs(m->number) > 2e9)
		return cq_fail(err, CQ_EINVAL, "config key \"%s\" must be an integer", key);
	*out = (int) m->number;
	return CQ_OK;
}

static cq_code
get_float(const cq_json_object *o, const char *key, float *out, cq_error *err)
{
	const cq_json_member *m;
	cq_code s = get_typed(o, key, CQ_JSON_NUMBER, &m, err);

	if (!s)
		*out = (float) m->number;
	return s;
}

static cq_code
get_bool(const cq_json_object *o, const char *key, bool *out, cq_error *err)
{
	const cq_json_member *m;
	cq_code s = get_typed(o, key, CQ_JSON_BOOL, &m, err);

	if (!s)
		*out = m->boolean;
	return s;
}

/* One of two spellings, as enum value 0 or 1. */
static cq_code
get_choice(const cq_json_object *o, const char *key, const char *v0,
		   const char *v1, int *out, cq_error *err)
{
	const cq_json_member *m;
	cq_code s = get_typed(o, key, CQ_JSON_STRING, &m, err);

	if (s)
		return s;
	if (strcmp(m->string, v0) == 0)
		*out = 0;
	else if (strcmp(m->string, v1) == 0)
		*out = 1;
	else
		return cq_fail(err, CQ_EINVAL, "config key \"%s\" must be \"%s\" or \"%s\"",
						  key, v0, v1);
	return CQ_OK;
}

const char *
cq_config_arch_keys(void)
{
	return "d_model,heads,encoder_layers,decoder_layers,ffn_dim,activation,dropout,"
		"attention_dropout,activation_dropout,max_positions,positions,tie_output,"
		"share_embeddings,norm_position,encoder_final_norm,decoder_final_norm,"
		"scale_embeddings,layernorm_embedding,position_offset,sinusoid_denominator,"
		"layer_norm_eps,output_bias,decoder_start_id,norm,kind,pooling,pooler,"
		"token_type_embedding";
}

/* An optional key: absent leaves *out as it is. */
static bool
present(const cq_json_object *o, const char *key)
{
	return cq_json_get(o, key) != NULL;
}

/* The architecture variants: every key optional, defaults as before. */
static cq_code
read_variants(const cq_json_object *o, cq_model_config *c, cq_error *err)
{
	cq_code s = CQ_OK;
	int			v = 0;

	cq_config_default_variants(c);
	if (present(o, "norm_position") &&
		!(s = get_choice(o, "norm_position", "pre", "post", &v, err)))
		c->post_norm = v == 1;
	if (!s && present(o, "sinusoid_denominator") &&
		!(s = get_choice(o, "sinusoid_denominator", "half_minus_one", "half", &v, err)))
		c->sinusoid_half = v == 1;
	if (!s && present(o, "encoder_final_norm"))
		s = get_bool(o, "encoder_final_norm", &c->encoder_final_norm, err);
	if (!s && present(o, "decoder_final_norm"))
		s = get_bool(o, "decoder_final_norm", &c->decoder_final_norm, err);
	if (!s && present(o, "scale_embeddings"))
		s = get_bool(o, "scale_embeddings", &c->scale_embeddings, err);
	if (!s && present(o, "layernorm_embedding"))
		s = get_bool(o, "layernorm_embedding", &c->layernorm_embedding, err);
	if (!s && present(o, "output_bias"))
		s = get_bool(o, "output_bias", &c->output_bias, err);
	if (!s && present(o, "position_offset"))
		s = get_int(o, "position_offset", &c->position_offset, err);
	if (!s && present(o, "decoder_start_id"))
		s = get_int(o, "decoder_start_id", &c->decoder_start_id, err);
	if (!s && present(o, "layer_norm_eps"))
		s = get_float(o, "layer_norm_eps", &c->layer_norm_eps, err);
	if (!s && present(o, "norm") && !(s = get_choice(o, "norm", "layer", "rms", &v, err)))
		c->norm = v == 1 ? CQ_NORM_RMS : CQ_NORM_LAYER;
	if (!s && present(o, "precision") &&
		!(s = get_choice(o, "precision", "float32", "int8", &v, err)))
		c->precision = v == 1 ? CQ_PRECISION_INT8 : CQ_PRECISION_FLOAT32;
	if (!s && present(o, "weight_bits"))
		s = get_int(o, "weight_bits", &c->weight_bits, err);
	if (!s && present(o, "embedding_precision") &&
		!(s = get_choice(o, "embedding_precision", "float32", "int8", &v, err)))
		c->embedding_precision = v == 1 ? CQ_PRECISION_INT8 : CQ_PRECISION_FLOAT32;
	if (!s && present(o, "kind") &&
		!(s = get_choice(o, "kind", "translation", "encoder", &v, err)))
		c->kind = v == 1 ? CQ_KIND_ENCODER : CQ_KIND_TRANSLATION;
	if (!s && present(o, "pooling") && !(s = get_choice(o, "pooling", "mean", "cls", &v, err)))
		c->pooling = v == 1 ? CQ_POOL_CLS : CQ_POOL_MEAN;
	if (!s && present(o, "pooler"))
		s = get_bool(o, "pooler", &c->pooler, err);
	if (!s && present(o, "token_type_embedding"))
		s = get_bool(o, "token_type_embedding", &c->token_type_embedding, err);
	return s;
}

/* "relu", "gelu" or "swish" */
static cq_code
get_activation(const cq_json_object *o, cq_activation *out, cq_error *err)
{
	static const char *const names[] = {"relu", "gelu", "swish"};
	const cq_json_member *m;
	cq_code s = get_typed(o, "activation", CQ_JSON_STRING, &m, err);

	if (s)
		return s;
	for (int i = 0; i < 3; i++)
		if (strcmp(m->string, names[i]) == 0)
		{
			*out = (cq_activation) i;
			return CQ_OK;
		}
	return cq_fail(err, CQ_EINVAL,
					  "config key \"activation\" must be \"relu\", \"gelu\" or \"swish\"");
}

static cq_code
read_all(const cq_json_object *o, cq_model_config *c, cq_error *err)
{
	cq_code s;
	int			pos = 0;

	if ((s = get_int(o, "d_model", &c->d_model, err)) ||
		(s = get_int(o, "heads", &c->heads, err)) ||
		(s = get_int(o, "encoder_layers", &c->encoder_layers, err)) ||
		(s = get_int(o, "decoder_layers", &c->decoder_layers, err)) ||
		(s = get_int(o, "ffn_dim", &c->ffn_dim, err)) ||
		(s = get_activation(o, &c->activation, err)) ||
		(s = get_float(o, "dropout", &c->dropout, err)) ||
		(s = get_float(o, "attention_dropout", &c->attention_dropout, err)) ||
		(s = get_float(o, "activation_dropout", &c->activation_dropout, err)) ||
		(s = get_int(o, "max_positions", &c->max_positions, err)) ||
		(s = get_choice(o, "positions", "sinusoidal", "learned", &pos, err)) ||
		(s = get_bool(o, "tie_output", &c->tie_output, err)) ||
		(s = get_bool(o, "share_embeddings", &c->share_embeddings, err)) ||
		(s = read_variants(o, c, err)))
		return s;
	if (c->src_vocab_size > 0 || c->tgt_vocab_size > 0)
	{
		/* a preset: the sizes come from the caller */
		if (cq_json_get(o, "src_vocab_size") || cq_json_get(o, "tgt_vocab_size"))
			return cq_fail(err, CQ_EINVAL, "a preset must not set the vocabulary sizes");
	}
	else if ((s = get_int(o, "src_vocab_size", &c->src_vocab_size, err)) ||
			 (s = get_int(o, "tgt_vocab_size", &c->tgt_vocab_size, err)))
		return s;
	c->positions = pos == 0 ? CQ_POS_SINUSOIDAL : CQ_POS_LEARNED;
	return CQ_OK;
}

static cq_code
from_json(const char *text, size_t len, int src_vocab, int tgt_vocab,
		  cq_model_config *cfg, cq_error *err)
{
	cq_json_object o;
	cq_error	jerr;
	cq_code s;

	memset(cfg, 0, sizeof(*cfg));
	cfg->src_vocab_size = src_vocab;
	cfg->tgt_vocab_size = tgt_vocab;
	if ((s = cq_json_parse_object(text, len, &o, &jerr)) != CQ_OK)
		return s == CQ_ENOMEM ? cq_fail(err, s, "%s", jerr.msg) :
			cq_fail(err, CQ_EINVAL, "config is not valid JSON: %s", jerr.msg);
	s = read_all(&o, cfg, err);
	cq_json_free(&o);
	return s ? s : cq_config_validate(cfg, err);
}

cq_code
cq_config_from_json(const char *text, size_t len, cq_model_config *cfg,
					cq_error *err)
{
	return from_json(text, len, 0, 0, cfg, err);
}

cq_code
cq_config_from_preset_json(const char *text, size_t len, int src_vocab,
						   int tgt_vocab, cq_model_config *cfg, cq_error *err)
{
	if (src_vocab < 1 || tgt_vocab < 1)
		return cq_fail(err, CQ_EINVAL, "vocabulary sizes must be positive");
	return from_json(text, len, src_vocab, tgt_vocab, cfg, err);
}

static const char *
activation_name(cq_activation a)
{
	return a == CQ_ACT_GELU ? "gelu" : a == CQ_ACT_SWISH ? "swish" : "relu";
}

static void append(char *buf, size_t size, int *n, const char *fmt,...)
			__attribute__((format(printf, 4, 5)));

/* printf at buf + *n, advancing *n (-1 on a printf error). */
static void
append(char *buf, size_t size, int *n, const char *fmt,...)
{
	va_list		ap;
	int			k;

	if (*n < 0)
		return;
	va_start(ap, fmt);
	k = vsnprintf(buf + *n, size > (size_t) *n ? size - *n : 0, fmt, ap);
	va_end(ap);
	*n = k < 0 ? -1 : *n + k;
}

/* The fewest significant digits that read back as the same float (1e-6, not 9.99999997e-07). */
static int
shortest_digits(float v)
{
	char		tmp[32];

	for (int p = 1; p < 9; p++)
	{
		snprintf(tmp, sizeof(tmp), "%.*g", p, v);
		if (strtof(tmp, NULL) == v)
			return p;
	}
	return 9;
}

/* The variant keys that differ from the defaults, as ", \"key\": value" pairs. */
static int
variants_json(const cq_model_config *c, char *buf, size_t size)
{
	cq_model_config d;
	int			n = 0;

	buf[0] = '\0';
	cq_config_default_variants(&d);
	if (c->post_norm)
		append(buf, size, &n, ", \"norm_position\": \"post\"");
	if (c->encoder_final_norm != d.encoder_final_norm)
		append(buf, size, &n, ", \"encoder_final_norm\": false");
	if (c->decoder_final_norm != d.decoder_final_norm)
		append(buf, size, &n, ", \"decoder_final_norm\": false");
	if (c->scale_embeddings != d.scale_embeddings)
		append(buf, size, &n, ", \"scale_embeddings\": false");
	if (c->layernorm_embedding)
		append(buf, size, &n, ", \"layernorm_embedding\": true");
	if (c->position_offset != d.position_offset)
		append(buf, size, &n, ", \"position_offset\": %d", c->position_offset);
	if (c->sinusoid_half)
		append(buf, size, &n, ", \"sinusoid_denominator\": \"half\"");
	if (c->layer_norm_eps != d.layer_norm_eps)
		append(buf, size, &n, ", \"layer_norm_eps\": %.*g", shortest_digits(c->layer_norm_eps),
			   c->layer_norm_eps);
	if (c->output_bias)
		append(buf, size, &n, ", \"output_bias\": true");
	if (c->decoder_start_id != d.decoder_start_id)
		append(buf, size, &n, ", \"decoder_start_id\": %d", c->decoder_start_id);
	if (c->norm == CQ_NORM_RMS)
		append(buf, size, &n, ", \"norm\": \"rms\"");
	if (c->precision == CQ_PRECISION_INT8)
		append(buf, size, &n, ", \"precision\": \"int8\"");
	if (c->weight_bits != d.weight_bits)
		append(buf, size, &n, ", \"weight_bits\": %d", c->weight_bits);
	if (c->embedding_precision == CQ_PRECISION_INT8)
		append(buf, size, &n, ", \"embedding_precision\": \"int8\"");
	if (c->kind == CQ_KIND_ENCODER)
		append(buf, size, &n, ", \"kind\": \"encoder\"");
	if (c->pooling == CQ_POOL_CLS)
		append(buf, size, &n, ", \"pooling\": \"cls\"");
	if (c->pooler)
		append(buf, size, &n, ", \"pooler\": true");
	if (c->token_type_embedding)
		append(buf, size, &n, ", \"token_type_embedding\": true");
	return n;
}

/*
 * The variant keys are written only where they differ from the defaults, so
 * a model of corpq's own architecture has the same JSON (and file) as before.
 */
size_t
cq_config_to_json(const cq_model_config *c, char *buf, size_t size)
{
	char		extra[512];
	int			k = variants_json(c, extra, sizeof(extra));
	int			n;

	if (k < 0 || k >= (int) sizeof(extra))
		return 0;
	n = snprintf(buf, size,
				 "{\"d_model\": %d, \"heads\": %d, \"encoder_layers\": %d, "
				 "\"decoder_layers\": %d, \"ffn_dim\": %d, \"activation\": \"%s\", "
				 "\"dropout\": %.9g, \"attention_dropout\": %.9g, "
				 "\"activation_dropout\": %.9g, \"max_positions\": %d, "
				 "\"positions\": \"%s\", \"tie_output\": %s, "
				 "\"share_embeddings\": %s, \"src_vocab_size\": %d, "
				 "\"tgt_vocab_size\": %d%s}",
				 c->d_model, c->heads, c->encoder_layers, c->decoder_layers,
				 c->ffn_dim, activation_name(c->activation),
				 c->dropout, c->attention_dropout, c->activation_dropout,
				 c->max_positions,
				 c->positions == CQ_POS_LEARNED ? "learned" : "sinusoidal",
				 c->tie_output ? "true" : "false",
				 c->share_embeddings ? "true" : "false",
				 c->src_vocab_size, c->tgt_vocab_size, extra);
	return n < 0 ? 0 : (size_t) n;
}

/* The architecture, not the precision: an int8 version is of the same model. */
bool
cq_config_equal(const cq_model_config *a, const cq_model_config *b)
{
	return a->d_model == b->d_model && a->heads == b->heads &&
		a->encoder_layers == b->encoder_layers &&
		a->decoder_layers == b->decoder_layers && a->ffn_dim == b->ffn_dim &&
		a->activation == b->activation && a->dropout == b->dropout &&
		a->attention_dropout == b->attention_dropout &&
		a->activation_dropout == b->activation_dropout &&
		a->max_positions == b->max_positions && a->positions == b->positions &&
		a->tie_output == b->tie_output && a->share_embeddings == b->share_embeddings &&
		a->src_vocab_size == b->src_vocab_size && a->tgt_vocab_size == b->tgt_vocab_size &&
		a->post_norm == b->post_norm && a->encoder_final_norm == b->encoder_final_norm &&
		a->decoder_final_norm == b->decoder_final_norm &&
		a->scale_embeddings == b->scale_embeddings &&
		a->layernorm_embedding == b->layernorm_embedding &&
		a->position_offset == b->position_offset && a->sinusoid_half == b->sinusoid_half &&
		a->layer_norm_eps == b->layer_norm_eps && a->output_bias == b->output_bias &&
		a->decoder_start_id == b->decoder_start_id && a->norm == b->norm &&
		a->kind == b->kind && a->pooling == b->pooling && a->pooler == b->pooler &&
		a->token_type_embedding == b->token_type_embedding;
}
