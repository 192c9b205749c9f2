/*
 * Hyper-parameters of a transformer encoder-decoder, as held in the "config"
 * JSON of a weight file and in models/{tiny,small,base}.json.  The
 * architecture variants (models/FORMAT.md, "Architecture variants") default
 * to corpq's own pre-norm model; they let the core run fairseq and Marian
 * models converted by tools/corpq-convert.
 */
#ifndef CQ_NN_CONFIG_H
#define CQ_NN_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "nn/ops/params.h"

/* fairseq's special ids */
#define CQ_BOS_ID 0
#define CQ_PAD_ID 1
#define CQ_EOS_ID 2
#define CQ_UNK_ID 3

/* The default norm epsilon (fairseq's, Hugging Face Marian's). */
#define CQ_LAYERNORM_EPS 1e-5f

/*
 * The arithmetic of inference's matrix products (a property of a stored
 * version, not of the architecture: cq_config_equal ignores it).  int8: every
 * linear layer and the output projection run nn/ops/qgemm.h over weights
 * quantized per output row, activations per row; embeddings, layer norms and
 * attention stay float32.  Training runs float32 only.
 */
typedef enum cq_precision
{
	CQ_PRECISION_FLOAT32,
	CQ_PRECISION_INT8
} cq_precision;

/*
 * What a model is: a translation model (encoder-decoder, scored and decoded
 * as a pair) or a sentence encoder (one encoder for both languages, its
 * output pooled into one L2-normalised vector per sentence; no decoder, no
 * output projection).
 */
typedef enum cq_model_kind
{
	CQ_KIND_TRANSLATION,
	CQ_KIND_ENCODER
} cq_model_kind;

/* How an encoder model's positions become one sentence vector. */
typedef enum cq_pooling
{
	CQ_POOL_MEAN,				/* the mean of every position's output */
	CQ_POOL_CLS					/* the first position's (<s>, BERT's [CLS]) */
} cq_pooling;

typedef enum cq_positions
{
	CQ_POS_SINUSOIDAL,
	CQ_POS_LEARNED
} cq_positions;

typedef struct cq_model_config
{
	int			d_model;
	int			heads;
	int			encoder_layers;
	int			decoder_layers;
	int			ffn_dim;
	cq_activation activation;
	float		dropout;			/* embeddings and residual branches */
	float		attention_dropout;	/* attention weights */
	float		activation_dropout; /* inside the FFN, after the activation */
	int			max_positions;		/* per sentence, </s> included */
	cq_positions positions;
	bool		tie_output;			/* output projection = target embedding */
	bool		share_embeddings;	/* source embedding = target embedding */
	int			src_vocab_size;
	int			tgt_vocab_size;
	/* architecture variants (models/FORMAT.md); defaults in brackets */
	bool		post_norm;			/* x = LN(x + Drop(F(x))) [pre: x + Drop(F(LN(x)))] */
	bool		encoder_final_norm; /* encoder.layer_norm present [true] */
	bool		decoder_final_norm; /* decoder.layer_norm present [true] */
	bool		scale_embeddings;	/* E[token] * sqrt(d) [true], else * 1 */
	bool		layernorm_embedding;	/* LN after embedding + position [false] */
	int			position_offset;	/* sinusoid row of token t: t + offset [0] */
	bool		sinusoid_half;		/* frequencies 10000^(-i/h) [false: (h - 1)] */
	float		layer_norm_eps;		/* every norm's epsilon [1e-5] */
	bool		output_bias;		/* decoder.output_projection.bias [false] */
	int			decoder_start_id;	/* the decoder's first input [CQ_EOS_ID] */
	cq_precision precision;			/* inference's products [float32] */
	cq_norm_kind norm;				/* the kind of every norm [layer] */
	int			weight_bits;		/* int8: the weights' code width, 8 or 7 [8] (qgemm.h) */
	/* the model's kind and, for encoders, its pooling (models/FORMAT.md) */
	cq_model_kind kind;				/* [translation] */
	cq_pooling	pooling;			/* encoder: [mean] */
	bool		pooler;				/* encoder: dense + tanh on the pooled vector [false] */
	bool		token_type_embedding;	/* encoder: one learned [d] vector added to every
										 * position (BERT's segment 0) [false] */
	cq_precision embedding_precision;	/* int8: the token embeddings as codes of
										 * weight_bits, per token row [float32] */
} cq_model_config;

/* The variants' defaults: corpq's own architecture. */
void		cq_config_default_variants(cq_model_config *cfg);

/*
 * The configuration of the float32 version an int8 one is of: precision and
 * embedding_precision float32, weight_bits at its default.
 */
void		cq_config_float32(cq_model_config *cfg);

/*
 * A translation configuration (a preset) made an encoder's: kind encoder,
 * no decoder (decoder_layers 0), one embedding (share_embeddings and
 * tie_output true).  The vocabulary sizes must be equal (one joint
 * vocabulary); cq_config_validate says so.
 */
void		cq_config_make_encoder(cq_model_config *cfg);

/*
 * The most tokens one sentence may have: max_positions - 1 (a translation
 * model's side: the tokens and </s>) or max_positions - 2 (an encoder's
 * input: <s>, the tokens, </s>).
 */
int			cq_config_sentence_tokens(const cq_model_config *cfg);

/* "tiny", "small" or "base" with the given vocabulary sizes. */
cq_code cq_config_preset(const char *name, int src_vocab, int tgt_vocab,
							  cq_model_config *cfg, cq_error *err);

/*
 * The keys that set the architecture, comma-separated in a fixed order:
 * every key of the JSON but the vocabulary sizes (a model takes them from
 * its vocabularies) and the precision (a property of a stored version).
 */
const char *cq_config_arch_keys(void);

/* Every key required, every value in range; see models/FORMAT.md. */
cq_code cq_config_from_json(const char *text, size_t len,
								 cq_model_config *cfg, cq_error *err);
/* A preset file (models/NAME.json: no vocabulary keys) with these sizes. */
cq_code cq_config_from_preset_json(const char *text, size_t len, int src_vocab,
										int tgt_vocab, cq_model_config *cfg,
										cq_error *err);
cq_code cq_config_validate(const cq_model_config *cfg, cq_error *err);

/* Field by field (the struct has padding). */
bool		cq_config_equal(const cq_model_config *a, const cq_model_config *b);

/* Writes the JSON into buf (NUL-ended if it fits); returns its length. */
size_t		cq_config_to_json(const cq_model_config *cfg, char *buf, size_t size);

#endif
