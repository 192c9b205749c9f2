/*
 * Backward of the blocks (block.h) over packed pairs, from what each
 * sublayer kept.  Gradients of parameters accumulate into gr->g; the stream's
 * gradient dx is turned, sublayer by sublayer in reverse, from the gradient
 * of a sublayer's output into that of its input.  Dropout masks are drawn
 * again with the forward's keys (cq_drop_packed is its own backward).
 */
#include "nn/layers/block.h"

#include <string.h>

#include "nn/ops/backward_ops.h"

static void
drop_rows(cq_block_pass *bp, float p, uint32_t s, float *x, int cols)
{
	cq_drop_packed(bp->drop, bp->pairs, bp->n_pairs, bp->target, p, s, x, cols);
}

/*
 * Start of a sublayer's backward: dx holds d/d(x_out).  The residual path's
 * share stays in dx and the branch's gradient goes to bp->tmp (before the
 * branch dropout): pre-norm both are dx; post-norm both are the gradient of
 * the norm's input x_in + branch.
 */
static void
open_backward(cq_block_pass *bp, const cq_norm *n, cq_norm *g, const cq_sublayer_keep *k,
			  float *dx)
{
	size_t		bytes = sizeof(float) * bp->rows * bp->m->cfg.d_model;

	if (!bp->m->cfg.post_norm)
	{
		memcpy(bp->tmp, dx, bytes);
		return;
	}
	memset(bp->tmp, 0, bytes);
	cq_norm_backward(n, g, k->norm_io, &k->stats, dx, bp->tmp, bp->rows);
	memcpy(dx, bp->tmp, bytes);
}

/*
 * End: din = d/d(F's input) (in gr->dh) joins dx: through the pre-norm's
 * norm, or straight (post-norm: F read x_in).
 */
static void
close_backward(cq_block_pass *bp, const cq_norm *n, cq_norm *g, const cq_sublayer_keep *k,
			   const float *din, float *dx)
{
	if (bp->m->cfg.post_norm)
	{
		for (long i = 0; i < bp->rows * bp->m->cfg.d_model; i++)
			dx[i] += din[i];
		return;
	}
	cq_norm_backward(n, g, k->x_in, &k->stats, din, dx, bp->rows);
}

/* F's input as the forward kept it: x_in (post-norm) or N(x_in) (pre-norm). */
static const float *
branch_input(const cq_block_pass *bp, const cq_sublayer_keep *k)
{
	return bp->m->cfg.post_norm ? k->x_in : k->norm_io;
}

/* The arguments the forward's attention of sentence b had (q, k, v, sizes). */
static cq_attention_args
forward_args(const cq_block_pass *bp, int layer, bool cross, const cq_attn_keep *s,
			 long qrow, long krow, int b)
{
	const cq_model_config *c = &bp->m->cfg;
	int			d = c->d_model;
	cq_attention_args a = {
		.heads = c->heads, .dh = d / c->heads, .drop = bp->drop,
		.drop_p = c->attention_dropout, .layer = layer,
	};

	if (cross)
	{
		a.q = s->q + qrow * d;
		a.k = s->kv + krow * 2 * d;
		a.v = a.k + d;
		a.ldq = d;
		a.ldk = a.ldv = 2 * d;
		a.lq = cq_side_positions(&bp->pairs[b], true);
		a.lk = cq_side_positions(&bp->pairs[b], false);
		a.drop_kind = CQ_DROP_DEC_CROSS_ATTN;
		return a;
	}
	a.q = s->q + qrow * 3 * d;
	a.k = a.q + d;
	a.v = a.q + 2 * d;
	a.ldq = a.ldk = a.ldv = 3 * d;
	a.lq = a.lk = cq_side_positions(&bp->pairs[b], bp->target);
	a.causal = bp->target;
	a.drop_kind = bp->target ? CQ_DROP_DEC_SELF_ATTN : CQ_DROP_ENC_SELF_ATTN;
	return a;
}

/* From dctx: the per-sentence attention backward into dq (and dkv: cross). */
static void
attend_backward(cq_block_pass *bp, const cq_block_grads *gr, int layer, bool cross,
				const cq_attn_keep *s)
{
	int			d = bp->m->cfg.d_model;
	long		qrow = 0,
				krow = 0,
				poff = 0;
	long		ldq = cross ? d : 3 * d;

	for (int b = 0; b < bp->n_pairs; b++)
	{
		cq_attention_args a = forward_args(bp, layer, cross, s, qrow, krow, b);
		float	   *dq = gr->dq + qrow * ldq,
				   *dk = cross ? gr->dkv + krow * 2 * d : dq + d;
		cq_attention_grads g = {
			.dout = gr->dctx + qrow * d, .ldo = d,
			.dq = dq, .dk = dk, .dv = dk + d,
			.lddq = (int) ldq, .lddk = cross ? 2 * d : 3 * d, .lddv = cross ? 2 * d : 3 * d,
			.dp = gr->dp, .pd = bp->pd,
		};

		bp->drop->pair_key = bp->pairs[b].key;
		cq_attention_backward(&a, s->probs + poff, &g);
		qrow += a.lq;
		krow += a.lk;
		poff += (long) a.heads * a.lq * a.lk;
	}
}

/* dx (gradient of the sublayer's output on entry) becomes that of its input. */
static void
attention_backward(cq_block_pass *bp, const cq_block_grads *gr, int layer, bool cross,
				   const cq_attn_keep *s, float *dx)
{
	const cq_model_config *c = &bp->m->cfg;
	int			d = c->d_model;
	long		rows = bp->rows;
	const cq_encoder_layer *E = bp->target ? NULL : &bp->m->enc[layer];
	const cq_decoder_layer *D = bp->target ? &bp->m->dec[layer] : NULL;
	cq_encoder_layer *GE = bp->target ? NULL : &gr->g->enc[layer];
	cq_decoder_layer *GD = bp->target ? &gr->g->dec[layer] : NULL;
	const cq_norm *n = cross ? &D->cross_ln : (D ? &D->self_ln : &E->attn_ln);
	cq_norm    *gn = cross ? &GD->cross_ln : (GD ? &GD->self_ln : &GE->attn_ln);
	const cq_linear *in = cross ? &D->cross_q : (D ? &D->self_qkv : &E->qkv),
			   *out = cross ? &D->cross_out : (D ? &D->self_out : &E->attn_out);
	cq_linear  *gin = cross ? &GD->cross_q : (GD ? &GD->self_qkv : &GE->qkv),
			   *gout = cross ? &GD->cross_out : (GD ? &GD->self_out : &GE->attn_out);
	uint32_t	resid = cross ? CQ_DROP_DEC_CROSS_RESID
		: (bp->target ? CQ_DROP_DEC_SELF_RESID : CQ_DROP_ENC_SELF_RESID);

	open_backward(bp, n, gn, &s->io, dx);
	drop_rows(bp, c->dropout, cq_dropout_site(resid, layer, 0), bp->tmp, d);
	cq_linear_backward(out, gout, s->ctx, d, bp->tmp, d, gr->dctx, d, 0.0f, rows);
	attend_backward(bp, gr, layer, cross, s);
	if (cross)
		cq_linear_backward(&D->cross_kv, &GD->cross_kv, bp->memory, d, gr->dkv, 2 * d,
						   gr->d_memory, d, 1.0f, bp->memory_rows);
	cq_linear_backward(in, gin, branch_input(bp, &s->io), d, gr->dq, cross ? d : 3 * d,
					   gr->dh, d, 0.0f, rows);
	close_backward(bp, n, gn, &s->io, gr->dh, dx);
}

static void
ffn_backward(cq_block_pass *bp, const cq_block_grads *gr, int layer, const cq_ffn_keep *s,
			 float *dx)
{
	const cq_model_config *c = &bp->m->cfg;
	int			d = c->d_model,
				f = c->ffn_dim;
	long		rows = bp->rows;
	const cq_norm *n = bp->target ? &bp->m->dec[layer].ffn_ln : &bp->m->enc[layer].ffn_ln;
	const cq_linear *fc1 = bp->target ? &bp->m->dec[layer].fc1 : &bp->m->enc[layer].fc1,
			   *fc2 = bp->target ? &bp->m->dec[layer].fc2 : &bp->m->enc[layer].fc2;
	cq_norm    *gn = bp->target ? &gr->g->dec[layer].ffn_ln : &gr->g->enc[layer].ffn_ln;
	cq_linear  *g1 = bp->target ? &gr->g->dec[layer].fc1 : &gr->g->enc[layer].fc1,
			   *g2 = bp->target ? &gr->g->dec[layer].fc2 : &gr->g->enc[layer].fc2;

	open_backward(bp, n, gn, &s->io, dx);
	drop_rows(bp, c->dropout, cq_dropout_site(bp->target ? CQ_DROP_DEC_FFN_RESID
											  : CQ_DROP_ENC_FFN_RESID, layer, 0),
			  bp->tmp, d);
	cq_linear_backward(fc2, g2, s->a, f, bp->tmp, d, gr->du, f, 0.0f, rows);
	drop_rows(bp, c->activation_dropout,
			  cq_dropout_site(bp->target ? CQ_DROP_DEC_FFN_ACT : CQ_DROP_ENC_FFN_ACT, layer, 0),
			  gr->du, f);
	cq_activation_backward(c->activation, s->u, gr->du, rows * f);
	cq_linear_backward(fc1, g1, branch_input(bp, &s->io), d, gr->du, f, gr->dh, d, 0.0f,
					   rows);
	close_backward(bp, n, gn, &s->io, gr->dh, dx);
}

void
cq_block_stack_backward(cq_block_pass *bp, const cq_block_grads *gr, float *dx,
						cq_layer_keep *keep)
{
	const cq_model_config *c = &bp->m->cfg;
	int			n = bp->target ? c->decoder_layers : c->encoder_layers;

	for (int i = n - 1; i >= 0; i--)
	{
		ffn_backward(bp, gr, i, &keep[i].ffn, dx);
		if (bp->target)
			attention_backward(bp, gr, i, true, &keep[i].cross, dx);
		attention_backward(bp, gr, i, false, &keep[i].self, dx);
	}
}
