/*
 * The dual-encoder training pass (dual_pass.h): both sides of every pair
 * through the one encoder, their vectors, the additive-margin softmax in
 * both directions, and the backward.
 */
#include "nn/train/dual_pass.h"

#include <math.h>
#include <string.h>

#include "common/carve.h"
#include "nn/infer/forward.h"
#include "nn/layers/pool.h"
#include "nn/ops/blas.h"

/* The workspace, carved in this order (2n sentences: the n x, then the n y). */
typedef struct dual
{
	cq_sentence *sents;			/* [2n] */
	cq_pair    *pairs;			/* [2n] as encoder inputs */
	int32_t    *ids;			/* <s> ids of each */
	void	   *enc_ws;			/* the encoder side's (train_pass.h) */
	cq_pool_keep keep;			/* p, z [2n, d], norm [2n] */
	float	   *e,				/* [2n, d] the sentence vectors */
			   *sim,			/* [n, n] cosines x_i . y_j */
			   *dsim,			/* [n, n] d(loss)/d(sim) */
			   *de,				/* [2n, d] */
			   *tmp,			/* [2n, d] */
			   *dh;				/* [rows, d] d(loss)/d(encoder output) */
} dual;

/* Positions, squared lengths and the longest of the 2n sentences. */
static void
sentence_shape(const cq_pair *pairs, int n, long *rows, long *sum_sq, long *longest)
{
	*rows = *sum_sq = *longest = 0;
	for (int i = 0; i < n; i++)
		for (int side = 0; side < 2; side++)
		{
			long		l = (side ? pairs[i].tgt_len : pairs[i].src_len) + 2;

			*rows += l;
			*sum_sq += l * l;
			*longest = l > *longest ? l : *longest;
		}
}

static size_t
carve(const cq_model_config *c, const cq_pair *pairs, int n, char *base, dual *w)
{
	dual		unused,
			   *o = w ? w : &unused;
	cq_carver	cv = cq_carver_start(base);
	long		rows,
				sum_sq,
				longest,
				d = c->d_model;

	sentence_shape(pairs, n, &rows, &sum_sq, &longest);
	o->sents = cq_carve(&cv, sizeof(cq_sentence) * 2 * n);
	o->pairs = cq_carve(&cv, sizeof(cq_pair) * 2 * n);
	o->ids = cq_carve(&cv, sizeof(int32_t) * (rows - 2 * n));
	o->enc_ws = cq_carve(&cv, cq_encoder_pass_workspace_bytes(c, rows, sum_sq, longest));
	o->keep.p = cq_carve_floats(&cv, 2 * n * d);
	o->keep.z = cq_carve_floats(&cv, 2 * n * d);
	o->keep.norm = cq_carve_floats(&cv, 2 * n);
	o->e = cq_carve_floats(&cv, 2 * n * d);
	o->sim = cq_carve_floats(&cv, (long) n * n);
	o->dsim = cq_carve_floats(&cv, (long) n * n);
	o->de = cq_carve_floats(&cv, 2 * n * d);
	o->tmp = cq_carve_floats(&cv, 2 * n * d);
	o->dh = cq_carve_floats(&cv, rows * d);
	return cq_carver_bytes(&cv);
}

size_t
cq_dual_pass_workspace_bytes(const cq_model_config *cfg, const cq_pair *pairs, int n)
{
	return carve(cfg, pairs, n, NULL, NULL);
}

/*
 * One direction's softmax cross-entropies: for each of the n rows (row r of
 * sim at sim[r * rs + j * cs]) the loss of s (sim - m [r = j]) with answer
 * r; nll the same with margin 0.  d(loss)/d(sim) added into dsim.
 */
static void
direction(const float *sim, float *dsim, int n, long rs, long cs, float m, float s,
		  double *loss, double *nll)
{
	for (int r = 0; r < n; r++)
	{
		double		mx = -INFINITY,
					mx0 = -INFINITY,
					sum = 0.0,
					sum0 = 0.0;

		for (int j = 0; j < n; j++)
		{
			double		v = sim[r * rs + j * cs];

			mx = fmax(mx, s * (v - (j == r ? m : 0.0)));
			mx0 = fmax(mx0, s * v);
		}
		for (int j = 0; j < n; j++)
		{
			double		v = sim[r * rs + j * cs];

			sum += exp(s * (v - (j == r ? m : 0.0)) - mx);
			sum0 += exp(s * v - mx0);
		}
		*loss += mx + log(sum) - s * (sim[r * rs + r * cs] - m);
		*nll += mx0 + log(sum0) - s * sim[r * rs + r * cs];
		for (int j = 0; j < n; j++)
		{
			double		v = sim[r * rs + j * cs],
						p = exp(s * (v - (j == r ? m : 0.0)) - mx) / sum;

			dsim[r * rs + j * cs] += (float) (s * (p - (j == r ? 1.0 : 0.0)));
		}
	}
}

/* sim = e_x e_y^T, the loss of both directions, dsim, then de. */
static void
contrast(dual *w, int n, int d, float margin, float scale, cq_train_pass_out *out)
{
	const float *ex = w->e,
			   *ey = w->e + (long) n * d;

	cq_sgemm(false, true, n, n, d, 1.0f, ex, d, ey, d, 0.0f, w->sim, n);
	memset(w->dsim, 0, sizeof(float) * n * n);
	out->loss = out->nll = 0.0;
	direction(w->sim, w->dsim, n, n, 1, margin, scale, &out->loss, &out->nll);	/* x -> y */
	direction(w->sim, w->dsim, n, 1, n, margin, scale, &out->loss, &out->nll);	/* y -> x */
	/* de_x = dsim e_y, de_y = dsim^T e_x */
	cq_sgemm(false, false, n, d, n, 1.0f, w->dsim, n, ey, d, 0.0f, w->de, d);
	cq_sgemm(true, false, n, d, n, 1.0f, w->dsim, n, ex, d, 0.0f, w->de + (long) n * d, d);
}

/* One side of a pair as an encoder takes it. */
static cq_code
check_side(const cq_model_config *c, int i, const char *side, const int32_t *ids, int len,
		   cq_error *err)
{
	int			most = cq_config_sentence_tokens(c);

	if (len < 0 || (len > 0 && !ids))
		return cq_fail(err, CQ_EINVAL, "pair %d: the %s has a negative length or no ids", i, side);
	if (len > most)
		return cq_fail(err, CQ_EINVAL, "pair %d: the %s has %d tokens, the model takes at most %d",
					   i, side, len, most);
	for (int t = 0; t < len; t++)
		if (ids[t] < 0 || ids[t] >= c->src_vocab_size)
			return cq_fail(err, CQ_EINVAL, "pair %d: %s id %d is outside the vocabulary of %d",
						   i, side, ids[t], c->src_vocab_size);
	return CQ_OK;
}

cq_code
cq_dual_pass_check(const cq_model *m, const cq_pair *pairs, int n, cq_error *err)
{
	long		positions = 0;
	cq_code		s;

	if (m->cfg.kind != CQ_KIND_ENCODER)
		return cq_fail(err, CQ_EINVAL, "a translation model is not trained as a dual encoder");
	if (n < 1 || !pairs)
		return cq_fail(err, CQ_EINVAL, "a batch needs at least one pair");
	for (int i = 0; i < n; i++)
	{
		if ((s = check_side(&m->cfg, i, "source", pairs[i].src, pairs[i].src_len, err)) ||
			(s = check_side(&m->cfg, i, "target", pairs[i].tgt, pairs[i].tgt_len, err)))
			return s;
		positions += pairs[i].src_len + pairs[i].tgt_len + 4;
	}
	if (positions > CQ_MAX_BATCH_POSITIONS)
		return cq_fail(err, CQ_EINVAL, "a batch of %ld positions is too large (at most %d)",
					   positions, CQ_MAX_BATCH_POSITIONS);
	return CQ_OK;
}

cq_code
cq_dual_pass(const cq_model *m, cq_model *grad, const cq_pair *pairs, int n,
			 const cq_train_dropout *dropout, float margin, float scale, void *ws,
			 size_t ws_bytes, cq_train_pass_out *out, cq_error *err)
{
	int			d = m->cfg.d_model;
	dual		w;
	const float *h;
	cq_code		s;

	if ((s = cq_dual_pass_check(m, pairs, n, err)))
		return s;
	if (m->compact)
		return cq_fail(err, CQ_EINVAL, "a compacted model cannot be trained");
	if (!grad || !cq_config_equal(&m->cfg, &grad->cfg))
		return cq_fail(err, CQ_EINVAL, "the gradient model does not match the model");
	if (!ws || ws_bytes < cq_dual_pass_workspace_bytes(&m->cfg, pairs, n))
		return cq_fail(err, CQ_EINTERNAL, "workspace of %zu bytes is too small, the batch needs %zu",
					   ws_bytes, cq_dual_pass_workspace_bytes(&m->cfg, pairs, n));
	carve(&m->cfg, pairs, n, ws, &w);
	for (int i = 0; i < n; i++)
	{
		w.sents[i] = (cq_sentence) {pairs[i].src, pairs[i].src_len, 2 * pairs[i].key};
		w.sents[n + i] = (cq_sentence) {pairs[i].tgt, pairs[i].tgt_len, 2 * pairs[i].key + 1};
	}
	cq_sentence_pairs(w.sents, 2 * n, w.ids, w.pairs);
	h = cq_encoder_pass_forward(m, w.pairs, 2 * n, dropout, w.enc_ws);
	cq_pool_forward(m, w.pairs, 2 * n, h, NULL, w.e, &w.keep);
	contrast(&w, n, d, margin, scale, out);
	cq_pool_backward(m, grad, w.pairs, 2 * n, w.e, &w.keep, w.de, w.tmp, w.dh);
	cq_encoder_pass_backward(m, grad, w.pairs, 2 * n, dropout, w.enc_ws, w.dh);
	out->tokens = 0;
	for (int i = 0; i < 2 * n; i++)
		out->tokens += w.sents[i].len + 2;
	return CQ_OK;
}
