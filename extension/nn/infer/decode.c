/*
 * The model side of the translator (decode.h): the encoder over newly
 * admitted sources, their cross-attention keys and values (once per layer),
 * and one incremental decoder step over all live hypotheses with cached
 * self-attention keys and values.
 *
 * The arithmetic per row is that of the teacher-forced forward (forward.c):
 * the same embedding, layer norm, cq_linear_rows, cq_attention (one query
 * row over keys 0 .. step is the causal row `step`), activation and
 * cq_log_softmax_row (whose values are the forward's logp_gold bits).
 * Weight products run over all rows of the batch at once; attention runs per
 * sentence (cross) or per hypothesis (self), never across sentences.
 */
#include <string.h>

#include "nn/infer/decode.h"
#include "nn/ops/ops.h"
#include "nn/layers/packed.h"

/* y = LN(x) row by row (strided rows; per-row calls give the same bits). */
static void
ln_rows(const cq_translator *t, const float *x, float *y, long rows,
		const cq_layer_norm *ln)
{
	int			d = t->m->cfg.d_model;

	for (long r = 0; r < rows; r++)
		cq_layer_norm_rows(x + r * t->ld_d, y + r * t->ld_d, 1, d, ln->w, ln->b,
						   CQ_LAYERNORM_EPS);
}

/* x += y over rows of d. */
static void
add_rows(const cq_translator *t, float *x, const float *y, long rows)
{
	int			d = t->m->cfg.d_model;

	for (long r = 0; r < rows; r++)
		for (int i = 0; i < d; i++)
			x[r * t->ld_d + i] += y[r * t->ld_d + i];
}

/* x += FFN(LN(x)) over rows. */
static void
ffn_block(cq_translator *t, long rows, const cq_layer_norm *ln,
		  const cq_linear *fc1, const cq_linear *fc2)
{
	const cq_model_config *c = &t->m->cfg;

	ln_rows(t, t->x, t->h, rows, ln);
	cq_linear_rows(fc1, t->h, t->ld_d, t->ffn, t->ld_f, rows);
	for (long r = 0; r < rows; r++)
	{
		if (c->activation == CQ_ACT_GELU)
			cq_gelu_erf(t->ffn + r * t->ld_f, c->ffn_dim);
		else
			cq_relu(t->ffn + r * t->ld_f, c->ffn_dim);
	}
	cq_linear_rows(fc2, t->ffn, t->ld_f, t->tmp, t->ld_d, rows);
	add_rows(t, t->x, t->tmp, rows);
}

static cq_attention_args
attention_args(const cq_translator *t)
{
	const cq_model_config *c = &t->m->cfg;

	return (cq_attention_args) {
		.heads = c->heads, .dh = c->d_model / c->heads, .causal = false,
			.scores = t->scores, .drop = NULL,
	};
}

/* ---- encoder ----------------------------------------------------------- */

/* x += SelfAttn(LN(x)) over the packed sources being encoded. */
static void
encoder_attn(cq_translator *t, int n, long rows, const cq_encoder_layer *L)
{
	int			d = t->m->cfg.d_model;
	long		row = 0;
	cq_attention_args a = attention_args(t);

	ln_rows(t, t->x, t->h, rows, &L->attn_ln);
	cq_linear_rows(&L->qkv, t->h, t->ld_d, t->qkv, t->ld_qkv, rows);
	a.ldq = a.ldk = a.ldv = t->ld_qkv;
	a.ldo = t->ld_d;
	for (int b = 0; b < n; b++)
	{
		a.q = t->qkv + row * t->ld_qkv;
		a.k = a.q + d;
		a.v = a.q + 2 * d;
		a.out = t->ctx + row * t->ld_d;
		a.lq = a.lk = cq_side_positions(&t->pairs[b], false);
		cq_attention(&a);
		row += a.lq;
	}
	cq_linear_rows(&L->attn_out, t->ctx, t->ld_d, t->tmp, t->ld_d, rows);
	add_rows(t, t->x, t->tmp, rows);
}

void
cq_decode_encode(cq_translator *t)
{
	const cq_model *m = t->m;
	const cq_model_config *c = &m->cfg;
	int			n = 0,
				d = c->d_model;
	long		rows = 0,
				row;

	for (int i = 0; i < t->B; i++)
	{
		cq_slot    *s = &t->slots[i];

		if (s->state != SLOT_NEW)
			continue;
		t->encoding[n] = s;
		t->pairs[n] = (cq_pair) {s->src.ids, s->src.len, NULL, 0, s->src.id};
		rows += cq_side_positions(&t->pairs[n], false);
		n++;
	}
	if (n == 0)
		return;
	row = 0;
	for (int b = 0; b < n; b++)
		for (int p = 0; p < cq_side_positions(&t->pairs[b], false); p++, row++)
			cq_embed_token(m, false, cq_side_token(&t->pairs[b], false, p), p,
						   t->x + row * t->ld_d);
	for (int i = 0; i < c->encoder_layers; i++)
	{
		encoder_attn(t, n, rows, &m->enc[i]);
		ffn_block(t, rows, &m->enc[i].ffn_ln, &m->enc[i].fc1, &m->enc[i].fc2);
	}
	ln_rows(t, t->x, t->h, rows, &m->enc_ln);
	/* cross-attention keys and values of every decoder layer, once */
	for (int l = 0; l < c->decoder_layers; l++)
	{
		cq_linear_rows(&m->dec[l].cross_kv, t->h, t->ld_d, t->qkv, t->ld_qkv, rows);
		row = 0;
		for (int b = 0; b < n; b++)
		{
			cq_slot    *s = t->encoding[b];
			float	   *kv = s->cross_kv + (long) l * t->S * t->ld_kv;

			for (int p = 0; p <= s->src.len; p++, row++)
				memcpy(kv + p * t->ld_kv, t->qkv + row * t->ld_qkv, sizeof(float) * 2 * d);
		}
	}
	for (int b = 0; b < n; b++)
		t->encoding[b]->state = SLOT_LIVE;
}

/* ---- one decoder step ---------------------------------------------------- */

/* The rows' input: the last token of each hypothesis at position `step`. */
static long
gather_rows(cq_translator *t)
{
	long		rows = 0;

	for (int i = 0; i < t->B; i++)
	{
		cq_slot    *s = &t->slots[i];

		if (s->state != SLOT_LIVE)
			continue;
		s->row0 = (int) rows;
		for (int j = 0; j < s->nrows; j++, rows++)
		{
			int32_t		tok = s->step == 0 ? CQ_EOS_ID : s->tok[j * t->T + s->step - 1];

			cq_embed_token(t->m, true, tok, s->step, t->x + rows * t->ld_d);
		}
	}
	return rows;
}

/* x += SelfAttn(LN(x)): each row's k, v go to its cache at `step`. */
static void
decoder_self_attn(cq_translator *t, long rows, const cq_decoder_layer *L, int l)
{
	int			d = t->m->cfg.d_model;
	cq_attention_args a = attention_args(t);

	ln_rows(t, t->x, t->h, rows, &L->self_ln);
	cq_linear_rows(&L->self_qkv, t->h, t->ld_d, t->qkv, t->ld_qkv, rows);
	a.ldq = t->ld_qkv;
	a.ldk = a.ldv = t->ld_kv;
	a.ldo = t->ld_d;
	a.lq = 1;
	for (int i = 0; i < t->B; i++)
	{
		cq_slot    *s = &t->slots[i];

		if (s->state != SLOT_LIVE)
			continue;
		for (int j = 0; j < s->nrows; j++)
		{
			long		r = s->row0 + j;
			float	   *kv = cq_decode_cache(t, s->cache[j], l);

			memcpy(kv + (long) s->step * t->ld_kv, t->qkv + r * t->ld_qkv + d,
				   sizeof(float) * 2 * d);
			a.q = t->qkv + r * t->ld_qkv;
			a.k = kv;
			a.v = kv + d;
			a.out = t->ctx + r * t->ld_d;
			a.lk = s->step + 1;
			cq_attention(&a);
		}
	}
	cq_linear_rows(&L->self_out, t->ctx, t->ld_d, t->tmp, t->ld_d, rows);
	add_rows(t, t->x, t->tmp, rows);
}

/* x += CrossAttn(LN(x)) per sentence over its cached encoder keys/values. */
static void
decoder_cross_attn(cq_translator *t, long rows, const cq_decoder_layer *L, int l)
{
	int			d = t->m->cfg.d_model;
	float	   *q = t->qkv;
	cq_attention_args a = attention_args(t);

	ln_rows(t, t->x, t->h, rows, &L->cross_ln);
	cq_linear_rows(&L->cross_q, t->h, t->ld_d, q, t->ld_d, rows);
	a.ldq = t->ld_d;
	a.ldk = a.ldv = t->ld_kv;
	a.ldo = t->ld_d;
	for (int i = 0; i < t->B; i++)
	{
		cq_slot    *s = &t->slots[i];

		if (s->state != SLOT_LIVE)
			continue;
		a.q = q + (long) s->row0 * t->ld_d;
		a.k = s->cross_kv + (long) l * t->S * t->ld_kv;
		a.v = a.k + d;
		a.out = t->ctx + (long) s->row0 * t->ld_d;
		a.lq = s->nrows;
		a.lk = s->src.len + 1;
		cq_attention(&a);
	}
	cq_linear_rows(&L->cross_out, t->ctx, t->ld_d, t->tmp, t->ld_d, rows);
	add_rows(t, t->x, t->tmp, rows);
}

void
cq_decode_step(cq_translator *t)
{
	const cq_model *m = t->m;
	const cq_model_config *c = &m->cfg;
	long		rows = gather_rows(t);
	float		temp = (float) t->o.temperature;

	for (int l = 0; l < c->decoder_layers; l++)
	{
		const cq_decoder_layer *L = &m->dec[l];

		decoder_self_attn(t, rows, L, l);
		decoder_cross_attn(t, rows, L, l);
		ffn_block(t, rows, &L->ffn_ln, &L->fc1, &L->fc2);
	}
	ln_rows(t, t->x, t->h, rows, &m->dec_ln);
	cq_linear_rows(&m->output, t->h, t->ld_d, t->logits, t->ld_v, rows);
	for (long r = 0; r < rows; r++)
	{
		float	   *lr = t->logits + r * t->ld_v;

		/* fairseq divides the logits by the temperature before log-softmax */
		if (temp != 1.0f)
			for (int v = 0; v < c->tgt_vocab_size; v++)
				lr[v] /= temp;
		cq_log_softmax_row(lr, c->tgt_vocab_size, lr);
	}
}

/* ---- cache reordering ---------------------------------------------------- */

void
cq_decode_reorder(cq_translator *t, cq_slot *s, const int *src_row, int n)
{
	int			K = t->K,
				base = s->index * K,
				next_free = 0;
	int		   *newc = t->iscratch + 2 * K;
	bool	   *claimed = t->bscratch + K,
			   *used = t->bscratch + 2 * K;

	memset(claimed, 0, sizeof(bool) * K);
	memset(used, 0, sizeof(bool) * K);
	/* a row takes over its source's cache if no earlier row did */
	for (int j = 0; j < n; j++)
	{
		newc[j] = -1;
		if (!claimed[src_row[j]])
		{
			claimed[src_row[j]] = true;
			newc[j] = s->cache[src_row[j]];
			used[newc[j] - base] = true;
		}
	}
	/* the others copy the prefix into a cache no row kept */
	for (int j = 0; j < n; j++)
	{
		if (newc[j] >= 0)
			continue;
		while (used[next_free])
			next_free++;
		used[next_free] = true;
		newc[j] = base + next_free;
		for (int l = 0; l < t->m->cfg.decoder_layers; l++)
			memcpy(cq_decode_cache(t, newc[j], l),
				   cq_decode_cache(t, s->cache[src_row[j]], l),
				   sizeof(float) * (s->step + 1) * t->ld_kv);
	}
	memcpy(s->cache, newc, sizeof(int) * n);
}
