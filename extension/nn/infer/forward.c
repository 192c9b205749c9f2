/*
 * The teacher-forced forward pass (forward.h): embeddings, pre-norm encoder
 * and decoder layers, output projection with fused log-softmax statistics.
 */
#include "nn/infer/forward.h"

#include <math.h>
#include <string.h>

#include "common/carve.h"
#include "nn/infer/parts.h"
#include "nn/layers/block.h"

/* The workspace, carved in this order. */
typedef struct workspace
{
	float	   *enc_x;			/* [Ns, d] encoder state, then its output */
	float	   *dec_x;			/* [Nt, d] decoder state */
	float	   *h;				/* [N, d] norm output */
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
	cq_carver	cv = cq_carver_start(base);

	w->enc_x = cq_carve_floats(&cv, d * ns);
	w->dec_x = cq_carve_floats(&cv, d * nt);
	w->h = cq_carve_floats(&cv, n * d);
	w->qkv = cq_carve_floats(&cv, 3 * n * d);
	w->ctx = cq_carve_floats(&cv, n * d);
	w->tmp = cq_carve_floats(&cv, n * d);
	w->ffn = cq_carve_floats(&cv, n * c->ffn_dim);
	w->scores = cq_carve_floats(&cv, l * l);
	w->logits = cq_carve_floats(&cv, r * c->tgt_vocab_size);
	return cq_carver_bytes(&cv);
}

size_t
cq_forward_workspace_bytes(const cq_model_config *cfg, const cq_batch_shape *shape)
{
	return carve(cfg, shape, NULL, NULL);
}

cq_code
cq_batch_shape_of(const cq_model *m, const cq_pair *pairs, int n,
				  cq_batch_shape *s, cq_error *err)
{
	const cq_model_config *c = &m->cfg;

	memset(s, 0, sizeof(*s));
	if (c->kind == CQ_KIND_ENCODER)
		return cq_fail(err, CQ_EINVAL, "an encoder model does not score sentence pairs");
	if (n < 1 || !pairs)
		return cq_fail(err, CQ_EINVAL, "a batch needs at least one pair");
	for (int b = 0; b < n; b++)
	{
		const cq_pair *p = &pairs[b];

		if (p->src_len < 0 || p->tgt_len < 0 ||
			(p->src_len > 0 && !p->src) || (p->tgt_len > 0 && !p->tgt))
			return cq_fail(err, CQ_EINVAL, "pair %d has a negative length or no ids", b);
		if (p->src_len + 1 > c->max_positions || p->tgt_len + 1 > c->max_positions)
			return cq_fail(err, CQ_EINVAL,
							  "pair %d has %d source and %d target tokens, the model takes at most %d each",
							  b, p->src_len, p->tgt_len, c->max_positions - 1);
		for (int t = 0; t < p->src_len; t++)
			if (p->src[t] < 0 || p->src[t] >= c->src_vocab_size)
				return cq_fail(err, CQ_EINVAL,
								  "pair %d: source id %d is outside the vocabulary of %d",
								  b, p->src[t], c->src_vocab_size);
		for (int t = 0; t < p->tgt_len; t++)
			if (p->tgt[t] < 0 || p->tgt[t] >= c->tgt_vocab_size)
				return cq_fail(err, CQ_EINVAL,
								  "pair %d: target id %d is outside the vocabulary of %d",
								  b, p->tgt[t], c->tgt_vocab_size);
		s->src_positions += p->src_len + 1;
		s->tgt_positions += p->tgt_len + 1;
		s->max_src = p->src_len + 1 > s->max_src ? p->src_len + 1 : s->max_src;
		s->max_tgt = p->tgt_len + 1 > s->max_tgt ? p->tgt_len + 1 : s->max_tgt;
	}
	/* GEMM dimensions are int: keep rows x (3d or ffn) well inside */
	if (s->src_positions > CQ_MAX_BATCH_POSITIONS || s->tgt_positions > CQ_MAX_BATCH_POSITIONS)
		return cq_fail(err, CQ_EINVAL, "a batch of %ld source and %ld target positions is too large (at most %d each)",
						  s->src_positions, s->tgt_positions, CQ_MAX_BATCH_POSITIONS);
	s->n_pairs = n;
	return CQ_OK;
}

/* The block pass of one side over the workspace (inference: nothing kept). */
static cq_block_pass
side_pass(batch *bt, bool target)
{
	workspace  *w = &bt->w;

	return (cq_block_pass) {
		.m = bt->m, .target = target, .rows = target ? bt->nt : bt->ns,
			.ld_d = bt->m->cfg.d_model, .ld_qkv = 3 * bt->m->cfg.d_model,
			.ld_f = bt->m->cfg.ffn_dim,
			.h = w->h, .qkv = w->qkv, .ctx = w->ctx, .tmp = w->tmp, .ffn = w->ffn,
			.scores = w->scores,
			.drop = &bt->drop, .pairs = bt->pairs, .n_pairs = bt->n,
			.memory = w->enc_x, .memory_rows = bt->ns,
			.self_attend = cq_packed_self_attend, .cross_attend = cq_packed_cross_attend,
	};
}

/* x = Drop(N_emb(E[token] s + position)) over one side (N_emb if any). */
static void
embed(batch *bt, bool target, float *x)
{
	cq_embed_packed(bt->m, bt->pairs, bt->n, target, x);
	cq_embed_norm(bt->m, target, x, target ? bt->nt : bt->ns, bt->m->cfg.d_model);
	cq_drop_packed(&bt->drop, bt->pairs, bt->n, target, bt->m->cfg.dropout,
				   cq_dropout_site(target ? CQ_DROP_DEC_EMBED : CQ_DROP_ENC_EMBED, 0, 0), x,
				   bt->m->cfg.d_model);
}

/* enc_x = the encoder's output; h = the decoder's, through its final norm. */
static void
encode_decode(batch *bt)
{
	const cq_model *m = bt->m;
	cq_block_pass enc = side_pass(bt, false),
				dec = side_pass(bt, true);

	embed(bt, false, bt->w.enc_x);
	cq_block_stack(&enc, bt->w.enc_x, NULL, bt->w.enc_x);
	cq_norm_forward(&m->enc_ln, bt->w.enc_x, bt->w.enc_x, enc.rows, enc.ld_d);
	embed(bt, true, bt->w.dec_x);
	cq_block_stack(&dec, bt->w.dec_x, NULL, bt->w.dec_x);
	cq_norm_forward(&m->dec_ln, bt->w.dec_x, bt->w.h, dec.rows, dec.ld_d);
}

/* logits = N(y) W_out^T in blocks of cq_logit_block_rows(), reduced row by row. */
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

/* Score a batch already checked (shape is its shape) on a workspace of its size. */
static void
forward_checked(const cq_model *m, const cq_pair *pairs, int n, const cq_batch_shape *shape,
				const cq_dropout *dropout, void *workspace_mem, const cq_forward_out *out)
{
	batch		bt = {m, pairs, n};

	if (dropout && dropout->mode == CQ_DROPOUT_MC)
		bt.drop = (cq_dropout_stream) {true, dropout->seed, dropout->pass, 0};
	carve(&m->cfg, shape, workspace_mem, &bt.w);
	bt.ns = shape->src_positions;
	bt.nt = shape->tgt_positions;
	encode_decode(&bt);
	score(&bt, out);
}

static cq_code
check_outputs(const cq_forward_out *out, cq_error *err)
{
	if (!out || !out->logp || !out->p_max || !out->entropy || !out->sent_logp ||
		!out->sent_count)
		return cq_fail(err, CQ_EINVAL, "an output array is missing");
	return CQ_OK;
}

cq_code
cq_forward(const cq_model *m, const cq_pair *pairs, int n_pairs,
		   const cq_dropout *dropout, void *workspace_mem, size_t ws_bytes,
		   const cq_forward_out *out, cq_error *err)
{
	cq_batch_shape shape;
	cq_code s = cq_batch_shape_of(m, pairs, n_pairs, &shape, err);
	size_t		need;

	if (s)
		return s;
	need = cq_forward_workspace_bytes(&m->cfg, &shape);
	if (!workspace_mem || ws_bytes < need)
		return cq_fail(err, CQ_EINTERNAL,
						  "workspace of %zu bytes is too small, the batch needs %zu",
						  ws_bytes, need);
	if ((s = check_outputs(out, err)) != CQ_OK)
		return s;
	forward_checked(m, pairs, n_pairs, &shape, dropout, workspace_mem, out);
	return CQ_OK;
}

/* ---- a batch shared out to the pool ------------------------------------ */

/* Multiply-adds of one pair, roughly: the weight products and attention. */
static double
pair_work(const cq_model_config *c, const cq_pair *p)
{
	double		d = c->d_model,
				f = c->ffn_dim,
				ls = p->src_len + 1,
				lt = p->tgt_len + 1;
	double		enc = c->encoder_layers * (ls * (4 * d * d + 2 * d * f) + 2 * ls * ls * d);
	double		dec = c->decoder_layers * (lt * (6 * d * d + 2 * d * f) + ls * 2 * d * d +
										   2 * lt * lt * d + 2 * lt * ls * d);

	return enc + dec + lt * d * c->tgt_vocab_size;
}

/* The shape of pairs[lo, hi) (checked before: cannot fail). */
static cq_batch_shape
shape_of(const cq_pair *pairs, int lo, int hi)
{
	cq_batch_shape s = {hi - lo};

	for (int b = lo; b < hi; b++)
	{
		const cq_pair *p = &pairs[b];

		s.src_positions += p->src_len + 1;
		s.tgt_positions += p->tgt_len + 1;
		s.max_src = p->src_len + 1 > s.max_src ? p->src_len + 1 : s.max_src;
		s.max_tgt = p->tgt_len + 1 > s.max_tgt ? p->tgt_len + 1 : s.max_tgt;
	}
	return s;
}

/* The pairs as parts.h sees them. */
typedef struct pairs_view
{
	const cq_model_config *c;
	const cq_pair *pairs;
} pairs_view;

static double
pair_work_of(const void *arg, int i)
{
	const pairs_view *v = arg;

	return pair_work(v->c, &v->pairs[i]);
}

static size_t
part_bytes(const void *arg, int lo, int hi)
{
	const pairs_view *v = arg;
	cq_batch_shape s = shape_of(v->pairs, lo, hi);

	return cq_forward_workspace_bytes(v->c, &s);
}

static const cq_parts_ops pairs_ops = {pair_work_of, part_bytes};

static void
make_plan(const cq_model_config *c, const cq_pair *pairs, int n, int threads, cq_parts_plan *pl)
{
	long		rows = 0;
	pairs_view	v = {c, pairs};

	for (int b = 0; b < n; b++)
		rows += pairs[b].tgt_len + 1;
	cq_parts_plan_make(&pairs_ops, &v, n, rows, threads, pl);
}

size_t
cq_forward_parallel_bytes(const cq_model_config *cfg, const cq_pair *pairs, int n_pairs,
						  int threads)
{
	cq_parts_plan pl;

	if (n_pairs < 1 || !pairs)
		return 0;
	make_plan(cfg, pairs, n_pairs, threads, &pl);
	return pl.lane_bytes * pl.lanes;
}

/* What every part reads: the batch, and where each part's output rows start. */
typedef struct forward_parts
{
	const cq_model *m;
	const cq_pair *pairs;
	const cq_dropout *dropout;
	const cq_forward_out *out;
	const long *row0;			/* [parts] first output row of each part */
} forward_parts;

static void
forward_part(void *arg, int k, int lo, int hi, void *ws)
{
	const forward_parts *f = arg;
	cq_batch_shape s = shape_of(f->pairs, lo, hi);
	long		r = f->row0[k];
	cq_forward_out o = {
		f->out->logp + r, f->out->p_max + r, f->out->entropy + r,
		f->out->argmax ? f->out->argmax + r : NULL,
		f->out->sent_logp + lo, f->out->sent_count + lo
	};

	forward_checked(f->m, f->pairs + lo, hi - lo, &s, f->dropout, ws, &o);
}

cq_code
cq_forward_parallel(const cq_model *m, const cq_pair *pairs, int n_pairs,
					const cq_dropout *dropout, int threads, void *workspace_mem,
					size_t ws_bytes, const cq_forward_out *out, cq_error *err)
{
	cq_batch_shape shape;
	cq_code s = cq_batch_shape_of(m, pairs, n_pairs, &shape, err);
	cq_parts_plan pl;
	long		row0[CQ_PARTS_MAX];
	forward_parts f = {m, pairs, dropout, out, row0};

	if (s)
		return s;
	make_plan(&m->cfg, pairs, n_pairs, threads, &pl);
	if (pl.parts == 1)
		return cq_forward(m, pairs, n_pairs, dropout, workspace_mem, ws_bytes, out, err);
	if (!workspace_mem || ws_bytes < pl.lane_bytes * pl.lanes)
		return cq_fail(err, CQ_EINTERNAL,
						  "workspace of %zu bytes is too small, the batch needs %zu",
						  ws_bytes, pl.lane_bytes * pl.lanes);
	if ((s = check_outputs(out, err)) != CQ_OK)
		return s;
	row0[0] = 0;
	for (int k = 1; k < pl.parts; k++)
		row0[k] = row0[k - 1] + shape_of(pairs, pl.bounds[k - 1], pl.bounds[k]).tgt_positions;
	/* a part's products run inline on its thread (common/parallel.h) */
	cq_parts_run(&pl, forward_part, &f, workspace_mem);
	return CQ_OK;
}
