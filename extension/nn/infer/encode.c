/*
 * Sentence embeddings with an encoder model (encode.h): the embeddings, the
 * encoder blocks and the final norm over the packed sentences, then the
 * sentence vectors (layers/pool.h).
 */
#include "nn/infer/encode.h"

#include <string.h>

#include "common/carve.h"
#include "nn/infer/parts.h"
#include "nn/layers/block.h"
#include "nn/layers/norm.h"
#include "nn/layers/pool.h"

/* The workspace, carved in this order. */
typedef struct workspace
{
	cq_pair    *pairs;			/* [n] each sentence as an encoder input */
	int32_t    *ids;			/* <s> ids of each sentence */
	float	   *x;				/* [N, d] the residual stream, then the output */
	float	   *h,				/* [N, d] */
			   *qkv,			/* [N, 3d] */
			   *ctx,			/* [N, d] */
			   *tmp,			/* [N, d] */
			   *ffn,			/* [N, F] */
			   *scores,			/* [L, L] */
			   *pooled;			/* [n, d] */
} workspace;

static size_t
carve(const cq_model_config *c, int n, long positions, int longest, char *base, workspace *out)
{
	workspace	unused,
			   *w = out ? out : &unused;
	long		d = c->d_model,
				N = positions,
				L = longest;
	cq_carver	cv = cq_carver_start(base);

	w->pairs = cq_carve(&cv, sizeof(cq_pair) * n);
	/* the ids: one fewer per sentence than its positions */
	w->ids = cq_carve(&cv, sizeof(int32_t) * (N - n));
	w->x = cq_carve_floats(&cv, N * d);
	w->h = cq_carve_floats(&cv, N * d);
	w->qkv = cq_carve_floats(&cv, N * 3 * d);
	w->ctx = cq_carve_floats(&cv, N * d);
	w->tmp = cq_carve_floats(&cv, N * d);
	w->ffn = cq_carve_floats(&cv, N * c->ffn_dim);
	w->scores = cq_carve_floats(&cv, L * L);
	w->pooled = cq_carve_floats(&cv, (long) n * d);
	return cq_carver_bytes(&cv);
}

size_t
cq_encode_workspace_bytes(const cq_model_config *cfg, int n, long positions, int longest)
{
	return carve(cfg, n, positions, longest, NULL, NULL);
}

/* Positions in all and the longest sentence's. */
static void
shape(const cq_sentence *s, int n, long *positions, int *longest)
{
	*positions = 0;
	*longest = 0;
	for (int i = 0; i < n; i++)
	{
		*positions += s[i].len + 2;
		*longest = s[i].len + 2 > *longest ? s[i].len + 2 : *longest;
	}
}

size_t
cq_encode_sentences_bytes(const cq_model_config *cfg, const cq_sentence *s, int n)
{
	long		positions;
	int			longest;

	shape(s, n, &positions, &longest);
	return cq_encode_workspace_bytes(cfg, n, positions, longest);
}

static cq_code
check(const cq_model *m, const cq_sentence *s, int n, cq_error *err)
{
	const cq_model_config *c = &m->cfg;
	int			most = cq_config_sentence_tokens(c);
	long		positions = 0;

	if (c->kind != CQ_KIND_ENCODER)
		return cq_fail(err, CQ_EINVAL, "a translation model does not embed sentences");
	if (n < 1 || !s)
		return cq_fail(err, CQ_EINVAL, "a batch needs at least one sentence");
	for (int i = 0; i < n; i++)
	{
		if (s[i].len < 0 || (s[i].len > 0 && !s[i].ids))
			return cq_fail(err, CQ_EINVAL, "sentence %d has a negative length or no ids", i);
		if (s[i].len > most)
			return cq_fail(err, CQ_EINVAL, "sentence %d has %d tokens, the model takes at most %d",
						   i, s[i].len, most);
		for (int t = 0; t < s[i].len; t++)
			if (s[i].ids[t] < 0 || s[i].ids[t] >= c->src_vocab_size)
				return cq_fail(err, CQ_EINVAL, "sentence %d: id %d is outside the vocabulary of %d",
							   i, s[i].ids[t], c->src_vocab_size);
		positions += s[i].len + 2;
	}
	if (positions > CQ_MAX_BATCH_POSITIONS)
		return cq_fail(err, CQ_EINVAL, "a batch of %ld positions is too large (at most %d)",
					   positions, CQ_MAX_BATCH_POSITIONS);
	return CQ_OK;
}

cq_code
cq_encode(const cq_model *m, const cq_sentence *s, int n, const cq_dropout *dropout,
		  void *ws, size_t ws_bytes, float *out, cq_error *err)
{
	const cq_model_config *c = &m->cfg;
	cq_code		st = check(m, s, n, err);
	cq_dropout_stream drop = {false, 0, 0, 0};
	workspace	w;
	long		positions;
	int			longest;
	cq_block_pass bp;

	if (st)
		return st;
	shape(s, n, &positions, &longest);
	if (!ws || ws_bytes < cq_encode_workspace_bytes(c, n, positions, longest))
		return cq_fail(err, CQ_EINTERNAL, "workspace of %zu bytes is too small, the batch needs %zu",
					   ws_bytes, cq_encode_workspace_bytes(c, n, positions, longest));
	if (!out)
		return cq_fail(err, CQ_EINVAL, "the output array is missing");
	if (dropout && dropout->mode == CQ_DROPOUT_MC)
		drop = (cq_dropout_stream) {true, dropout->seed, dropout->pass, 0};
	carve(c, n, positions, longest, ws, &w);
	cq_sentence_pairs(s, n, w.ids, w.pairs);
	bp = (cq_block_pass) {
		.m = m, .target = false, .rows = positions, .ld_d = c->d_model,
			.ld_qkv = 3 * c->d_model, .ld_f = c->ffn_dim,
			.h = w.h, .qkv = w.qkv, .ctx = w.ctx, .tmp = w.tmp, .ffn = w.ffn,
			.scores = w.scores, .drop = &drop, .pairs = w.pairs, .n_pairs = n,
			.self_attend = cq_packed_self_attend,
	};
	/* x = Drop(N_emb(E[token] s + position)), the blocks, the final norm */
	cq_embed_packed(m, w.pairs, n, false, w.x);
	cq_embed_norm(m, false, w.x, positions, c->d_model);
	cq_drop_packed(&drop, w.pairs, n, false, c->dropout,
				   cq_dropout_site(CQ_DROP_ENC_EMBED, 0, 0), w.x, c->d_model);
	cq_block_stack(&bp, w.x, NULL, w.x);
	cq_norm_forward(&m->enc_ln, w.x, w.x, positions, c->d_model);
	cq_pool_forward(m, w.pairs, n, w.x, w.pooled, out, NULL);
	return CQ_OK;
}

/* ---- on several threads ---- */

/* The sentences as parts.h sees them. */
typedef struct sentences_view
{
	const cq_model_config *c;
	const cq_sentence *s;
} sentences_view;

/* Multiply-adds of one sentence's pass per layer, roughly: the products and attention. */
static double
sentence_work(const void *arg, int i)
{
	const sentences_view *v = arg;
	double		d = v->c->d_model,
				f = v->c->ffn_dim,
				l = v->s[i].len + 2;

	return l * (4 * d * d + 2 * d * f) + 2 * l * l * d;
}

static size_t
part_bytes(const void *arg, int lo, int hi)
{
	const sentences_view *v = arg;

	return cq_encode_sentences_bytes(v->c, v->s + lo, hi - lo);
}

static const cq_parts_ops sentences_ops = {sentence_work, part_bytes};

static void
make_plan(const cq_model_config *c, const cq_sentence *s, int n, int threads, cq_parts_plan *pl)
{
	long		positions;
	int			longest;
	sentences_view v = {c, s};

	shape(s, n, &positions, &longest);
	cq_parts_plan_make(&sentences_ops, &v, n, positions, threads, pl);
}

size_t
cq_encode_parallel_bytes(const cq_model_config *cfg, const cq_sentence *s, int n, int threads)
{
	cq_parts_plan pl;

	if (n < 1 || !s)
		return 0;
	make_plan(cfg, s, n, threads, &pl);
	return pl.lanes > 1 ? pl.lane_bytes * pl.lanes : cq_encode_sentences_bytes(cfg, s, n);
}

/* What every part reads: the batch and where the vectors go. */
typedef struct encode_parts
{
	const cq_model *m;
	const cq_sentence *s;
	const cq_dropout *dropout;
	size_t		lane_bytes;
	float	   *out;
} encode_parts;

static void
encode_part(void *arg, int k, int lo, int hi, void *ws)
{
	const encode_parts *e = arg;
	cq_error	err = {0};

	(void) k;
	/* checked with the whole batch before: cannot fail */
	(void) cq_encode(e->m, e->s + lo, hi - lo, e->dropout, ws, e->lane_bytes,
					 e->out + (size_t) lo * e->m->cfg.d_model, &err);
}

cq_code
cq_encode_parallel(const cq_model *m, const cq_sentence *s, int n, const cq_dropout *dropout,
				   int threads, void *ws, size_t ws_bytes, float *out, cq_error *err)
{
	cq_code		st = check(m, s, n, err);
	cq_parts_plan pl;
	encode_parts e = {m, s, dropout, 0, out};

	if (st)
		return st;
	make_plan(&m->cfg, s, n, threads, &pl);
	if (pl.lanes <= 1)
		return cq_encode(m, s, n, dropout, ws, ws_bytes, out, err);
	if (!ws || ws_bytes < pl.lane_bytes * pl.lanes)
		return cq_fail(err, CQ_EINTERNAL, "workspace of %zu bytes is too small, the batch needs %zu",
					   ws_bytes, pl.lane_bytes * pl.lanes);
	if (!out)
		return cq_fail(err, CQ_EINVAL, "the output array is missing");
	e.lane_bytes = pl.lane_bytes;
	/* a part's products run inline on its thread (common/parallel.h) */
	cq_parts_run(&pl, encode_part, &e, ws);
	return CQ_OK;
}
