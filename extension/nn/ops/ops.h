/*
 * Row-wise kernels of the forward pass.  All take caller-owned buffers and
 * allocate nothing.  Matrices are row-major.
 */
#ifndef CQ_NN_OPS_H
#define CQ_NN_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "nn/ops/params.h"

/*
 * y[rows, out] = x[rows, in] W^T + b  (W is [out, in]; b may be NULL);
 * ldx/ldy row strides.  The one place inference multiplies by a weight
 * matrix: with lin->packed (a model frozen by cq_model_pack) it runs the
 * row-independent kernel (rowgemm.h), so each row's result is the same bits
 * whatever other rows are in the call; without it (training) OpenBLAS.
 */
void		cq_linear_rows(const cq_linear *lin, const float *x, int ldx,
						   float *y, int ldy, int rows);

/* In place over n values. */
void		cq_relu(float *x, long n);
void		cq_gelu_erf(float *x, long n);	/* x/2 (1 + erf(x / sqrt 2)) */
void		cq_swish(float *x, long n); /* x sigmoid(x) = x / (1 + exp(-x)) */

/* The model's activation (config.h) in place over n values: the one switch. */
void		cq_activation_apply(cq_activation act, float *x, long n);

/*
 * Softmax of each row of x[rows, cols] (row stride ld); causal: row i only
 * over its first i + 1 entries, the rest set to 0.
 */
void		cq_softmax_rows(float *x, int rows, int cols, int ld, bool causal);

/*
 * exp(x) for x <= 88, ~2 ulp, written so that loops over it vectorise.  The
 * exponent is computed from x clamped to [-87, 88] with NaN taken as -87, so
 * the integer conversion below is defined for every input; a NaN input is
 * returned as NaN (a select, which still vectorises).
 */
static inline float
cq_fast_expf(float x)
{
	union
	{
		float		f;
		int32_t		i;
	}			scale;
	float		n,
				r,
				p;

	float		in = x;

	x = x >= -87.0f ? (x <= 88.0f ? x : 88.0f) : -87.0f;
	n = __builtin_floorf(x * 1.44269504088896341f + 0.5f);
	r = x - n * 0.693359375f;
	r = r + n * 2.12194440e-4f;
	p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * r * r + r + 1.0f;
	scale.i = ((int32_t) n + 127) << 23;
	return in != in ? in : p * scale.f;
}

/* What the forward pass reports for one output row of logits. */
typedef struct cq_row_stats
{
	float		logp_gold;			/* log p(gold) */
	float		p_max;				/* max_v p(v) */
	float		entropy;			/* -sum_v p(v) ln p(v), nats */
	int32_t		argmax;				/* first v reaching p_max */
} cq_row_stats;

/*
 * Log-softmax statistics of a row of n logits, in two passes: the AVX2
 * variant where the CPU has it (unless the build targets AVX-512, whose
 * zmm suit the generic code), else the generic one; both give the same
 * bits (the variants are named for the tests).
 */
cq_row_stats cq_logit_row_stats(const float *logits, int n, int gold);
cq_row_stats cq_logit_row_stats_generic(const float *logits, int n, int gold);
bool		cq_logit_row_stats_avx2_runs(void);
cq_row_stats cq_logit_row_stats_avx2(const float *logits, int n, int gold);

/*
 * out[v] = log softmax(l)[v] over a row of n logits; out may be l.  out[g]
 * has exactly the bits of cq_logit_row_stats(l, n, g).logp_gold.
 */
void		cq_log_softmax_row(const float *l, int n, float *out);

/* Monte Carlo dropout: where its masks come from (see dropout.c). */
typedef struct cq_dropout_stream
{
	bool		on;
	uint64_t	seed;
	uint32_t	pass;
	uint64_t	pair_key;			/* the sentence pair's own key */
} cq_dropout_stream;

/* Dropout sites: a mask is keyed by (kind, layer, head) and coordinates. */
typedef enum cq_dropout_kind
{
	CQ_DROP_ENC_EMBED = 1,
	CQ_DROP_DEC_EMBED,
	CQ_DROP_ENC_SELF_ATTN,		/* attention weights */
	CQ_DROP_ENC_SELF_RESID,
	CQ_DROP_ENC_FFN_ACT,
	CQ_DROP_ENC_FFN_RESID,
	CQ_DROP_DEC_SELF_ATTN,
	CQ_DROP_DEC_SELF_RESID,
	CQ_DROP_DEC_CROSS_ATTN,
	CQ_DROP_DEC_CROSS_RESID,
	CQ_DROP_DEC_FFN_ACT,
	CQ_DROP_DEC_FFN_RESID
} cq_dropout_kind;

static inline uint32_t
cq_dropout_site(cq_dropout_kind kind, int layer, int head)
{
	return ((uint32_t) kind << 24) | ((uint32_t) layer << 12) | (uint32_t) head;
}

/*
 * Inverted dropout of x[0..n): element j of row `row` at `site` is zeroed
 * with probability p, else scaled by 1 / (1 - p).  No-op when off or p = 0.
 */
void		cq_dropout_apply(const cq_dropout_stream *ds, float p, uint32_t site,
							 uint32_t row, float *x, int n);

/*
 * Multi-head attention of one sentence, all heads:
 *   out[lq, d] (stride ldo) = concat_h softmax(Q_h K_h^T / sqrt(dh)) V_h
 * q, k, v rows have strides ldq, ldk, ldv; head h uses columns h*dh..
 * scores is a [lq, lk] scratch.  causal masks key j > query i.
 */
typedef struct cq_attention_args
{
	const float *q;
	const float *k;
	const float *v;
	int			ldq,
				ldk,
				ldv;
	float	   *out;
	int			ldo;
	int			lq,
				lk,
				heads,
				dh;
	bool		causal;
	float	   *scores;
	const cq_dropout_stream *drop;
	float		drop_p;
	cq_dropout_kind drop_kind;
	int			layer;
} cq_attention_args;

void		cq_attention(const cq_attention_args *a);

/*
 * The same attention for training: it keeps each head's softmax in
 * probs[heads][lq][lk] (before dropout) for cq_attention_backward, and runs
 * its products through OpenBLAS (cq_sgemm).  pd is an [lq, lk] scratch that
 * holds a head's dropped probabilities when attention dropout is on.
 */
void		cq_attention_keep(const cq_attention_args *a, float *probs, float *pd);

/*
 * Backward of cq_attention_keep from dout [lq, d] (stride ldo): dq [lq, d],
 * dk, dv [lk, d] at their strides, overwritten.  dp (and pd when dropout is
 * on) are [lq, lk] scratch.
 */
typedef struct cq_attention_grads
{
	const float *dout;
	int			ldo;
	float	   *dq,
			   *dk,
			   *dv;
	int			lddq,
				lddk,
				lddv;
	float	   *dp,
			   *pd;
} cq_attention_grads;

void		cq_attention_backward(const cq_attention_args *a, const float *probs,
								  const cq_attention_grads *g);

#endif
