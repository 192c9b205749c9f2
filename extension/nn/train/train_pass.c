/*
 * The training pass (train_pass.h): forward keeping activations, the
 * label-smoothed loss with the output projection in row blocks, backward.
 */
#include "nn/train/train_pass.h"

#include <math.h>
#include <string.h>

#include "nn/ops/backward_ops.h"
#include "nn/ops/blas.h"
#include "nn/ops/loss.h"
#include "nn/layers/packed.h"

/* What one attention sublayer keeps; self: q = qkv [N, 3d], kv NULL. */
typedef struct attn_save
{
	float	   *x_in,			/* [N, d] residual stream entering */
			   *mean,
			   *rstd,			/* [N] layer-norm statistics */
			   *h,				/* [N, d] layer-norm output */
			   *q,				/* self [N, 3d]; cross [Nt, d] */
			   *kv,				/* cross [Ns, 2d] */
			   *probs,			/* per pair, per head: [lq, lk] softmax */
			   *ctx;			/* [N, d] heads concatenated */
} attn_save;

typedef struct ffn_save
{
	float	   *x_in,
			   *mean,
			   *rstd,
			   *h,
			   *u,				/* [N, F] before the activation */
			   *a;				/* [N, F] after activation and dropout */
} ffn_save;

typedef struct layer_save
{
	attn_save	self,
				cross;
	ffn_save	ffn;
} layer_save;

typedef struct pass
{
	const cq_model *m;
	cq_model   *g;
	const cq_pair *pairs;
	int			n;
	cq_dropout_stream drop;
	long		ns,
				nt;
	int			d,
				f,
				heads,
				hd;
	layer_save *enc,
			   *dec;
	float	   *enc_in,			/* [Ns, d] into the final layer norm */
			   *enc_mean,
			   *enc_rstd,
			   *enc_out,		/* [Ns, d] encoder output */
			   *dec_in,
			   *dec_mean,
			   *dec_rstd,
			   *dec_h;			/* [Nt, d] final decoder layer norm */
	float	   *tmp,			/* [N, d] a branch / its gradient */
			   *dx_enc,			/* [Ns, d] gradient of the encoder stream */
			   *dx_dec,			/* [Nt, d] */
			   *d_enc_out,		/* [Ns, d] */
			   *dh,				/* [N, d] */
			   *dq,				/* [N, 3d] */
			   *dkv,			/* [Ns, 2d] */
			   *dctx,			/* [N, d] */
			   *du,				/* [N, F] */
			   *pd,				/* [L, L] dropped probabilities */
			   *dp,				/* [L, L] their gradient */
			   *logits;			/* [R, V] */
	long		rblock;
} pass;

/* Carves 64-byte aligned pieces from base (or only counts when base is NULL). */
typedef struct carver
{
	char	   *base;
	size_t		off;
} carver;

static void *
take(carver *c, size_t bytes)
{
	void	   *p = c->base ? c->base + c->off : NULL;

	c->off += (bytes + 63) / 64 * 64;
	return p;
}

static float *
takef(carver *c, long floats)
{
	return take(c, sizeof(float) * (size_t) floats);
}

static void
carve_attn(carver *cv, attn_save *s, long nq, long nk, int d, long probs, bool cross)
{
	s->x_in = takef(cv, nq * d);
	s->mean = takef(cv, nq);
	s->rstd = takef(cv, nq);
	s->h = takef(cv, nq * d);
	s->q = takef(cv, nq * (cross ? d : 3 * d));
	s->kv = cross ? takef(cv, nk * 2 * d) : NULL;
	s->probs = takef(cv, probs);
	s->ctx = takef(cv, nq * d);
}

static void
carve_ffn(carver *cv, ffn_save *s, long rows, int d, int f)
{
	s->x_in = takef(cv, rows * d);
	s->mean = takef(cv, rows);
	s->rstd = takef(cv, rows);
	s->h = takef(cv, rows * d);
	s->u = takef(cv, rows * f);
	s->a = takef(cv, rows * f);
}

/* Lays the workspace out (base NULL: only sizes it); returns its bytes. */
static size_t
carve(const cq_model_config *c, const cq_pair *pairs, int n, char *base, pass *p)
{
	pass		unused,
			   *w = p ? p : &unused;
	carver		cv = {base, 0};
	long		ns = 0,
				nt = 0,
				s2 = 0,
				t2 = 0,
				x2 = 0,
				l = 0,
				d = c->d_model,
				f = c->ffn_dim;

	for (int b = 0; b < n; b++)
	{
		long		ls = cq_side_positions(&pairs[b], false),
					lt = cq_side_positions(&pairs[b], true);

		ns += ls;
		nt += lt;
		s2 += ls * ls;
		t2 += lt * lt;
		x2 += lt * ls;
		l = ls > l ? ls : l;
		l = lt > l ? lt : l;
	}
	long		nmax = ns > nt ? ns : nt;

	if (base)
		cv.off = 64 - ((uintptr_t) base & 63);
	w->enc = take(&cv, sizeof(layer_save) * c->encoder_layers);
	w->dec = take(&cv, sizeof(layer_save) * c->decoder_layers);
	for (int i = 0; i < c->encoder_layers; i++)
	{
		layer_save	dummy,
				   *L = base ? &w->enc[i] : &dummy;

		carve_attn(&cv, &L->self, ns, ns, d, c->heads * s2, false);
		carve_ffn(&cv, &L->ffn, ns, d, f);
	}
	for (int i = 0; i < c->decoder_layers; i++)
	{
		layer_save	dummy,
				   *L = base ? &w->dec[i] : &dummy;

		carve_attn(&cv, &L->self, nt, nt, d, c->heads * t2, false);
		carve_attn(&cv, &L->cross, nt, ns, d, c->heads * x2, true);
		carve_ffn(&cv, &L->ffn, nt, d, f);
	}
	w->enc_in = takef(&cv, ns * d);
	w->enc_mean = takef(&cv, ns);
	w->enc_rstd = takef(&cv, ns);
	w->enc_out = takef(&cv, ns * d);
	w->dec_in = takef(&cv, nt * d);
	w->dec_mean = takef(&cv, nt);
	w->dec_rstd = takef(&cv, nt);
	w->dec_h = takef(&cv, nt * d);
	w->tmp = takef(&cv, nmax * d);
	w->dx_enc = takef(&cv, ns * d);
	w->dx_dec = takef(&cv, nt * d);
	w->d_enc_out = takef(&cv, ns * d);
	w->dh = takef(&cv, nmax * d);
	w->dq = takef(&cv, nmax * 3 * d);
	w->dkv = takef(&cv, ns * 2 * d);
	w->dctx = takef(&cv, nmax * d);
	w->du = takef(&cv, nmax * f);
	w->pd = takef(&cv, l * l);
	w->dp = takef(&cv, l * l);
	w->rblock = cq_logit_block_rows(c, nt);
	w->logits = takef(&cv, w->rblock * c->tgt_vocab_size);
	w->ns = ns;
	w->nt = nt;
	return cv.off + 64;
}

size_t
cq_train_pass_workspace_bytes(const cq_model_config *cfg, const cq_pair *pairs, int n)
{
	return carve(cfg, pairs, n, NULL, NULL);
}

/* ---- dropout ------------------------------------------------------------- */

/* Inverted dropout on each row of one side's packed rows; also its own backward. */
static void
drop_rows(pass *p, bool target, float prob, uint32_t site, float *x, int cols)
{
	cq_drop_packed(&p->drop, p->pairs, p->n, target, prob, site, x, cols);
}

static uint32_t
site(cq_dropout_kind k, int layer)
{
	return cq_dropout_site(k, layer, 0);
}

/* ---- embeddings ---------------------------------------------------------- */

/* x = Drop(E[token] sqrt(d) + position) */
static void
embed_fwd(pass *p, bool target, float *x)
{
	cq_embed_packed(p->m, p->pairs, p->n, target, x);
	drop_rows(p, target, p->m->cfg.dropout,
			  site(target ? CQ_DROP_DEC_EMBED : CQ_DROP_ENC_EMBED, 0), x, p->d);
}

/* dE[token] += sqrt(d) dx, dPos[t] += dx (learned positions); dx is consumed. */
static void
embed_bwd(pass *p, bool target, float *dx)
{
	cq_model   *g = p->g;
	float	   *table = target ? g->tgt_embed : g->src_embed,
			   *pos = p->m->sinusoid ? NULL : (target ? g->tgt_pos : g->src_pos);
	float		scale = sqrtf((float) p->d);
	long		row = 0;

	drop_rows(p, target, p->m->cfg.dropout,
			  site(target ? CQ_DROP_DEC_EMBED : CQ_DROP_ENC_EMBED, 0), dx, p->d);
	for (int b = 0; b < p->n; b++)
		for (int t = 0; t < cq_side_positions(&p->pairs[b], target); t++, row++)
		{
			float	   *e = table + (long) cq_side_token(&p->pairs[b], target, t) * p->d;
			const float *dr = dx + row * p->d;

			for (int i = 0; i < p->d; i++)
				e[i] += dr[i] * scale;
			if (pos)
				for (int i = 0; i < p->d; i++)
					pos[(long) t * p->d + i] += dr[i];
		}
}

/* ---- attention of one pair, all heads ------------------------------------ */

typedef struct heads
{
	const float *q,
			   *k,
			   *v;
	int			ldq,
				ldk,
				ldv;
	int			lq,
				lk;
	bool		causal;
	float	   *probs;			/* [heads, lq, lk] */
	uint32_t	kind;
	int			layer;
	float		drop_p;
} heads;

/* probabilities after attention dropout, for head h: probs or a copy in pd */
static const float *
dropped(pass *p, const heads *a, int h)
{
	const float *P = a->probs + (long) h * a->lq * a->lk;

	if (!p->drop.on || a->drop_p <= 0.0f)
		return P;
	memcpy(p->pd, P, sizeof(float) * a->lq * a->lk);
	for (int i = 0; i < a->lq; i++)
		cq_dropout_apply(&p->drop, a->drop_p, cq_dropout_site(a->kind, a->layer, h),
						 (uint32_t) i, p->pd + (long) i * a->lk, a->lk);
	return p->pd;
}

static void
heads_fwd(pass *p, const heads *a, float *out, int ldo)
{
	float		scale = 1.0f / sqrtf((float) p->hd);

	for (int h = 0; h < p->heads; h++)
	{
		int			col = h * p->hd;
		float	   *P = a->probs + (long) h * a->lq * a->lk;

		cq_sgemm(false, true, a->lq, a->lk, p->hd, scale, a->q + col, a->ldq,
				 a->k + col, a->ldk, 0.0f, P, a->lk);
		cq_softmax_rows(P, a->lq, a->lk, a->lk, a->causal);
		cq_sgemm(false, false, a->lq, p->hd, a->lk, 1.0f, dropped(p, a, h), a->lk,
				 a->v + col, a->ldv, 0.0f, out + col, ldo);
	}
}

/* From dout [lq, d]: dq [lq, d], dk, dv [lk, d] (strides as given), overwritten. */
static void
heads_bwd(pass *p, const heads *a, const float *dout, int ldo, float *dq, int lddq,
		  float *dk, int lddk, float *dv, int lddv)
{
	float		scale = 1.0f / sqrtf((float) p->hd);

	for (int h = 0; h < p->heads; h++)
	{
		int			col = h * p->hd;
		const float *P = a->probs + (long) h * a->lq * a->lk;

		/* dV = P'^T dO; dP' = dO V^T; dP = mask dP' */
		cq_sgemm(true, false, a->lk, p->hd, a->lq, 1.0f, dropped(p, a, h), a->lk,
				 dout + col, ldo, 0.0f, dv + col, lddv);
		cq_sgemm(false, true, a->lq, a->lk, p->hd, 1.0f, dout + col, ldo,
				 a->v + col, a->ldv, 0.0f, p->dp, a->lk);
		if (p->drop.on && a->drop_p > 0.0f)
			for (int i = 0; i < a->lq; i++)
				cq_dropout_apply(&p->drop, a->drop_p, cq_dropout_site(a->kind, a->layer, h),
								 (uint32_t) i, p->dp + (long) i * a->lk, a->lk);
		cq_softmax_backward_rows(P, p->dp, a->lq, a->lk, scale);
		/* dQ = dS K, dK = dS^T Q */
		cq_sgemm(false, false, a->lq, p->hd, a->lk, 1.0f, p->dp, a->lk,
				 a->k + col, a->ldk, 0.0f, dq + col, lddq);
		cq_sgemm(true, false, a->lk, p->hd, a->lq, 1.0f, p->dp, a->lk,
				 a->q + col, a->ldq, 0.0f, dk + col, lddk);
	}
}

/* ---- sublayers ----------------------------------------------------------- */

static void
add_into(float *out, const float *a, const float *b, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = a[i] + b[i];
}

/* x_out = x_in + Drop(SelfAttn(LN(x_in))); decoder: causal. */
static void
self_fwd(pass *p, attn_save *s, float *x_out, bool target, const cq_layer_norm *ln,
		 const cq_linear *qkv, const cq_linear *out, int layer)
{
	const cq_model_config *c = &p->m->cfg;
	int			d = p->d;
	long		rows = target ? p->nt : p->ns,
				row = 0,
				poff = 0;

	cq_layer_norm_fwd_save(s->x_in, s->h, rows, d, ln->w, ln->b, CQ_LAYERNORM_EPS,
						   s->mean, s->rstd);
	cq_linear_rows(qkv, s->h, d, s->q, 3 * d, rows);
	for (int b = 0; b < p->n; b++)
	{
		int			len = cq_side_positions(&p->pairs[b], target);
		heads		a = {s->q + row * 3 * d, s->q + row * 3 * d + d, s->q + row * 3 * d + 2 * d,
			3 * d, 3 * d, 3 * d, len, len, target, s->probs + poff,
			target ? CQ_DROP_DEC_SELF_ATTN : CQ_DROP_ENC_SELF_ATTN, layer,
		c->attention_dropout};

		p->drop.pair_key = p->pairs[b].key;
		heads_fwd(p, &a, s->ctx + row * d, d);
		row += len;
		poff += (long) p->heads * len * len;
	}
	cq_linear_rows(out, s->ctx, d, p->tmp, d, rows);
	drop_rows(p, target, c->dropout,
			  site(target ? CQ_DROP_DEC_SELF_RESID : CQ_DROP_ENC_SELF_RESID, layer), p->tmp, d);
	add_into(x_out, s->x_in, p->tmp, rows * d);
}

/* dx (gradient of x_out on entry) becomes the gradient of x_in. */
static void
self_bwd(pass *p, attn_save *s, float *dx, bool target, const cq_layer_norm *ln,
		 cq_layer_norm *gln, const cq_linear *qkv, cq_linear *gqkv,
		 const cq_linear *out, cq_linear *gout, int layer)
{
	const cq_model_config *c = &p->m->cfg;
	int			d = p->d;
	long		rows = target ? p->nt : p->ns,
				row = 0,
				poff = 0;

	memcpy(p->tmp, dx, sizeof(float) * rows * d);
	drop_rows(p, target, c->dropout,
			  site(target ? CQ_DROP_DEC_SELF_RESID : CQ_DROP_ENC_SELF_RESID, layer), p->tmp, d);
	cq_linear_backward(out, gout, s->ctx, d, p->tmp, d, p->dctx, d, 0.0f, rows);
	for (int b = 0; b < p->n; b++)
	{
		int			len = cq_side_positions(&p->pairs[b], target);
		const float *q = s->q + row * 3 * d;
		heads		a = {q, q + d, q + 2 * d, 3 * d, 3 * d, 3 * d, len, len, target,
			s->probs + poff, target ? CQ_DROP_DEC_SELF_ATTN : CQ_DROP_ENC_SELF_ATTN, layer,
		c->attention_dropout};
		float	   *dq = p->dq + row * 3 * d;

		p->drop.pair_key = p->pairs[b].key;
		heads_bwd(p, &a, p->dctx + row * d, d, dq, 3 * d, dq + d, 3 * d, dq + 2 * d, 3 * d);
		row += len;
		poff += (long) p->heads * len * len;
	}
	cq_linear_backward(qkv, gqkv, s->h, d, p->dq, 3 * d, p->dh, d, 0.0f, rows);
	cq_layer_norm_backward(s->x_in, s->mean, s->rstd, ln->w, p->dh, dx, gln->w, gln->b,
						   rows, d);
}

/* y_out = y_in + Drop(CrossAttn(LN(y_in), encoder output)) */
static void
cross_fwd(pass *p, attn_save *s, float *y_out, const cq_decoder_layer *L, int layer)
{
	const cq_model_config *c = &p->m->cfg;
	int			d = p->d;
	long		qrow = 0,
				krow = 0,
				poff = 0;

	cq_layer_norm_fwd_save(s->x_in, s->h, p->nt, d, L->cross_ln.w, L->cross_ln.b,
						   CQ_LAYERNORM_EPS, s->mean, s->rstd);
	cq_linear_rows(&L->cross_q, s->h, d, s->q, d, p->nt);
	cq_linear_rows(&L->cross_kv, p->enc_out, d, s->kv, 2 * d, p->ns);
	for (int b = 0; b < p->n; b++)
	{
		int			lq = cq_side_positions(&p->pairs[b], true),
					lk = cq_side_positions(&p->pairs[b], false);
		heads		a = {s->q + qrow * d, s->kv + krow * 2 * d, s->kv + krow * 2 * d + d,
			d, 2 * d, 2 * d, lq, lk, false, s->probs + poff, CQ_DROP_DEC_CROSS_ATTN, layer,
		c->attention_dropout};

		p->drop.pair_key = p->pairs[b].key;
		heads_fwd(p, &a, s->ctx + qrow * d, d);
		qrow += lq;
		krow += lk;
		poff += (long) p->heads * lq * lk;
	}
	cq_linear_rows(&L->cross_out, s->ctx, d, p->tmp, d, p->nt);
	drop_rows(p, true, c->dropout, site(CQ_DROP_DEC_CROSS_RESID, layer), p->tmp, d);
	add_into(y_out, s->x_in, p->tmp, p->nt * d);
}

static void
cross_bwd(pass *p, attn_save *s, float *dy, const cq_decoder_layer *L,
		  cq_decoder_layer *G, int layer)
{
	const cq_model_config *c = &p->m->cfg;
	int			d = p->d;
	long		qrow = 0,
				krow = 0,
				poff = 0;

	memcpy(p->tmp, dy, sizeof(float) * p->nt * d);
	drop_rows(p, true, c->dropout, site(CQ_DROP_DEC_CROSS_RESID, layer), p->tmp, d);
	cq_linear_backward(&L->cross_out, &G->cross_out, s->ctx, d, p->tmp, d, p->dctx, d,
					   0.0f, p->nt);
	for (int b = 0; b < p->n; b++)
	{
		int			lq = cq_side_positions(&p->pairs[b], true),
					lk = cq_side_positions(&p->pairs[b], false);
		heads		a = {s->q + qrow * d, s->kv + krow * 2 * d, s->kv + krow * 2 * d + d,
			d, 2 * d, 2 * d, lq, lk, false, s->probs + poff, CQ_DROP_DEC_CROSS_ATTN, layer,
		c->attention_dropout};
		float	   *dkv = p->dkv + krow * 2 * d;

		p->drop.pair_key = p->pairs[b].key;
		heads_bwd(p, &a, p->dctx + qrow * d, d, p->dq + qrow * d, d, dkv, 2 * d,
				  dkv + d, 2 * d);
		qrow += lq;
		krow += lk;
		poff += (long) p->heads * lq * lk;
	}
	cq_linear_backward(&L->cross_kv, &G->cross_kv, p->enc_out, d, p->dkv, 2 * d,
					   p->d_enc_out, d, 1.0f, p->ns);
	cq_linear_backward(&L->cross_q, &G->cross_q, s->h, d, p->dq, d, p->dh, d, 0.0f, p->nt);
	cq_layer_norm_backward(s->x_in, s->mean, s->rstd, L->cross_ln.w, p->dh, dy,
						   G->cross_ln.w, G->cross_ln.b, p->nt, d);
}

/* x_out = x_in + Drop(fc2(Drop(act(fc1(LN(x_in)))))) */
static void
ffn_fwd(pass *p, ffn_save *s, float *x_out, bool target, const cq_layer_norm *ln,
		const cq_linear *fc1, const cq_linear *fc2, int layer)
{
	const cq_model_config *c = &p->m->cfg;
	int			d = p->d,
				f = p->f;
	long		rows = target ? p->nt : p->ns;

	cq_layer_norm_fwd_save(s->x_in, s->h, rows, d, ln->w, ln->b, CQ_LAYERNORM_EPS,
						   s->mean, s->rstd);
	cq_linear_rows(fc1, s->h, d, s->u, f, rows);
	memcpy(s->a, s->u, sizeof(float) * rows * f);
	if (c->activation == CQ_ACT_GELU)
		cq_gelu_erf(s->a, rows * f);
	else
		cq_relu(s->a, rows * f);
	drop_rows(p, target, c->activation_dropout,
			  site(target ? CQ_DROP_DEC_FFN_ACT : CQ_DROP_ENC_FFN_ACT, layer), s->a, f);
	cq_linear_rows(fc2, s->a, f, p->tmp, d, rows);
	drop_rows(p, target, c->dropout,
			  site(target ? CQ_DROP_DEC_FFN_RESID : CQ_DROP_ENC_FFN_RESID, layer), p->tmp, d);
	add_into(x_out, s->x_in, p->tmp, rows * d);
}

static void
ffn_bwd(pass *p, ffn_save *s, float *dx, bool target, const cq_layer_norm *ln,
		cq_layer_norm *gln, const cq_linear *fc1, cq_linear *g1,
		const cq_linear *fc2, cq_linear *g2, int layer)
{
	const cq_model_config *c = &p->m->cfg;
	int			d = p->d,
				f = p->f;
	long		rows = target ? p->nt : p->ns;

	memcpy(p->tmp, dx, sizeof(float) * rows * d);
	drop_rows(p, target, c->dropout,
			  site(target ? CQ_DROP_DEC_FFN_RESID : CQ_DROP_ENC_FFN_RESID, layer), p->tmp, d);
	cq_linear_backward(fc2, g2, s->a, f, p->tmp, d, p->du, f, 0.0f, rows);
	drop_rows(p, target, c->activation_dropout,
			  site(target ? CQ_DROP_DEC_FFN_ACT : CQ_DROP_ENC_FFN_ACT, layer), p->du, f);
	if (c->activation == CQ_ACT_GELU)
		cq_gelu_erf_backward(s->u, p->du, rows * f);
	else
		cq_relu_backward(s->u, p->du, rows * f);
	cq_linear_backward(fc1, g1, s->h, d, p->du, f, p->dh, d, 0.0f, rows);
	cq_layer_norm_backward(s->x_in, s->mean, s->rstd, ln->w, p->dh, dx, gln->w, gln->b,
						   rows, d);
}

/* ---- the whole model ----------------------------------------------------- */

static void
forward(pass *p)
{
	const cq_model *m = p->m;
	int			E = m->cfg.encoder_layers,
				D = m->cfg.decoder_layers;

	embed_fwd(p, false, E ? p->enc[0].self.x_in : p->enc_in);
	for (int i = 0; i < E; i++)
	{
		layer_save *S = &p->enc[i];
		const cq_encoder_layer *L = &m->enc[i];

		self_fwd(p, &S->self, S->ffn.x_in, false, &L->attn_ln, &L->qkv, &L->attn_out, i);
		ffn_fwd(p, &S->ffn, i + 1 < E ? p->enc[i + 1].self.x_in : p->enc_in, false,
				&L->ffn_ln, &L->fc1, &L->fc2, i);
	}
	cq_layer_norm_fwd_save(p->enc_in, p->enc_out, p->ns, p->d, m->enc_ln.w, m->enc_ln.b,
						   CQ_LAYERNORM_EPS, p->enc_mean, p->enc_rstd);
	embed_fwd(p, true, D ? p->dec[0].self.x_in : p->dec_in);
	for (int i = 0; i < D; i++)
	{
		layer_save *S = &p->dec[i];
		const cq_decoder_layer *L = &m->dec[i];

		self_fwd(p, &S->self, S->cross.x_in, true, &L->self_ln, &L->self_qkv,
				 &L->self_out, i);
		cross_fwd(p, &S->cross, S->ffn.x_in, L, i);
		ffn_fwd(p, &S->ffn, i + 1 < D ? p->dec[i + 1].self.x_in : p->dec_in, true,
				&L->ffn_ln, &L->fc1, &L->fc2, i);
	}
	cq_layer_norm_fwd_save(p->dec_in, p->dec_h, p->nt, p->d, m->dec_ln.w, m->dec_ln.b,
						   CQ_LAYERNORM_EPS, p->dec_mean, p->dec_rstd);
}

/* Loss over logit blocks; leaves d(loss)/d(dec_h) in p->dh. */
static void
loss_and_output_bwd(pass *p, float eps, cq_train_pass_out *out)
{
	const cq_model *m = p->m;
	int			v = m->cfg.tgt_vocab_size,
				d = p->d,
				b = 0,
				t = 0;

	out->loss = out->nll = 0.0;
	out->tokens = p->nt;
	for (long r0 = 0; r0 < p->nt; r0 += p->rblock)
	{
		int			rows = p->nt - r0 < p->rblock ? (int) (p->nt - r0) : (int) p->rblock;
		const float *h = p->dec_h + r0 * d;

		cq_sgemm(false, true, rows, v, d, 1.0f, h, d, m->out_proj, d, 0.0f, p->logits, v);
		for (int r = 0; r < rows; r++)
		{
			const cq_pair *pr = &p->pairs[b];
			int32_t		gold = t < pr->tgt_len ? pr->tgt[t] : CQ_EOS_ID;
			double		nll;

			out->loss += cq_ls_xent_row(p->logits + (long) r * v, v, gold, eps, &nll);
			out->nll += nll;
			if (++t == pr->tgt_len + 1)
			{
				b++;
				t = 0;
			}
		}
		cq_sgemm(true, false, v, d, rows, 1.0f, p->logits, v, h, d, 1.0f, p->g->out_proj, d);
		cq_sgemm(false, false, rows, d, v, 1.0f, p->logits, v, m->out_proj, d, 0.0f,
				 p->dh + r0 * d, d);
	}
}

static void
backward(pass *p)
{
	const cq_model *m = p->m;
	cq_model   *g = p->g;
	int			E = m->cfg.encoder_layers,
				D = m->cfg.decoder_layers,
				d = p->d;

	memset(p->dx_dec, 0, sizeof(float) * p->nt * d);
	cq_layer_norm_backward(p->dec_in, p->dec_mean, p->dec_rstd, m->dec_ln.w, p->dh,
						   p->dx_dec, g->dec_ln.w, g->dec_ln.b, p->nt, d);
	memset(p->d_enc_out, 0, sizeof(float) * p->ns * d);
	for (int i = D - 1; i >= 0; i--)
	{
		layer_save *S = &p->dec[i];
		const cq_decoder_layer *L = &m->dec[i];
		cq_decoder_layer *G = &g->dec[i];

		ffn_bwd(p, &S->ffn, p->dx_dec, true, &L->ffn_ln, &G->ffn_ln, &L->fc1, &G->fc1,
				&L->fc2, &G->fc2, i);
		cross_bwd(p, &S->cross, p->dx_dec, L, G, i);
		self_bwd(p, &S->self, p->dx_dec, true, &L->self_ln, &G->self_ln, &L->self_qkv,
				 &G->self_qkv, &L->self_out, &G->self_out, i);
	}
	embed_bwd(p, true, p->dx_dec);
	memset(p->dx_enc, 0, sizeof(float) * p->ns * d);
	cq_layer_norm_backward(p->enc_in, p->enc_mean, p->enc_rstd, m->enc_ln.w, p->d_enc_out,
						   p->dx_enc, g->enc_ln.w, g->enc_ln.b, p->ns, d);
	for (int i = E - 1; i >= 0; i--)
	{
		layer_save *S = &p->enc[i];
		const cq_encoder_layer *L = &m->enc[i];
		cq_encoder_layer *G = &g->enc[i];

		ffn_bwd(p, &S->ffn, p->dx_enc, false, &L->ffn_ln, &G->ffn_ln, &L->fc1, &G->fc1,
				&L->fc2, &G->fc2, i);
		self_bwd(p, &S->self, p->dx_enc, false, &L->attn_ln, &G->attn_ln, &L->qkv,
				 &G->qkv, &L->attn_out, &G->attn_out, i);
	}
	embed_bwd(p, false, p->dx_enc);
}

cq_nn_status
cq_train_pass(const cq_model *m, cq_model *grad, const cq_pair *pairs, int n,
			  const cq_train_dropout *dropout, float eps, void *ws, size_t ws_bytes,
			  cq_train_pass_out *out, cq_nn_error *err)
{
	cq_batch_shape shape;
	cq_nn_status s = cq_batch_shape_of(m, pairs, n, &shape, err);
	pass		p = {m, grad, pairs, n};
	size_t		need;

	if (s)
		return s;
	if (!grad || !cq_config_equal(&m->cfg, &grad->cfg))
		return cq_nn_fail(err, CQ_NN_EINVAL, "the gradient model does not match the model");
	need = cq_train_pass_workspace_bytes(&m->cfg, pairs, n);
	if (!ws || ws_bytes < need)
		return cq_nn_fail(err, CQ_NN_EWORKSPACE,
						  "workspace of %zu bytes is too small, the batch needs %zu",
						  ws_bytes, need);
	carve(&m->cfg, pairs, n, ws, &p);
	p.d = m->cfg.d_model;
	p.f = m->cfg.ffn_dim;
	p.heads = m->cfg.heads;
	p.hd = p.d / p.heads;
	if (dropout && dropout->on)
		p.drop = (cq_dropout_stream) {true, dropout->seed, dropout->pass, 0};
	forward(&p);
	loss_and_output_bwd(&p, eps, out);
	backward(&p);
	return CQ_NN_OK;
}
