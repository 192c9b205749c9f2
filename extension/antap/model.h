/*
 * ANTAP, the Attention-based Network for Translation Accuracy Prediction
 * (paper 002, Sec. 3.2, Fig. 1, Eqs. 6-8): configuration, parameters and
 * their weight file.  models/ANTAP.md describes the architecture, the
 * tensors and the file; this header is its C side.
 *
 * The network reads a target token's CAV after the input pipeline (LayerNorm
 * over the whole matrix, adaptive average pooling to pool_rows x pool_cols:
 * cav_view_pool_layer_norm in cav/cav_view.h) and predicts the token's
 * teacher-forced translation accuracy.  Per token, x [H = pool_rows,
 * W = pool_cols]:
 *
 *   a   = GELU(x)                                  [H, W]   (Eq. 6, CAV_ds)
 *   b   = emb_cols(a)          Linear W -> S       [H, S]   (EmbLinear^3rd)
 *   c   = GELU(b^T)                                [S, H]
 *   e   = emb_rows(c)          Linear H -> D       [S, D]   (EmbLinear^2nd, CAV_emb)
 *   y   = e + MHA(LN(e))       heads, pre-norm     [S, D]   (Eq. 7, CAV'_attn)
 *   z   = fc2(ReLU(fc1(y)))    D -> F -> D         [S, D]   (Eq. 7, CAV_attn = FFN)
 *   out = PredModule(flatten(z))                   scalar   (Eq. 8)
 *
 * PredModule shrinks S*D by pred_factor per layer (Linear then GELU) while
 * the width exceeds pred_factor, then one Linear to 1 (no activation: the
 * target is regressed with MSE).  No dropout (the paper removes it, Sec. 4.3).
 *
 * Parameters are ONE float block laid out by a tensor table of nn's
 * cq_tensor_info (64-byte aligned tensors); a gradient or AdamW moment block
 * of cq_antap_param_floats() floats uses the same offsets.  Linear weights
 * are [out, in] as in PyTorch and nn.
 */
#ifndef CQ_ANTAP_MODEL_H
#define CQ_ANTAP_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "nn/model/model.h"

/* Layer-norm epsilon of the attention block (PyTorch's default). */
#define CQ_ANTAP_LN_EPS 1e-5f

/* The most prediction layers any configuration yields (pred_factor >= 2). */
#define CQ_ANTAP_MAX_PRED 32

/* Bounds of the configuration (see cq_antap_config_validate). */
#define CQ_ANTAP_MAX_POOL 1024			/* pool_rows, pool_cols */
#define CQ_ANTAP_MAX_POOL_CELLS (1 << 18)	/* pool_rows * pool_cols */
#define CQ_ANTAP_MAX_DIM 1024			/* seq_len, d_model, ffn_dim / 8 */
#define CQ_ANTAP_MAX_FLAT (1 << 14)		/* seq_len * d_model */
#define CQ_ANTAP_MAX_PARAMS (1 << 25)	/* real parameters: 128 MB of floats */

typedef struct cq_antap_config
{
	int			pool_rows;		/* H: pooled dictionary axis */
	int			pool_cols;		/* W: pooled distance axis */
	int			seq_len;		/* S: emb_cols output, the attention's positions */
	int			d_model;		/* D: emb_rows output, the attention's width */
	int			heads;			/* divides d_model */
	int			ffn_dim;		/* F */
	int			pred_factor;	/* PredModule's shrink factor per layer, >= 2 */
} cq_antap_config;

/* pool 32 x 32, seq_len 16, d_model 32, 4 heads, ffn 64, pred_factor 4. */
void		cq_antap_config_default(cq_antap_config *cfg);

/* CQ_EINVAL naming the first key out of range. */
cq_code		cq_antap_config_validate(const cq_antap_config *cfg, cq_error *err);

/*
 * PredModule's widths: dims[0] = S*D, dims[i+1] = ceil(dims[i] / factor)
 * while dims[i] > factor, then 1.  Returns the number of Linear layers
 * (entries of dims minus one), at most CQ_ANTAP_MAX_PRED.
 */
int			cq_antap_pred_dims(const cq_antap_config *cfg, int dims[CQ_ANTAP_MAX_PRED + 1]);

/* Real parameters of a valid configuration. */
size_t		cq_antap_config_params(const cq_antap_config *cfg);

/* {"model": "antap", "pool_rows": ..., ...}: every key, in a fixed order. */
size_t		cq_antap_config_to_json(const cq_antap_config *cfg, char *buf, size_t size);

/* Every key required, "model" must be "antap"; unknown keys are errors. */
cq_code		cq_antap_config_from_json(const char *text, size_t len, cq_antap_config *cfg,
									  cq_error *err);

typedef struct cq_antap_model
{
	cq_antap_config cfg;

	float	   *params;			/* the block, 64-byte aligned */
	size_t		n_floats;		/* its length, padding included */
	void	   *raw;			/* the allocation behind params */

	int			n_tensors;
	cq_tensor_info *tensors;

	cq_linear	emb_cols;		/* [S, W] */
	cq_linear	emb_rows;		/* [D, H] */
	cq_norm		attn_ln;		/* [D], layer norm of eps CQ_ANTAP_LN_EPS */
	cq_linear	qkv;			/* [3D, D]: rows q, then k, then v */
	cq_linear	attn_out;		/* [D, D] */
	cq_linear	fc1;			/* [F, D] */
	cq_linear	fc2;			/* [D, F] */
	int			n_pred;
	cq_linear	pred[CQ_ANTAP_MAX_PRED];	/* [dims[i+1], dims[i]] */
} cq_antap_model;

/* A model of a valid cfg with every parameter zero. */
cq_code		cq_antap_new(const cq_antap_config *cfg, cq_antap_model **out, cq_error *err);
void		cq_antap_free(cq_antap_model *m);

/*
 * PyTorch's default initialisation of nn.Linear from a seed (Philox, the
 * same on every machine): weight and bias uniform on [-1/sqrt(in),
 * 1/sqrt(in)); layer norm weight 1, bias 0.
 */
void		cq_antap_init_random(cq_antap_model *m, uint64_t seed);

const cq_tensor_info *cq_antap_tensor(const cq_antap_model *m, const char *name);
size_t		cq_antap_param_floats(const cq_antap_model *m);	/* padding included */

/* Copy every parameter of src into dst (same configuration). */
void		cq_antap_copy(cq_antap_model *dst, const cq_antap_model *src);

/*
 * The weight file (models/ANTAP.md): magic "CORPQAP\0", version, config
 * JSON, tensor table, 64-byte aligned little-endian float32 data, CRC-32 --
 * the layout of nn's weight files (models/FORMAT.md) under its own magic.
 * The loader checks every field and returns CQ_EFORMAT naming what is
 * wrong (magic, version, header, length, checksum, configuration, a missing,
 * unknown, duplicated or misshapen tensor, a non-finite value); it never
 * reads outside buf[0..len).  (The glue reports bytes read back from its
 * catalog as corrupted instead.)
 */
#define CQ_ANTAP_FILE_MAGIC "CORPQAP\0"
#define CQ_ANTAP_FILE_VERSION 1

size_t		cq_antap_file_size(const cq_antap_model *m);
cq_code		cq_antap_file_write(const cq_antap_model *m, void *buf, size_t size,
								cq_error *err);
cq_code		cq_antap_file_load(const void *buf, size_t len, cq_antap_model **out,
							   cq_error *err);

#endif
