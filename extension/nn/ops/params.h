/*
 * The parameters the kernels take: plain structs of pointers and sizes, no
 * model types.  The model (nn/model/model.h) holds its weights in them and
 * the layers pass them down; an op never sees a layer or the model, so the
 * floors of nn/ stay ops -> model -> layers -> infer -> train.
 */
#ifndef CQ_NN_PARAMS_H
#define CQ_NN_PARAMS_H

#include <stdbool.h>

/* The feed-forward network's activation. */
typedef enum cq_activation
{
	CQ_ACT_RELU,
	CQ_ACT_GELU,				/* exact: x * Phi(x) = x/2 (1 + erf(x / sqrt 2)) */
	CQ_ACT_SWISH				/* SiLU: x * sigmoid(x) */
} cq_activation;

/* y = x W^T + b, with the copies inference packs the weight into. */
typedef struct cq_linear
{
	float	   *w;					/* [out, in] */
	float	   *b;					/* [out], or NULL (the output projection) */
	int			out;
	int			in;
	float	   *packed;				/* w packed for inference (cq_model_pack), or NULL */
	void	   *qpacked;			/* int8 models: w quantized and packed (qgemm.h), or NULL */
} cq_linear;

/* What a normalisation computes over each row of d values. */
typedef enum cq_norm_kind
{
	CQ_NORM_LAYER,				/* (x - mean) / sqrt(var + eps) * w + b, population variance */
	CQ_NORM_RMS					/* x / sqrt(mean(x^2) + eps) * w, no bias */
} cq_norm_kind;

/*
 * A normalisation over rows of d values.  w NULL: a norm the model does not
 * have (an absent final norm), the identity.  The operations on it are the
 * norm object of nn/layers/norm.h.
 */
typedef struct cq_norm
{
	float	   *w;					/* [d] gain */
	float	   *b;					/* [d] bias, NULL for a kind without one */
	int			d;
	cq_norm_kind kind;
	float		eps;
} cq_norm;

/* The tensors of a norm of this kind: its gain, and a bias where true. */
static inline bool
cq_norm_has_bias(cq_norm_kind kind)
{
	return kind == CQ_NORM_LAYER;
}

/*
 * The per-row statistics a norm keeps in training for its backward, [rows]
 * each: rstd = 1 / sqrt(var + eps) and the row mean (RMSNorm: rstd =
 * 1 / sqrt(mean(x^2) + eps), mean unused).
 */
typedef struct cq_norm_stats
{
	float	   *mean;
	float	   *rstd;
} cq_norm_stats;

#endif
