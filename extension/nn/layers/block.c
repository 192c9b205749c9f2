/*
 * The encoder and decoder blocks (block.h), and attention over packed pairs.
 */
#include "nn/layers/block.h"

#include <string.h>

#include "nn/ops/backward_ops.h"

/* The dropout site of a sublayer on this pass's side. */
static uint32_t
site(const cq_block_pass *bp, cq_dropout_kind enc, cq_dropout_kind dec, int layer)
{
	return cq_dropout_site(bp->target ? dec : enc, layer, 0);
}

/* Inverted dropout over the pass's rows of x[rows, cols] (contiguous). */
static void
drop_rows(cq_block_pass *bp, float p, uint32_t s, float *x, int cols)
{
	if (bp->drop)
		cq_drop_packed(bp->drop, bp->pairs, bp->n_pairs, bp->target, p, s, x, cols);
}

/* x_out = x_in + branch over the pass's rows (x_out may be x_in). */
static void
residual(const cq_block_pass *bp, float *x_out, const float *x_in, const float *branch)
{
	int			d = bp->m->cfg.d_model;

	for (long r = 0; r < bp->rows; r++)
		for (int i = 0; i < d; i++)
			x_out[r * bp->ld_d + i] = x_in[r * bp->ld_d + i] + branch[r * bp->ld_d + i];
}

/* y = N(x) over the pass's rows: keeping the statistics in training (k). */
static void
norm_rows(const cq_block_pass *bp, const cq_norm *n, const float *x, float *y,
		  const cq_sublayer_keep *k)
{
	if (k)
		cq_norm_forward_keep(n, x, y, bp->rows, &k->stats);
	else
		cq_norm_forward(n, x, y, bp->rows, bp->ld_d);
}

/*
 * The input of a sublayer's function F: N(x_in) in h (pre-norm), or x_in
 * itself (post-norm).
 */
static const float *
branch_input(cq_block_pass *bp, const cq_norm *n, const float *x_in, float *h,
			 const cq_sublayer_keep *k)
{
	if (bp->m->cfg.post_norm)
		return x_in;
	norm_rows(bp, n, x_in, h, k);
	return h;
}

/* x_out from x_in and the dropped branch: x_in + b (pre), N(x_in + b) (post). */
static void
close_sublayer(cq_block_pass *bp, const cq_norm *n, const float *x_in,
			   const float *branch, float *x_out, const cq_sublayer_keep *k)
{
	float	   *sum = k ? k->norm_io : x_out;

	if (!bp->m->cfg.post_norm)
	{
		residual(bp, x_out, x_in, branch);
		return;
	}
	residual(bp, sum, x_in, branch);
	norm_rows(bp, n, sum, x_out, k);
}

/* x_out = x_in + Drop(Wo Attend(Wq/kv h)) (pre) or its post-norm form. */
static void
attention_sublayer(cq_block_pass *bp, int layer, bool cross, const float *x_in,
				   float *x_out, cq_attn_keep *keep)
{
	const cq_model_config *c = &bp->m->cfg;
	const cq_encoder_layer *E = bp->target ? NULL : &bp->m->enc[layer];
	const cq_decoder_layer *D = bp->target ? &bp->m->dec[layer] : NULL;
	const cq_norm *n = cross ? &D->cross_ln : (D ? &D->self_ln : &E->attn_ln);
	const cq_linear *in = cross ? &D->cross_q : (D ? &D->self_qkv : &E->qkv),
			   *out = cross ? &D->cross_out : (D ? &D->self_out : &E->attn_out);
	const cq_sublayer_keep *k = keep ? &keep->io : NULL;
	float	   *q = keep ? keep->q : bp->qkv,
			   *ctx = keep ? keep->ctx : bp->ctx;
	long		ldq = cross ? bp->ld_d : bp->ld_qkv;
	const float *h = branch_input(bp, n, x_in, keep ? keep->io.norm_io : bp->h, k);

	cq_linear_rows(in, h, (int) bp->ld_d, q, (int) ldq, (int) bp->rows);
	(cross ? bp->cross_attend : bp->self_attend) (bp, layer, q, ldq, ctx, keep);
	cq_linear_rows(out, ctx, (int) bp->ld_d, bp->tmp, (int) bp->ld_d, (int) bp->rows);
	drop_rows(bp, c->dropout,
			  cross ? cq_dropout_site(CQ_DROP_DEC_CROSS_RESID, layer, 0)
			  : site(bp, CQ_DROP_ENC_SELF_RESID, CQ_DROP_DEC_SELF_RESID, layer),
			  bp->tmp, c->d_model);
	close_sublayer(bp, n, x_in, bp->tmp, x_out, k);
}

/* x_out = x_in + Drop(fc2(Drop(act(fc1(h))))) (pre) or its post-norm form. */
static void
ffn_sublayer(cq_block_pass *bp, int layer, const float *x_in, float *x_out,
			 cq_ffn_keep *keep)
{
	const cq_model_config *c = &bp->m->cfg;
	const cq_norm *n = bp->target ? &bp->m->dec[layer].ffn_ln : &bp->m->enc[layer].ffn_ln;
	const cq_linear *fc1 = bp->target ? &bp->m->dec[layer].fc1 : &bp->m->enc[layer].fc1,
			   *fc2 = bp->target ? &bp->m->dec[layer].fc2 : &bp->m->enc[layer].fc2;
	const cq_sublayer_keep *k = keep ? &keep->io : NULL;
	float	   *u = keep ? keep->u : bp->ffn,
			   *a = keep ? keep->a : u;
	const float *h = branch_input(bp, n, x_in, keep ? keep->io.norm_io : bp->h, k);

	cq_linear_rows(fc1, h, (int) bp->ld_d, u, (int) bp->ld_f, (int) bp->rows);
	if (a != u)
		memcpy(a, u, sizeof(float) * bp->rows * bp->ld_f);
	for (long r = 0; r < bp->rows; r++)
		cq_activation_apply(c->activation, a + r * bp->ld_f, c->ffn_dim);
	drop_rows(bp, c->activation_dropout,
			  site(bp, CQ_DROP_ENC_FFN_ACT, CQ_DROP_DEC_FFN_ACT, layer), a, c->ffn_dim);
	cq_linear_rows(fc2, a, (int) bp->ld_f, bp->tmp, (int) bp->ld_d, (int) bp->rows);
	drop_rows(bp, c->dropout, site(bp, CQ_DROP_ENC_FFN_RESID, CQ_DROP_DEC_FFN_RESID, layer),
			  bp->tmp, c->d_model);
	close_sublayer(bp, n, x_in, bp->tmp, x_out, k);
}

void
cq_encoder_block(cq_block_pass *bp, int layer, float *x_in, float *x_out,
				 cq_layer_keep *keep)
{
	float	   *mid = keep ? keep->ffn.io.x_in : x_in;

	attention_sublayer(bp, layer, false, x_in, mid, keep ? &keep->self : NULL);
	ffn_sublayer(bp, layer, mid, x_out, keep ? &keep->ffn : NULL);
}

void
cq_decoder_block(cq_block_pass *bp, int layer, float *x_in, float *x_out,
				 cq_layer_keep *keep)
{
	float	   *mid1 = keep ? keep->cross.io.x_in : x_in,
			   *mid2 = keep ? keep->ffn.io.x_in : x_in;

	attention_sublayer(bp, layer, false, x_in, mid1, keep ? &keep->self : NULL);
	attention_sublayer(bp, layer, true, mid1, mid2, keep ? &keep->cross : NULL);
	ffn_sublayer(bp, layer, mid2, x_out, keep ? &keep->ffn : NULL);
}

void
cq_block_stack(cq_block_pass *bp, float *x, cq_layer_keep *keep, float *out)
{
	const cq_model_config *c = &bp->m->cfg;
	int			n = bp->target ? c->decoder_layers : c->encoder_layers;

	for (int i = 0; i < n; i++)
	{
		float	   *in = keep ? keep[i].self.io.x_in : x,
				   *o = keep ? (i + 1 < n ? keep[i + 1].self.io.x_in : out) : x;

		if (bp->target)
			cq_decoder_block(bp, i, in, o, keep ? &keep[i] : NULL);
		else
			cq_encoder_block(bp, i, in, o, keep ? &keep[i] : NULL);
	}
}

/* ---- attention over packed pairs ----------------------------------------- */

static cq_attention_args
attention_args(const cq_block_pass *bp, cq_dropout_kind kind, int layer)
{
	const cq_model_config *c = &bp->m->cfg;

	return (cq_attention_args) {
		.heads = c->heads, .dh = c->d_model / c->heads, .scores = bp->scores,
			.drop = bp->drop, .drop_p = c->attention_dropout, .drop_kind = kind,
			.layer = layer,
	};
}

/* One sentence's attention: training keeps its probabilities at *poff. */
static void
attend_one(cq_block_pass *bp, cq_attention_args *a, uint64_t key, cq_attn_keep *keep,
		   long *poff)
{
	if (bp->drop)
		bp->drop->pair_key = key;
	if (!keep)
	{
		cq_attention(a);
		return;
	}
	cq_attention_keep(a, keep->probs + *poff, bp->pd);
	*poff += (long) a->heads * a->lq * a->lk;
}

void
cq_packed_self_attend(cq_block_pass *bp, int layer, const float *q, long ldq, float *ctx,
					  cq_attn_keep *keep)
{
	int			d = bp->m->cfg.d_model;
	long		row = 0,
				poff = 0;
	cq_attention_args a = attention_args(bp, bp->target ? CQ_DROP_DEC_SELF_ATTN
										 : CQ_DROP_ENC_SELF_ATTN, layer);

	a.ldq = a.ldk = a.ldv = (int) ldq;
	a.ldo = (int) bp->ld_d;
	a.causal = bp->target;
	for (int b = 0; b < bp->n_pairs; b++)
	{
		a.q = q + row * ldq;
		a.k = a.q + d;
		a.v = a.q + 2 * d;
		a.out = ctx + row * bp->ld_d;
		a.lq = a.lk = cq_side_positions(&bp->pairs[b], bp->target);
		attend_one(bp, &a, bp->pairs[b].key, keep, &poff);
		row += a.lq;
	}
}

void
cq_packed_cross_attend(cq_block_pass *bp, int layer, const float *q, long ldq, float *ctx,
					   cq_attn_keep *keep)
{
	int			d = bp->m->cfg.d_model;
	/* inference: the keys and values follow the queries in the qkv scratch */
	float	   *kv = keep ? keep->kv : bp->qkv + bp->rows * ldq;
	long		qrow = 0,
				krow = 0,
				poff = 0;
	cq_attention_args a = attention_args(bp, CQ_DROP_DEC_CROSS_ATTN, layer);

	cq_linear_rows(&bp->m->dec[layer].cross_kv, bp->memory, (int) bp->ld_d, kv, 2 * d,
				   (int) bp->memory_rows);
	a.ldq = (int) ldq;
	a.ldk = a.ldv = 2 * d;
	a.ldo = (int) bp->ld_d;
	for (int b = 0; b < bp->n_pairs; b++)
	{
		a.q = q + qrow * ldq;
		a.k = kv + krow * 2 * d;
		a.v = a.k + d;
		a.out = ctx + qrow * bp->ld_d;
		a.lq = cq_side_positions(&bp->pairs[b], true);
		a.lk = cq_side_positions(&bp->pairs[b], false);
		attend_one(bp, &a, bp->pairs[b].key, keep, &poff);
		qrow += a.lq;
		krow += a.lk;
	}
}
