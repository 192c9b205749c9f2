/*
 * The model side of the translator (decode.h): the encoder over newly
 * admitted sources, their cross-attention keys and values (once per layer),
 * and one incremental decoder step over all live hypotheses with cached
 * self-attention keys and values.
 *
 * The arithmetic per row is that of the teacher-forced forward (forward.c):
 * the same embedding, the same blocks (layers/block.h; only the attend
 * functions differ: cq_attention of one query row over keys 0 .. step is the
 * causal row `step`) and cq_log_softmax_row (whose values are the forward's
 * logp_gold bits).
 * Weight products run over all rows of the batch at once; attention runs per
 * sentence (cross) or per hypothesis (self), never across sentences.
 */
#include <string.h>

#include "common/parallel.h"
#include "nn/infer/decode.h"
#include "nn/layers/block.h"

/* A block pass over the translator's row buffers (nothing kept, no dropout). */
static cq_block_pass
rows_pass(cq_translator *t, bool target, long rows)
{
	return (cq_block_pass) {
		.m = t->m, .target = target, .rows = rows,
			.ld_d = t->ld_d, .ld_qkv = t->ld_qkv, .ld_f = t->ld_f,
			.h = t->h, .qkv = t->qkv, .ctx = t->ctx, .tmp = t->tmp, .ffn = t->ffn,
			.scores = t->scores, .arg = t,
	};
}

/* ---- encoder ----------------------------------------------------------- */

void
cq_decode_encode(cq_translator *t)
{
	const cq_model *m = t->m;
	const cq_model_config *c = &m->cfg;
	int			n = 0,
				d = c->d_model;
	long		rows = 0,
				row;
	cq_block_pass enc;

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
			cq_embed_token(m, false, cq_side_token(c, &t->pairs[b], false, p), p,
						   t->x + row * t->ld_d);
	cq_embed_norm(m, false, t->x, rows, t->ld_d);
	enc = rows_pass(t, false, rows);
	enc.pairs = t->pairs;
	enc.n_pairs = n;
	enc.self_attend = cq_packed_self_attend;
	cq_block_stack(&enc, t->x, NULL, t->x);
	cq_norm_forward(&m->enc_ln, t->x, t->h, enc.rows, enc.ld_d);
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
			int32_t		tok = s->step == 0 ? t->m->cfg.decoder_start_id
				: s->tok[j * t->T + s->step - 1];

			cq_embed_token(t->m, true, tok, s->step, t->x + rows * t->ld_d);
		}
	}
	cq_embed_norm(t->m, true, t->x, rows, t->ld_d);
	return rows;
}

/*
 * Attention over cached keys and values (stride ld_kv), no dropout, into the
 * slot's own scores (so that slots can attend on different threads).
 */
static cq_attention_args
cached_args(const cq_translator *t, const cq_slot *s, long ldq)
{
	int			d = t->m->cfg.d_model;

	return (cq_attention_args) {
		.heads = t->m->cfg.heads, .dh = d / t->m->cfg.heads, .scores = s->att,
			.ldq = (int) ldq, .ldk = (int) t->ld_kv, .ldv = (int) t->ld_kv,
			.ldo = (int) t->ld_d,
	};
}

/* Self-attention of a slot's rows over their caches, after storing k, v at `step`. */
static void
self_attend_slot(cq_translator *t, cq_slot *s, int l, const float *qkv, long ldq, float *ctx)
{
	int			d = t->m->cfg.d_model;
	cq_attention_args a = cached_args(t, s, ldq);

	for (int j = 0; j < s->nrows; j++)
	{
		long		r = s->row0 + j;
		float	   *kv = cq_decode_cache(t, s->cache[j], l);

		memcpy(kv + (long) s->step * t->ld_kv, qkv + r * ldq + d, sizeof(float) * 2 * d);
		a.q = qkv + r * ldq;
		a.k = kv;
		a.v = kv + d;
		a.out = ctx + r * t->ld_d;
		a.lq = 1;
		a.lk = s->step + 1;
		cq_attention(&a);
	}
}

/* Cross-attention of a slot's rows over its cached encoder keys/values. */
static void
cross_attend_slot(cq_translator *t, cq_slot *s, int l, const float *q, long ldq, float *ctx)
{
	int			d = t->m->cfg.d_model;
	cq_attention_args a = cached_args(t, s, ldq);

	a.q = q + (long) s->row0 * ldq;
	a.k = s->cross_kv + (long) l * t->S * t->ld_kv;
	a.v = a.k + d;
	a.out = ctx + (long) s->row0 * t->ld_d;
	a.lq = s->nrows;
	a.lk = s->src.len + 1;
	cq_attention(&a);
}

/*
 * Slots attend on the pool's threads (common/parallel.h): a slot's rows,
 * caches and scores are its own, and its arithmetic is the same on any
 * thread.
 */
typedef struct attend_job
{
	cq_translator *t;
	bool		cross;
	int			layer;
	const float *q;
	long		ldq;
	float	   *ctx;
} attend_job;

static void
attend_part(void *arg, int part, int nparts)
{
	const attend_job *j = arg;
	int			B = j->t->B;

	for (int i = B * part / nparts; i < B * (part + 1) / nparts; i++)
	{
		cq_slot    *s = &j->t->slots[i];

		if (s->state != SLOT_LIVE)
			continue;
		if (j->cross)
			cross_attend_slot(j->t, s, j->layer, j->q, j->ldq, j->ctx);
		else
			self_attend_slot(j->t, s, j->layer, j->q, j->ldq, j->ctx);
	}
}

static void
attend(cq_block_pass *bp, bool cross, int l, const float *q, long ldq, float *ctx)
{
	cq_translator *t = bp->arg;
	attend_job	j = {t, cross, l, q, ldq, ctx};
	int			threads = cq_parallel_threads();

	cq_parallel_run(attend_part, &j, t->B < threads ? t->B : threads);
}

static void
self_attend(cq_block_pass *bp, int l, const float *qkv, long ldq, float *ctx,
			cq_attn_keep *keep)
{
	attend(bp, false, l, qkv, ldq, ctx);
}

static void
cross_attend(cq_block_pass *bp, int l, const float *q, long ldq, float *ctx,
			 cq_attn_keep *keep)
{
	attend(bp, true, l, q, ldq, ctx);
}

/* Rows of the step's logits to log-probabilities, shared out to threads. */
typedef struct logp_rows
{
	float	   *logits;
	long		ld,
				rows;
	int			v;
	float		temp;
} logp_rows;

static void
logp_part(void *arg, int part, int nparts)
{
	const logp_rows *a = arg;

	for (long r = a->rows * part / nparts; r < a->rows * (part + 1) / nparts; r++)
	{
		float	   *lr = a->logits + r * a->ld;

		/* fairseq divides the logits by the temperature before log-softmax */
		if (a->temp != 1.0f)
			for (int v = 0; v < a->v; v++)
				lr[v] /= a->temp;
		cq_log_softmax_row(lr, a->v, lr);
	}
}

void
cq_decode_step(cq_translator *t)
{
	const cq_model *m = t->m;
	long		rows = gather_rows(t);
	cq_block_pass dec = rows_pass(t, true, rows);
	logp_rows	lp = {t->logits, t->ld_v, rows, m->cfg.tgt_vocab_size, (float) t->o.temperature};
	int			threads = cq_parallel_threads();

	dec.self_attend = self_attend;
	dec.cross_attend = cross_attend;
	cq_block_stack(&dec, t->x, NULL, t->x);
	cq_norm_forward(&m->dec_ln, t->x, t->h, dec.rows, dec.ld_d);
	cq_linear_rows(&m->output, t->h, t->ld_d, t->logits, t->ld_v, rows);
	/* a row's values do not depend on the thread that computes them */
	cq_parallel_run(logp_part, &lp, rows < threads ? (int) rows : threads);
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
