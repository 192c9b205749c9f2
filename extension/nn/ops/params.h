/*
 * The parameters the kernels take: plain structs of pointers and sizes, no
 * model types.  The model (nn/model/model.h) holds its weights in them and
 * the layers pass them down; an op never sees a layer or the model, so the
 * floors of nn/ stay ops -> model -> layers -> infer -> train.
 */
#ifndef CQ_NN_PARAMS_H
#define CQ_NN_PARAMS_H

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

#endif
