/*
 * The training pass (train_pass.h): forward keeping activations, the
 * label-smoothed loss with the output projection in row blocks, backward.
 */
#include "nn/train/train_pass.h"

#include <math.h>
#include <string.h>

#include "common/carve.h"

#include "nn/layers/block.h"
#include "nn/ops/backward_ops.h"
#include "nn/ops/blas.h"
#include "nn/ops/loss.h"

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
				f;
	cq_layer_keep *enc,
			   *dec;
	float	   *enc_in,			/* [Ns, d] into the final norm */
			   *enc_out,		/* [Ns, d] encoder output */
			   *dec_in,
			   *dec_h;			/* [Nt, d] after the final decoder norm */
	cq_norm_stats enc_stats,	/* [Ns] the final norms' statistics */
				dec_stats;		/* [Nt] */
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
	float	   *emb_sum[2];		/* the embedding norm [source/target]: its input [N, d] */
	cq_norm_stats emb_stats[2]; /* and statistics [N] */
	long		rblock;
} pass;


/* A sublayer's input, its norm's statistics and the norm's other side. */
static void
carve_io(cq_carver *cv, cq_sublayer_keep *io, long rows, int d)
{
	io->x_in = cq_carve_floats(cv, rows * d);
	io->stats.mean = cq_carve_floats(cv, rows);
	io->stats.rstd = cq_carve_floats(cv, rows);
	io->norm_io = cq_carve_floats(cv, rows * d);
}

static void
carve_attn(cq_carver *cv, cq_attn_keep *s, long nq, long nk, int d, long probs, bool cross)
{
	carve_io(cv, &s->io, nq, d);
	s->q = cq_carve_floats(cv, nq * (cross ? d : 3 * d));
	s->kv = cross ? cq_carve_floats(cv, nk * 2 * d) : NULL;
	s->probs = cq_carve_floats(cv, probs);
	s->ctx = cq_carve_floats(cv, nq * d);
}

static void
carve_ffn(cq_carver *cv, cq_ffn_keep *s, long rows, int d, int f)
{
	carve_io(cv, &s->io, rows, d);
	s->u = cq_carve_floats(cv, rows * f);
	s->a = cq_carve_floats(cv, rows * f);
}

/*
 * What a workspace's size depends on: positions per side, the sums of
 * squared lengths (self-attention) and of their products (cross-attention),
 * the longest sentence.
 */
typedef struct pass_shape
{
	long		ns,
				nt,
				s2,
				t2,
				x2,
				l;
} pass_shape;

static pass_shape
shape_of(const cq_model_config *c, const cq_pair *pairs, int n)
{
	pass_shape	sh = {0};

	for (int b = 0; b < n; b++)
	{
		/* an encoder model's pass has no target side (encoder_forward) */
		long		ls = cq_side_positions(&pairs[b], false),
					lt = c->kind == CQ_KIND_ENCODER ? 0 : cq_side_positions(&pairs[b], true);

		sh.ns += ls;
		sh.nt += lt;
		sh.s2 += ls * ls;
		sh.t2 += lt * lt;
		sh.x2 += lt * ls;
		sh.l = ls > sh.l ? ls : sh.l;
		sh.l = lt > sh.l ? lt : sh.l;
	}
	return sh;
}

/* Lays the workspace out (base NULL: only sizes it); returns its bytes. */
static size_t
carve(const cq_model_config *c, const pass_shape *sh, char *base, pass *p)
{
	pass		unused,
			   *w = p ? p : &unused;
	cq_carver	cv = cq_carver_start(base);
	long		ns = sh->ns,
				nt = sh->nt,
				s2 = sh->s2,
				t2 = sh->t2,
				x2 = sh->x2,
				l = sh->l,
				d = c->d_model,
				f = c->ffn_dim;
	long		nmax = ns > nt ? ns : nt;

	w->enc = cq_carve(&cv, sizeof(cq_layer_keep) * c->encoder_layers);
	w->dec = cq_carve(&cv, sizeof(cq_layer_keep) * c->decoder_layers);
	for (int i = 0; i < c->encoder_layers; i++)
	{
		cq_layer_keep dummy,
				   *L = base ? &w->enc[i] : &dummy;

		carve_attn(&cv, &L->self, ns, ns, d, c->heads * s2, false);
		carve_ffn(&cv, &L->ffn, ns, d, f);
	}
	for (int i = 0; i < c->decoder_layers; i++)
	{
		cq_layer_keep dummy,
				   *L = base ? &w->dec[i] : &dummy;

		carve_attn(&cv, &L->self, nt, nt, d, c->heads * t2, false);
		carve_attn(&cv, &L->cross, nt, ns, d, c->heads * x2, true);
		carve_ffn(&cv, &L->ffn, nt, d, f);
	}
	w->enc_in = cq_carve_floats(&cv, ns * d);
	w->enc_stats.mean = cq_carve_floats(&cv, ns);
	w->enc_stats.rstd = cq_carve_floats(&cv, ns);
	w->enc_out = cq_carve_floats(&cv, ns * d);
	w->dec_in = cq_carve_floats(&cv, nt * d);
	w->dec_stats.mean = cq_carve_floats(&cv, nt);
	w->dec_stats.rstd = cq_carve_floats(&cv, nt);
	w->dec_h = cq_carve_floats(&cv, nt * d);
	w->tmp = cq_carve_floats(&cv, nmax * d);
	w->dx_enc = cq_carve_floats(&cv, ns * d);
	w->dx_dec = cq_carve_floats(&cv, nt * d);
	w->d_enc_out = cq_carve_floats(&cv, ns * d);
	w->dh = cq_carve_floats(&cv, nmax * d);
	w->dq = cq_carve_floats(&cv, nmax * 3 * d);
	w->dkv = cq_carve_floats(&cv, ns * 2 * d);
	w->dctx = cq_carve_floats(&cv, nmax * d);
	w->du = cq_carve_floats(&cv, nmax * f);
	w->pd = cq_carve_floats(&cv, l * l);
	w->dp = cq_carve_floats(&cv, l * l);
	/* the embedding norm: the sums before it and its statistics, per side */
	for (int t = 0; t < 2; t++)
	{
		long		rows = c->layernorm_embedding ? (t ? nt : ns) : 0;

		w->emb_sum[t] = cq_carve_floats(&cv, rows * d);
		w->emb_stats[t].mean = cq_carve_floats(&cv, rows);
		w->emb_stats[t].rstd = cq_carve_floats(&cv, rows);
	}
	w->rblock = cq_logit_block_rows(c, nt);
	w->logits = cq_carve_floats(&cv, w->rblock * c->tgt_vocab_size);
	w->ns = ns;
	w->nt = nt;
	return cq_carver_bytes(&cv);
}

size_t
cq_train_pass_workspace_bytes(const cq_model_config *cfg, const cq_pair *pairs, int n)
{
	pass_shape	sh = shape_of(cfg, pairs, n);

	return carve(cfg, &sh, NULL, NULL);
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

/* x = Drop(N_emb(E[token] s + position)), N_emb if the model has one. */
static void
embed_fwd(pass *p, bool target, float *x)
{
	const cq_model *m = p->m;
	const cq_norm *n = target ? &m->tgt_embed_ln : &m->src_embed_ln;
	long		rows = target ? p->nt : p->ns;

	if (n->w)
	{
		cq_embed_packed(m, p->pairs, p->n, target, p->emb_sum[target]);
		cq_norm_forward_keep(n, p->emb_sum[target], x, rows, &p->emb_stats[target]);
	}
	else
		cq_embed_packed(m, p->pairs, p->n, target, x);
	drop_rows(p, target, m->cfg.dropout,
			  site(target ? CQ_DROP_DEC_EMBED : CQ_DROP_ENC_EMBED, 0), x, p->d);
}

/*
 * dE[token] += s dsum, dPos[t] += dsum (learned positions), dTT += dsum
 * (token type), with dsum = dx through the dropout and N_emb; dx is consumed.
 */
static void
embed_bwd(pass *p, bool target, float *dx)
{
	cq_model   *g = p->g;
	const cq_norm *n = target ? &p->m->tgt_embed_ln : &p->m->src_embed_ln;
	float	   *table = target ? g->tgt_embed : g->src_embed,
			   *pos = p->m->sinusoid ? NULL : (target ? g->tgt_pos : g->src_pos),
			   *tt = target ? NULL : g->tok_type;	/* an encoder's token type vector */
	float		scale = cq_embed_scale(&p->m->cfg);
	long		row = 0,
				rows = target ? p->nt : p->ns;

	drop_rows(p, target, p->m->cfg.dropout,
			  site(target ? CQ_DROP_DEC_EMBED : CQ_DROP_ENC_EMBED, 0), dx, p->d);
	if (n->w)
	{
		memset(p->dh, 0, sizeof(float) * rows * p->d);
		cq_norm_backward(n, target ? &g->tgt_embed_ln : &g->src_embed_ln, p->emb_sum[target],
						 &p->emb_stats[target], dx, p->dh, rows);
		dx = p->dh;
	}
	for (int b = 0; b < p->n; b++)
		for (int t = 0; t < cq_side_positions(&p->pairs[b], target); t++, row++)
		{
			int32_t		tok = cq_side_token(&p->m->cfg, &p->pairs[b], target, t);
			float	   *e = table + (long) tok * p->d;
			const float *dr = dx + row * p->d;

			for (int i = 0; i < p->d; i++)
				e[i] += dr[i] * scale;
			if (pos)
				for (int i = 0; i < p->d; i++)
					pos[(long) t * p->d + i] += dr[i];
			for (int i = 0; tt && i < p->d; i++)
				tt[i] += dr[i];
		}
}

/* ---- the whole model ----------------------------------------------------- */

/* The block pass of one side: training strides, kept activations, dropout. */
static cq_block_pass
side_pass(pass *p, bool target)
{
	return (cq_block_pass) {
		.m = p->m, .target = target, .rows = target ? p->nt : p->ns,
			.ld_d = p->d, .ld_qkv = 3 * p->d, .ld_f = p->f,
			.tmp = p->tmp, .pd = p->pd,
			.drop = &p->drop, .pairs = p->pairs, .n_pairs = p->n,
			.memory = p->enc_out, .memory_rows = p->ns,
			.self_attend = cq_packed_self_attend, .cross_attend = cq_packed_cross_attend,
	};
}

/* The encoder side: embeddings, blocks, final norm into enc_out. */
static void
encoder_forward(pass *p)
{
	cq_block_pass enc = side_pass(p, false);

	embed_fwd(p, false, p->m->cfg.encoder_layers ? p->enc[0].self.io.x_in : p->enc_in);
	cq_block_stack(&enc, NULL, p->enc, p->enc_in);
	cq_norm_forward_keep(&p->m->enc_ln, p->enc_in, p->enc_out, p->ns, &p->enc_stats);
}

static void
forward(pass *p)
{
	const cq_model *m = p->m;
	int			D = m->cfg.decoder_layers;
	cq_block_pass dec = side_pass(p, true);

	encoder_forward(p);
	embed_fwd(p, true, D ? p->dec[0].self.io.x_in : p->dec_in);
	cq_block_stack(&dec, NULL, p->dec, p->dec_in);
	cq_norm_forward_keep(&m->dec_ln, p->dec_in, p->dec_h, p->nt, &p->dec_stats);
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
		if (m->out_bias)
			for (int r = 0; r < rows; r++)
				for (int j = 0; j < v; j++)
					p->logits[(long) r * v + j] += m->out_bias[j];
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
		/* the rows now hold d(loss)/d(logits) */
		if (m->out_bias)
			for (int r = 0; r < rows; r++)
				for (int j = 0; j < v; j++)
					p->g->out_bias[j] += p->logits[(long) r * v + j];
		cq_sgemm(true, false, v, d, rows, 1.0f, p->logits, v, h, d, 1.0f, p->g->out_proj, d);
		cq_sgemm(false, false, rows, d, v, 1.0f, p->logits, v, m->out_proj, d, 0.0f,
				 p->dh + r0 * d, d);
	}
}

static cq_block_grads
block_grads(pass *p)
{
	return (cq_block_grads) {p->g, p->dh, p->dq, p->dkv, p->dctx, p->du, p->dp, p->d_enc_out};
}

/* The encoder side's backward from d(loss)/d(enc_out). */
static void
encoder_backward(pass *p, const float *d_enc_out)
{
	cq_block_pass enc = side_pass(p, false);
	cq_block_grads gr = block_grads(p);

	memset(p->dx_enc, 0, sizeof(float) * p->ns * p->d);
	cq_norm_backward(&p->m->enc_ln, &p->g->enc_ln, p->enc_in, &p->enc_stats, d_enc_out,
					 p->dx_enc, p->ns);
	cq_block_stack_backward(&enc, &gr, p->dx_enc, p->enc);
	embed_bwd(p, false, p->dx_enc);
}

static void
backward(pass *p)
{
	const cq_model *m = p->m;
	cq_model   *g = p->g;
	int			d = p->d;
	cq_block_pass dec = side_pass(p, true);
	cq_block_grads gr = block_grads(p);

	memset(p->dx_dec, 0, sizeof(float) * p->nt * d);
	cq_norm_backward(&m->dec_ln, &g->dec_ln, p->dec_in, &p->dec_stats, p->dh, p->dx_dec, p->nt);
	memset(p->d_enc_out, 0, sizeof(float) * p->ns * d);
	cq_block_stack_backward(&dec, &gr, p->dx_dec, p->dec);
	embed_bwd(p, true, p->dx_dec);
	encoder_backward(p, p->d_enc_out);
}

/* The pass over ws as carve lays it out for these pairs. */
static pass
laid_out_pass(const cq_model *m, cq_model *grad, const cq_pair *pairs, int n,
			  const cq_train_dropout *dropout, void *ws)
{
	pass		p = {m, grad, pairs, n};
	pass_shape	sh = shape_of(&m->cfg, pairs, n);

	carve(&m->cfg, &sh, ws, &p);
	p.d = m->cfg.d_model;
	p.f = m->cfg.ffn_dim;
	if (dropout && dropout->on)
		p.drop = (cq_dropout_stream) {true, dropout->seed, dropout->pass, 0};
	return p;
}

cq_code
cq_train_pass(const cq_model *m, cq_model *grad, const cq_pair *pairs, int n,
			  const cq_train_dropout *dropout, float eps, void *ws, size_t ws_bytes,
			  cq_train_pass_out *out, cq_error *err)
{
	cq_batch_shape shape;
	cq_code s = cq_batch_shape_of(m, pairs, n, &shape, err);
	pass		p;
	size_t		need;

	if (s)
		return s;
	if (m->cfg.kind == CQ_KIND_ENCODER)
		return cq_fail(err, CQ_EINVAL, "an encoder model is trained as a dual encoder (cq_dual_pass)");
	if (m->compact)
		return cq_fail(err, CQ_EINVAL, "a compacted model cannot be trained");
	if (!grad || !cq_config_equal(&m->cfg, &grad->cfg))
		return cq_fail(err, CQ_EINVAL, "the gradient model does not match the model");
	need = cq_train_pass_workspace_bytes(&m->cfg, pairs, n);
	if (!ws || ws_bytes < need)
		return cq_fail(err, CQ_EINTERNAL,
						  "workspace of %zu bytes is too small, the batch needs %zu",
						  ws_bytes, need);
	p = laid_out_pass(m, grad, pairs, n, dropout, ws);
	forward(&p);
	loss_and_output_bwd(&p, eps, out);
	backward(&p);
	return CQ_OK;
}

/* ---- the encoder side alone (encoder models, dual_pass.c) ------------------ */

size_t
cq_encoder_pass_workspace_bytes(const cq_model_config *cfg, long positions, long sum_sq,
								long longest)
{
	pass_shape	sh = {positions, 0, sum_sq, 0, 0, longest};

	return carve(cfg, &sh, NULL, NULL);
}

const float *
cq_encoder_pass_forward(const cq_model *m, const cq_pair *pairs, int n,
						const cq_train_dropout *dropout, void *ws)
{
	pass		p = laid_out_pass(m, NULL, pairs, n, dropout, ws);

	encoder_forward(&p);
	return p.enc_out;
}

void
cq_encoder_pass_backward(const cq_model *m, cq_model *grad, const cq_pair *pairs, int n,
						 const cq_train_dropout *dropout, void *ws, const float *d_out)
{
	pass		p = laid_out_pass(m, grad, pairs, n, dropout, ws);

	encoder_backward(&p, d_out);
}
