/*
 * The in-memory model: a configuration, all parameters in ONE float
 * allocation, and named views into it.
 *
 * The parameter block is laid out by a tensor table (name, shape, offset);
 * every tensor starts on a 64-byte boundary.  The same layout is the weight
 * file's data section (models/FORMAT.md), and a gradient or optimizer-state
 * buffer of cq_model_param_floats() floats can reuse the offsets.
 * Linear weights are [out, in] (y = x W^T + b), as in PyTorch.
 */
#ifndef CQ_NN_MODEL_H
#define CQ_NN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/model/config.h"
#include "common/error.h"

#define CQ_TENSOR_NAME_MAX 64
#define CQ_TENSOR_ALIGN_FLOATS 16	/* 64 bytes */

typedef struct cq_tensor_info
{
	char		name[CQ_TENSOR_NAME_MAX];
	int			ndim;				/* 1 or 2 */
	int			dims[2];
	size_t		offset;				/* in floats from the block start; codes: bytes
									 * from the start of the packed copies */
	size_t		numel;
	int			bits;				/* 0: float32 in the block; 7 or 8: int8 codes of
									 * that width and per-row scales, packed
									 * (qgemm.h), an int8 image's (cq_model_new_coded) */
} cq_tensor_info;

typedef struct cq_encoder_layer
{
	cq_norm	attn_ln;
	cq_linear	qkv;				/* [3d, d]: rows q, then k, then v */
	cq_linear	attn_out;			/* [d, d] */
	cq_norm	ffn_ln;
	cq_linear	fc1;				/* [ffn, d] */
	cq_linear	fc2;				/* [d, ffn] */
} cq_encoder_layer;

typedef struct cq_decoder_layer
{
	cq_norm	self_ln;
	cq_linear	self_qkv;			/* [3d, d] */
	cq_linear	self_out;			/* [d, d] */
	cq_norm	cross_ln;
	cq_linear	cross_q;			/* [d, d], on the decoder state */
	cq_linear	cross_kv;			/* [2d, d], on the encoder output: k, then v */
	cq_linear	cross_out;			/* [d, d] */
	cq_norm	ffn_ln;
	cq_linear	fc1;
	cq_linear	fc2;
} cq_decoder_layer;

typedef struct cq_model
{
	cq_model_config cfg;

	float	   *params;				/* the block, 64-byte aligned */
	size_t		n_floats;			/* its length, padding included */
	void	   *raw;				/* the allocation behind params */

	int			n_tensors;
	cq_tensor_info *tensors;

	float	   *src_embed;			/* [src_vocab, d] */
	float	   *tgt_embed;			/* [tgt_vocab, d]; = src_embed if shared */
	/* embedding_precision int8, once packed: each embedding's codes packed
	 * as a linear's (qgemm.h, a row per token), read by cq_embed_token; a
	 * tied target embedding's are the output projection's */
	void	   *src_embed_codes;
	void	   *tgt_embed_codes;	/* = src_embed_codes if shared */
	float	   *src_pos;			/* [max_positions, d] learned, else NULL */
	float	   *tgt_pos;
	float	   *out_proj;			/* [tgt_vocab, d]; = tgt_embed if tied */
	cq_linear	output;				/* out_proj as a linear without bias */
	cq_encoder_layer *enc;
	cq_decoder_layer *dec;
	cq_norm	enc_ln;			/* final norms (w NULL: absent) */
	cq_norm	dec_ln;
	cq_norm	src_embed_ln;		/* layernorm_embedding (w NULL: absent) */
	cq_norm	tgt_embed_ln;
	float	   *out_bias;			/* [tgt_vocab] output_bias, else NULL */
	float	   *tok_type;			/* [d] encoder token_type_embedding, else NULL */
	cq_linear	pooler;				/* encoder pooler [d, d] (w NULL: absent) */

	float	   *sinusoid;			/* [sinusoid_rows, d] table, not a parameter */
	int			sinusoid_rows;		/* min(max_positions, CQ_SINUSOID_TABLE_ROWS) */
	void	   *packed_raw;			/* the allocation behind every linear's packed copy */
	size_t		packed_bytes;		/* the packed copies' bytes from align64(packed_raw) */
	bool		compact;			/* cq_model_compact: linear weights only packed */
	bool		attached;			/* cq_model_attach: the arrays are an arena's, not owned */
} cq_model;

/*
 * A model with zero parameters (norms zero too) for cfg.  Every cq_norm,
 * present or absent, gets d, the configuration's kind and epsilon.
 */
cq_code cq_model_new(const cq_model_config *cfg, cq_model **out, cq_error *err);
void		cq_model_free(cq_model *m);

/*
 * A model laid out as its int8 image stores it (models/FORMAT.md, "int8
 * tensors"; cfg->precision int8): every linear weight and the output
 * projection are code tensors (bits 7 or 8 in the table) with no float32
 * storage, only room for their packed copies, which cq_model_fill_codes
 * fills.  With embedding_precision int8 the token embeddings are code
 * tensors too, and a tied output projection is its embedding's codes;
 * otherwise the embeddings stay float32 and a tied projection has codes of
 * its own.  Norms and biases stay float32.  The model is compact (see
 * cq_model_compact): it serves inference only.
 */
cq_code		cq_model_new_coded(const cq_model_config *cfg, cq_model **out, cq_error *err);

/*
 * The tensors of cfg's int8 image, in file order, into table (NULL: only
 * counted); returns how many.  cfg must be valid, precision int8.
 */
int			cq_model_coded_tensors(const cq_model_config *cfg, cq_tensor_info *table);

/*
 * The tensors of cfg's float32 image (version 1), in parameter-block order,
 * into table (NULL: only counted); returns how many.  cfg must be valid.
 */
int			cq_model_float_tensors(const cq_model_config *cfg, cq_tensor_info *table);

/* Pack code tensor t of a cq_model_new_coded model: its codes [rows, cols], scales [rows]. */
void		cq_model_fill_codes(cq_model *m, const cq_tensor_info *t, const int8_t *codes,
								const float *scales);

/*
 * fairseq-style random initialisation from a seed (Philox, so the result is
 * the same on every machine): Linear weights Xavier-uniform (q/k/v blocks with
 * gain 1/sqrt 2), biases 0, norms gain 1 (bias 0), token embeddings and learned
 * positions and an untied output projection N(0, 1/d), the <pad> rows 0.
 */
void		cq_model_init_random(cq_model *m, uint64_t seed);

/*
 * Freeze a model for inference: pack every linear weight and the output
 * projection once, in one allocation (about the size of those weights), for
 * the row-independent kernel (rowgemm.h) that cq_linear_rows then uses.  A
 * packed model is read-only; training works on unpacked models (OpenBLAS).
 * cq_model_unpack frees the packed copies.  A compact model is packed
 * already: nothing to do.
 */
cq_code cq_model_pack(cq_model *m, cq_error *err);
void		cq_model_unpack(cq_model *m);

/*
 * After cq_model_pack, keep one copy of each weight: the parameter block is
 * rebuilt with only the tensors inference reads unpacked (embeddings,
 * positions, layer norms, biases), and every linear's w becomes NULL (its
 * packed copy is the weight).  A tied target embedding (and a source
 * embedding shared with it) goes too: tgt_embed is NULL and lookups read the
 * output projection's packed copy.  Saves about the size of the linear
 * weights.
 * The tensor table then lists what the block holds; a compact model serves
 * inference only (no training, no weight file, no cq_model_unpack).  A model
 * compact already (an int8 image's) stays as it is.
 */
cq_code cq_model_compact(cq_model *m, cq_error *err);

/*
 * The size of a model of cfg without allocating it, for checks before
 * cq_model_new: the floats of its parameter block (padding included, as
 * cq_model_param_floats) and its real parameters (as cq_model_param_count).
 * cfg must be valid (cq_config_validate).
 */
void		cq_model_size_for(const cq_model_config *cfg, size_t *floats, size_t *params);

/*
 * The least bytes of the data section of a weight file for cfg (tensors do
 * not overlap): 4 per float32 value; coded (an int8 image) 1 per code and
 * 4 per scale.  Checked before a loader allocates the model.
 */
size_t		cq_model_data_min(const cq_model_config *cfg, bool coded);

/*
 * The memory of loading a model of cfg as the model cache does
 * (cq_modelfile_load from an image of image bytes, cq_model_pack,
 * cq_model_compact), computed from cfg before anything is allocated, in
 * bytes asked of the allocator (common/mem.h): every allocation the loaded
 * model keeps (its struct, layer arrays, tensor table, parameter block,
 * packed copies or int8 codes and scales, sinusoid table), and the most
 * alive at once on the way (the image, the model as read, the reader's and
 * the quantizer's scratch, the packed copies, the compacted block).  coded:
 * the image stores int8 codes (a typed file of an int8 model).  cfg must be
 * valid (cq_config_validate).  test/unit/test_nn_load_memory.c compares both
 * with what the allocator is asked for.
 */
typedef struct cq_model_memory
{
	size_t		loaded;				/* what the loaded model holds */
	size_t		peak;				/* the most held while loading, the image included */
} cq_model_memory;

void		cq_model_load_memory(const cq_model_config *cfg, bool coded, size_t image,
								 cq_model_memory *out);

/* Bytes of cfg's sinusoid table (0 with learned positions). */
size_t		cq_model_position_bytes(const cq_model_config *cfg);

/*
 * A relocatable model (model_arena.c): every array a packed, compact model's
 * pointers reach (parameter block, packed copies or int8 codes and scales,
 * tensor table, sinusoid table, layer arrays) copied into one contiguous
 * arena whose pointers are stored as offsets from its start, so that it can
 * live in memory mapped at a different address in every process (a shared
 * memory segment).  The arena's start must be 64-byte aligned.
 *
 * cq_model_arena_bytes: the exact bytes of m's arena (0 with *err set when m
 * is not packed and compact, or a pointer of m reaches outside its arrays).
 * cq_model_flatten: write m's arena into dst (size bytes, at least
 * cq_model_arena_bytes(m)); m is unchanged.
 * cq_model_attach: a model whose arrays are the arena's at base (bytes
 * long): only the struct and its layer arrays are allocated (small); the
 * arena is read, never written, and must outlive the model.  cq_model_free
 * frees what attach allocated and leaves the arena alone.  The arena is
 * checked (magic, format, sizes, every offset inside it) before use.
 */
size_t		cq_model_arena_bytes(const cq_model *m, cq_error *err);
cq_code		cq_model_flatten(const cq_model *m, void *dst, size_t size, cq_error *err);
cq_code		cq_model_attach(const void *base, size_t bytes, cq_model **out, cq_error *err);

const cq_tensor_info *cq_model_tensor(const cq_model *m, const char *name);
size_t		cq_model_param_floats(const cq_model *m);	/* padding included */
size_t		cq_model_param_count(const cq_model *m);	/* of the float32 architecture */

#endif
