/*
 * The teacher-forced forward pass (forward.h): embeddings, pre-norm encoder
 * and decoder layers, output projection with fused log-softmax statistics.
 */
#include "nn/infer/forward.h"

#include <math.h>
#include <string.h>

#include "nn/ops/blas.h"
#include "nn/ops/ops.h"
#include "nn/layers/packed.h"

/* The workspace, carved in this order. */
typedef struct workspace
{
	float	   *enc_x;			/* [Ns, d] encoder state, then its output */
	float	   *dec_x;			/* [Nt, d] decoder state */
	float	   *h;				/* [N, d] layer-norm output */
	float	   *qkv;			/* [N, 3d]; cross: q [Nt, d] then kv [Ns, 2d] */
	float	   *ctx;			/* [N, d] attention output */
	float	   *tmp;			/* [N, d] a branch before the residual add */
	float	   *ffn;			/* [N, F] */
	float	   *scores;			/* [L, L] one head's attention */
	float	   *logits;			/* [R, V] */
} workspace;

/* A batch being scored and where its pairs' rows start. */
typedef struct batch
{
	const cq_model *m;
	const cq_pair *pairs;
	int			n;
	cq_dropout_stream drop;
	workspace	w;
	long		ns,
				nt;
} batch;

static size_t
carve(const cq_model_config *c, const cq_batch_shape *s, char *base, workspace *out)
{
	workspace	unused,
			   *w = out ? out : &unused;
	long		d = c->d_model,
				ns = s->src_positions,
				nt = s->tgt_positions,
				n = ns > nt ? ns : nt,
				l = s->max_src > s->max_tgt ? s->max_src : s->max_tgt,
				r = cq_logit_block_rows(c, s->tgt_positions);
	size_t		sizes[9] = {d * ns, d * nt, n * d, 3 * n * d, n * d, n * d,
		n * c->ffn_dim, l * l, r * c->tgt_vocab_size};
	float	  **slots[9] = {&w->enc_x, &w->dec_x, &w->h, &w->qkv, &w->ctx, &w->tmp,
		&w->ffn, &w->scores, &w->logits};
	size_t		off = 64;			/* room to align the base */

	if (base)
		off = 64 - ((uintptr_t) base & 63);
	for (int i = 0; i < 9; i++)
	{
		if (base)
			*slots[i] = (float *) (base + off);
		off += (sizes[i] * sizeof(float) + 63) / 64 * 64;
	}
	return off + 64;
}

size_t
cq_forward_workspace_bytes(const cq_model_config *cfg, const cq_batch_shape *shape)
{
	return carve(cfg, shape, NULL, NULL);
}

cq_nn_status
cq_batch_shape_of(const cq_model *m, const cq_pair *pairs, int n,
				  cq_batch_shape *s, cq_nn_error *err)
{
	const cq_model_config *c = &m->cfg;

	memset(s, 0, sizeof(*s));
	if (n < 1 || !pairs)
		return cq_nn_fail(err, CQ_NN_EINVAL, "a batch needs at least one pair");
	for (int b = 0; b < n; b++)
	{
		const cq_pair *p = &pairs[b];

		if (p->src_len < 0 || p->tgt_len < 0 ||
			(p->src_len > 0 && !p->src) || (p->tgt_len > 0 && !p->tgt))
			return cq_nn_fail(err, CQ_NN_EINVAL, "pair %d has a negative length or no ids", b);
		if (p->src_len + 1 > c->max_positions || p->tgt_len + 1 > c->max_positions)
			return cq_nn_fail(err, CQ_NN_EINVAL,
							  "pair %d has %d source and %d target tokens, the model takes at most %d each",
							  b, p->src_len, p->tgt_len, c->max_positions - 1);
		for (int t = 0; t < p->src_len; t++)
			if (p->src[t] < 0 || p->src[t] >= c->src_vocab_size)
				return cq_nn_fail(err, CQ_NN_EINVAL,
								  "pair %d: source id %d is outside the vocabulary of %d",
								  b, p->src[t], c->src_vocab_size);
		for (int t = 0; t < p->tgt_len; t++)
			if (p->tgt[t] < 0 || p->tgt[t] >= c->tgt_vocab_size)
				return cq_nn_fail(err, CQ_NN_EINVAL,
								  "pair %d: target id %d is outside the vocabulary of %d",
								  b, p->tgt[t], c->tgt_vocab_size);
		s->src_positions += p->src_len + 1;
		s->tgt_positions += p->tgt_len + 1;
		s->max_src = p->src_len + 1 > s->max_src ? p->src_len + 1 : s->max_src;
		s->max_tgt = p->tgt_len + 1 > s->max_tgt ? p->tgt_len + 1 : s->max_tgt;
	}
	/* GEMM dimensions are int: keep rows x (3d or ffn) well inside */
	if (s->src_positions > CQ_MAX_BATCH_POSITIONS || s->tgt_positions > CQ_MAX_BATCH_POSITIONS)
		return cq_nn_fail(err, CQ_NN_EINVAL, "a batch of %ld source and %ld target positions is too large (at most %d each)",
						  s->src_positions, s->tgt_positions, CQ_MAX_BATCH_POSITIONS);
	s->n_pairs = n;
	return CQ_NN_OK;
}

/* Inverted dropout on each row of one side's packed rows. */
static void
drop_rows(batch *bt, bool target, float p, uint32_t site, float *x, int cols)
{
	cq_drop_packed(&bt->drop, bt->pairs, bt->n, target, p, site, x, cols);
}

/* x = Drop(E[token] sqrt(d) + position) over one side. */
static void
embed(batch *bt, bool target, float *x)
{
	cq_embed_packed(bt->m, bt->pairs, bt->n, target, x);
	drop_rows(bt, target, bt->m->cfg.dropout,
			  cq_dropout_site(target ? CQ_DROP_DEC_EMBED : CQ_DROP_ENC_EMBED, 0, 0), x,
			  bt->m->cfg.d_model);
}

static void
add_rows(float *x, const float *y, long n)
{
	for (long i = 0; i < n; i++)
		x[i] += y[i];
}

/* x += Drop(FFN(LN(x))) over rows positions. */
static void
ffn_block(batch *bt, bool target, float *x, long rows, const cq_layer_norm *ln,
		  const cq_linear *fc1, const cq_linear *fc2, int layer)
{
	const cq_model_config *c = &bt->m->cfg;
	workspace  *w = &bt->w;
	int			d = c->d_model,
				f = c->ffn_dim;

	cq_layer_norm_rows(x, w->h, rows, d, ln->w, ln->b, CQ_LAYERNORM_EPS);
	cq_linear_rows(fc1, w->h, d, w->ffn, f, rows);
	if (c->activation == CQ_ACT_GELU)
		cq_gelu_erf(w->ffn, rows * f);
	else
		cq_relu(w->ffn, rows * f);
	drop_rows(bt, target, c->activation_dropout,
			  cq_dropout_site(target ? CQ_DROP_DEC_FFN_ACT : CQ_DROP_ENC_FFN_ACT, layer, 0),
			  w->ffn, f);
	cq_linear_rows(fc2, w->ffn, f, w->tmp, d, rows);
	drop_rows(bt, target, c->dropout,
			  cq_dropout_site(target ? CQ_DROP_DEC_FFN_RESID : CQ_DROP_ENC_FFN_RESID, layer, 0),
			  w->tmp, d);
	add_rows(x, w->tmp, rows * d);
}

/* x += Drop(SelfAttn(LN(x))); causal in the decoder. */
static void
self_attn_block(batch *bt, bool target, float *x, long rows,
				const cq_layer_norm *ln, const cq_linear *qkv,
				const cq_linear *out, int layer)
{
	const cq_model_config *c = &bt->m->cfg;
	workspace  *w = &bt->w;
	int			d = c->d_model;
	long		row = 0;
	cq_attention_args a = {
		.ldq = 3 * d, .ldk = 3 * d, .ldv = 3 * d, .ldo = d,
		.heads = c->heads, .dh = d / c->heads, .causal = target,
		.scores = w->scores, .drop = &bt->drop, .drop_p = c->attention_dropout,
		.drop_kind = target ? CQ_DROP_DEC_SELF_ATTN : CQ_DROP_ENC_SELF_ATTN,
		.layer = layer,
	};

	cq_layer_norm_rows(x, w->h, rows, d, ln->w, ln->b, CQ_LAYERNORM_EPS);
	cq_linear_rows(qkv, w->h, d, w->qkv, 3 * d, rows);
	for (int b = 0; b < bt->n; b++)
	{
		int			len = cq_side_positions(&bt->pairs[b], target);

		bt->drop.pair_key = bt->pairs[b].key;
		a.q = w->qkv + row * 3 * d;
		a.k = a.q + d;
		a.v = a.q + 2 * d;
		a.out = w->ctx + row * d;
		a.lq = a.lk = len;
		cq_attention(&a);
		row += len;
	}
	cq_linear_rows(out, w->ctx, d, w->tmp, d, rows);
	drop_rows(bt, target, c->dropout,
			  cq_dropout_site(target ? CQ_DROP_DEC_SELF_RESID : CQ_DROP_ENC_SELF_RESID, layer, 0),
			  w->tmp, d);
	add_rows(x, w->tmp, rows * d);
}

/* y += Drop(CrossAttn(LN(y), encoder output)), per pair over its source. */
static void
cross_attn_block(batch *bt, const cq_decoder_layer *L, int layer)
{
	const cq_model_config *c = &bt->m->cfg;
	workspace  *w = &bt->w;
	int			d = c->d_model;
	float	   *q = w->qkv,
			   *kv = w->qkv + bt->nt * d;
	long		qrow = 0,
				krow = 0;
	cq_attention_args a = {
		.ldq = d, .ldk = 2 * d, .ldv = 2 * d, .ldo = d,
		.heads = c->heads, .dh = d / c->heads, .causal = false,
		.scores = w->scores, .drop = &bt->drop, .drop_p = c->attention_dropout,
		.drop_kind = CQ_DROP_DEC_CROSS_ATTN, .layer = layer,
	};

	cq_layer_norm_rows(w->dec_x, w->h, bt->nt, d, L->cross_ln.w, L->cross_ln.b,
					   CQ_LAYERNORM_EPS);
	cq_linear_rows(&L->cross_q, w->h, d, q, d, bt->nt);
	cq_linear_rows(&L->cross_kv, w->enc_x, d, kv, 2 * d, bt->ns);
	for (int b = 0; b < bt->n; b++)
	{
		bt->drop.pair_key = bt->pairs[b].key;
		a.q = q + qrow * d;
		a.k = kv + krow * 2 * d;
		a.v = a.k + d;
		a.out = w->ctx + qrow * d;
		a.lq = cq_side_positions(&bt->pairs[b], true);
		a.lk = cq_side_positions(&bt->pairs[b], false);
		cq_attention(&a);
		qrow += a.lq;
		krow += a.lk;
	}
	cq_linear_rows(&L->cross_out, w->ctx, d, w->tmp, d, bt->nt);
	drop_rows(bt, true, c->dropout,
			  cq_dropout_site(CQ_DROP_DEC_CROSS_RESID, layer, 0), w->tmp, d);
	add_rows(w->dec_x, w->tmp, bt->nt * d);
}

static void
encode(batch *bt)
{
	const cq_model *m = bt->m;
	float	   *x = bt->w.enc_x;

	embed(bt, false, x);
	for (int i = 0; i < m->cfg.encoder_layers; i++)
	{
		const cq_encoder_layer *L = &m->enc[i];

		self_attn_block(bt, false, x, bt->ns, &L->attn_ln, &L->qkv, &L->attn_out, i);
		ffn_block(bt, false, x, bt->ns, &L->ffn_ln, &L->fc1, &L->fc2, i);
	}
	cq_layer_norm_rows(x, x, bt->ns, m->cfg.d_model, m->enc_ln.w, m->enc_ln.b,
					   CQ_LAYERNORM_EPS);
}

static void
decode(batch *bt)
{
	const cq_model *m = bt->m;
	float	   *y = bt->w.dec_x;

	embed(bt, true, y);
	for (int i = 0; i < m->cfg.decoder_layers; i++)
	{
		const cq_decoder_layer *L = &m->dec[i];

		self_attn_block(bt, true, y, bt->nt, &L->self_ln, &L->self_qkv, &L->self_out, i);
		cross_attn_block(bt, L, i);
		ffn_block(bt, true, y, bt->nt, &L->ffn_ln, &L->fc1, &L->fc2, i);
	}
	cq_layer_norm_rows(y, bt->w.h, bt->nt, m->cfg.d_model, m->dec_ln.w, m->dec_ln.b,
					   CQ_LAYERNORM_EPS);
}

/* logits = LN(y) W_out^T in blocks of cq_logit_block_rows(), reduced row by row. */
static void
score(batch *bt, const cq_forward_out *out)
{
	const cq_model_config *c = &bt->m->cfg;
	int			d = c->d_model,
				v = c->tgt_vocab_size;
	int			b = 0,
				t = 0;
	for (int b2 = 0; b2 < bt->n; b2++)
	{
		out->sent_logp[b2] = 0.0;
		out->sent_count[b2] = bt->pairs[b2].tgt_len + 1;
	}
	long		block = cq_logit_block_rows(c, bt->nt);

	for (long r0 = 0; r0 < bt->nt; r0 += block)
	{
		int			rows = bt->nt - r0 < block ? (int) (bt->nt - r0) : (int) block;

		cq_linear_rows(&bt->m->output, bt->w.h + r0 * d, d, bt->w.logits, v, rows);
		for (int r = 0; r < rows; r++)
		{
			const cq_pair *p = &bt->pairs[b];
			int32_t		gold = t < p->tgt_len ? p->tgt[t] : CQ_EOS_ID;
			cq_row_stats s = cq_logit_row_stats(bt->w.logits + (long) r * v, v, gold);
			long		i = r0 + r;

			out->logp[i] = s.logp_gold;
			out->p_max[i] = s.p_max;
			out->entropy[i] = s.entropy;
			if (out->argmax)
				out->argmax[i] = s.argmax;
			out->sent_logp[b] += s.logp_gold;
			if (++t == p->tgt_len + 1)
			{
				b++;
				t = 0;
			}
		}
	}
}

cq_nn_status
cq_forward(const cq_model *m, const cq_pair *pairs, int n_pairs,
		   const cq_dropout *dropout, void *workspace_mem, size_t ws_bytes,
		   const cq_forward_out *out, cq_nn_error *err)
{
	cq_batch_shape shape;
	cq_nn_status s = cq_batch_shape_of(m, pairs, n_pairs, &shape, err);
	size_t		need;
	batch		bt = {m, pairs, n_pairs};

	if (s)
		return s;
	need = cq_forward_workspace_bytes(&m->cfg, &shape);
	if (!workspace_mem || ws_bytes < need)
		return cq_nn_fail(err, CQ_NN_EWORKSPACE,
						  "workspace of %zu bytes is too small, the batch needs %zu",
						  ws_bytes, need);
	if (!out || !out->logp || !out->p_max || !out->entropy || !out->sent_logp ||
		!out->sent_count)
		return cq_nn_fail(err, CQ_NN_EINVAL, "an output array is missing");
	if (dropout && dropout->mode == CQ_DROPOUT_MC)
		bt.drop = (cq_dropout_stream) {true, dropout->seed, dropout->pass, 0};
	carve(&m->cfg, &shape, workspace_mem, &bt.w);
	bt.ns = shape.src_positions;
	bt.nt = shape.tgt_positions;
	encode(&bt);
	decode(&bt);
	score(&bt, out);
	return CQ_NN_OK;
}
