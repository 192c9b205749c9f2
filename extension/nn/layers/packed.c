/* Helpers over packed batches (packed.h). */
#include "nn/layers/packed.h"

#include <math.h>
#include <string.h>

#include "nn/layers/norm.h"
#include "nn/model/positions.h"
#include "nn/ops/qgemm.h"
#include "nn/ops/rowgemm.h"

void
cq_embed_token(const cq_model *m, bool target, int32_t tok, int pos, float *x)
{
	int			d = m->cfg.d_model;
	const float *table = target ? m->tgt_embed : m->src_embed,
			   *pe = cq_position_row(m, target, pos),
			   *tt = target ? NULL : m->tok_type;
	const void *codes = target ? m->tgt_embed_codes : m->src_embed_codes;
	float		scale = cq_embed_scale(&m->cfg);

	if (codes)
	{
		/* embedding_precision int8: the row's codes times its scale */
		cq_qgemm_packed_row(codes, tok, x);
		for (int i = 0; i < d; i++)
			x[i] = x[i] * scale + (pe ? pe[i] : 0.0f);
	}
	else if (!table)
	{
		/* a compact model's tied embedding is its output projection, packed */
		for (int i = 0; i < d; i++)
			x[i] = cq_rowgemm_packed_at(m->output.packed, d, tok, i) * scale + (pe ? pe[i] : 0.0f);
	}
	else
		for (int i = 0; i < d; i++)
			x[i] = table[(long) tok * d + i] * scale + (pe ? pe[i] : 0.0f);
	/*
	 * a position past the sinusoid table: its row added now, the same sum
	 * (x + 0 is x, then x + pe rounds once, as x * scale + pe does: the core
	 * is built with -ffp-contract=off)
	 */
	if (!pe)
		cq_sinusoid_add(x, pos, d, m->cfg.position_offset, m->cfg.sinusoid_half);
	/* an encoder's token type vector (BERT: segment 0 at every position) */
	for (int i = 0; tt && i < d; i++)
		x[i] += tt[i];
}

float
cq_embed_scale(const cq_model_config *c)
{
	return c->scale_embeddings ? sqrtf((float) c->d_model) : 1.0f;
}

void
cq_embed_norm(const cq_model *m, bool target, float *x, long rows, long ld)
{
	cq_norm_forward(target ? &m->tgt_embed_ln : &m->src_embed_ln, x, x, rows, ld);
}

void
cq_embed_packed(const cq_model *m, const cq_pair *pairs, int n, bool target,
				float *x)
{
	long		row = 0;

	for (int b = 0; b < n; b++)
		for (int t = 0; t < cq_side_positions(&pairs[b], target); t++, row++)
			cq_embed_token(m, target, cq_side_token(&m->cfg, &pairs[b], target, t), t,
						   x + row * m->cfg.d_model);
}

void
cq_drop_packed(cq_dropout_stream *ds, const cq_pair *pairs, int n, bool target,
			   float p, uint32_t site, float *x, int cols)
{
	long		row = 0;

	if (!ds->on || p <= 0.0f)
		return;
	for (int b = 0; b < n; b++)
	{
		int			len = cq_side_positions(&pairs[b], target);

		ds->pair_key = pairs[b].key;
		for (int t = 0; t < len; t++, row++)
			cq_dropout_apply(ds, p, site, (uint32_t) t, x + row * cols, cols);
	}
}

long
cq_logit_block_rows(const cq_model_config *c, long rows)
{
	long		r = CQ_LOGIT_FLOATS / c->tgt_vocab_size;

	r = r < 64 ? 64 : r;
	return rows < r ? rows : r;
}

void
cq_sentence_pairs(const cq_sentence *s, int n, int32_t *ids_buf, cq_pair *pairs)
{
	for (int i = 0; i < n; i++)
	{
		ids_buf[0] = CQ_BOS_ID;
		if (s[i].len > 0)
			memcpy(ids_buf + 1, s[i].ids, sizeof(int32_t) * s[i].len);
		pairs[i] = (cq_pair) {ids_buf, s[i].len + 1, NULL, 0, s[i].key};
		ids_buf += s[i].len + 1;
	}
}
