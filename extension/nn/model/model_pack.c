/*
 * Packing a model for inference (model.h, rowgemm.h): every linear weight and
 * the output projection, once, so that no scoring call repacks them and every
 * product runs the row-independent kernel.  An int8 model (config precision)
 * gets its linears quantized per output row and packed for qgemm.h instead;
 * one loaded from an int8 image (cq_model_new_coded) is packed from its
 * stored codes as it is loaded and compact already.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/mem.h"
#include "nn/model/model.h"
#include "nn/ops/qgemm.h"
#include "nn/ops/rowgemm.h"

typedef void (*linear_fn) (cq_linear *l, void *ctx);

/*
 * fn on every linear of m, in layout order, then the output projection (a
 * translation model's) or the pooler (an encoder's, if it has one).
 */
static void
each_linear(cq_model *m, linear_fn fn, void *ctx)
{
	for (int i = 0; i < m->cfg.encoder_layers; i++)
	{
		cq_encoder_layer *e = &m->enc[i];
		cq_linear  *l[] = {&e->qkv, &e->attn_out, &e->fc1, &e->fc2};

		for (int j = 0; j < (int) (sizeof(l) / sizeof(l[0])); j++)
			fn(l[j], ctx);
	}
	for (int i = 0; i < m->cfg.decoder_layers; i++)
	{
		cq_decoder_layer *d = &m->dec[i];
		cq_linear  *l[] = {&d->self_qkv, &d->self_out, &d->cross_q, &d->cross_kv,
		&d->cross_out, &d->fc1, &d->fc2};

		for (int j = 0; j < (int) (sizeof(l) / sizeof(l[0])); j++)
			fn(l[j], ctx);
	}
	if (m->cfg.kind != CQ_KIND_ENCODER)
		fn(&m->output, ctx);
	else if (m->pooler.w || m->pooler.packed || m->pooler.qpacked)
		fn(&m->pooler, ctx);
}

/*
 * fn on the token embeddings that an int8 model with embedding_precision
 * int8 reads as codes (cq_embed_token), each as a linear of one row per
 * token, after each_linear: the source embedding, and the target one unless
 * shared.  A tied target embedding of a translation model has the output
 * projection's codes already (the same rows, by the same rule).
 */
static void
each_embedding(cq_model *m, linear_fn fn, void *ctx)
{
	const cq_model_config *c = &m->cfg;
	cq_linear	src = {.w = m->src_embed, .out = c->src_vocab_size, .in = c->d_model},
				tgt = {.w = m->tgt_embed, .out = c->tgt_vocab_size, .in = c->d_model};
	bool		tied = c->tie_output && c->kind != CQ_KIND_ENCODER;

	if (c->precision != CQ_PRECISION_INT8 || c->embedding_precision != CQ_PRECISION_INT8)
		return;
	if (c->share_embeddings && tied)
		src.qpacked = m->output.qpacked;
	else
		fn(&src, ctx);
	if (c->share_embeddings)
		tgt.qpacked = src.qpacked;
	else if (tied)
		tgt.qpacked = m->output.qpacked;
	else
		fn(&tgt, ctx);
	m->src_embed_codes = src.qpacked;
	m->tgt_embed_codes = tgt.qpacked;
}

/* Where the packed copies go, and in which form. */
typedef struct pack_state
{
	bool		int8;
	int			bits;			/* int8: the weights' code width */
	size_t		bytes;			/* count: the total; pack: the next offset */
	unsigned char *base;
	int8_t	   *q;				/* int8: one layer's codes and scales */
	float	   *scale;
	bool		too_large;		/* a layer qgemm cannot take (k > CQ_QGEMM_MAX_K) */
} pack_state;

/* Bytes of one packed weight, rounded up to keep the next 64-byte aligned. */
static size_t
slot(const pack_state *st, const cq_linear *l)
{
	size_t		b = st->int8 ? cq_qgemm_packed_bytes(l->out, l->in)
		: cq_rowgemm_packed_floats(l->out, l->in) * sizeof(float);

	return (b + 63) / 64 * 64;
}

static void
count(cq_linear *l, void *ctx)
{
	pack_state *st = ctx;

	if (st->int8 && cq_qgemm_packed_bytes(l->out, l->in) == 0)
		st->too_large = true;
	st->bytes += slot(st, l);
}

static void
pack(cq_linear *l, void *ctx)
{
	pack_state *st = ctx;
	void	   *at = st->base + st->bytes;

	if (st->int8)
	{
		cq_qgemm_quantize_weights(l->w, l->out, l->in, st->bits, st->q, st->scale);
		cq_qgemm_pack(st->q, st->scale, l->out, l->in, st->bits, at);
		l->qpacked = at;
	}
	else
	{
		cq_rowgemm_pack(l->w, l->in, l->out, l->in, at);
		l->packed = at;
	}
	st->bytes += slot(st, l);
}

static void
forget(cq_linear *l, void *ctx)
{
	l->packed = NULL;
	l->qpacked = NULL;
}

/* The largest linear's element count (the int8 quantization scratch). */
static void
largest(cq_linear *l, void *ctx)
{
	size_t	   *n = ctx;

	if ((size_t) l->out * l->in > *n)
		*n = (size_t) l->out * l->in;
}

cq_code
cq_model_pack(cq_model *m, cq_error *err)
{
	pack_state	st = {.int8 = m->cfg.precision == CQ_PRECISION_INT8, .bits = m->cfg.weight_bits};
	size_t		most = 0;

	if (m->compact)
		return CQ_OK;			/* packed already: the packed copies are the weights */
	cq_model_unpack(m);
	each_linear(m, count, &st);
	each_embedding(m, count, &st);
	if (st.too_large)
		return cq_fail(err, CQ_EINVAL, "an int8 model's layers take at most %d inputs",
					   CQ_QGEMM_MAX_K);
	m->packed_raw = cq_alloc(st.bytes + 64);
	if (!m->packed_raw)
		return cq_fail(err, CQ_ENOMEM, "out of memory packing a model (%zu bytes)", st.bytes);
	m->packed_bytes = st.bytes;
	st.base = (unsigned char *) (((uintptr_t) m->packed_raw + 63) & ~(uintptr_t) 63);
	st.bytes = 0;
	if (st.int8)
	{
		each_linear(m, largest, &most);
		each_embedding(m, largest, &most);
		st.q = cq_alloc(most);
		/* one scale per row of the largest: a vocabulary or 3 d */
		st.scale = cq_alloc(sizeof(float) *
							(size_t) (m->cfg.src_vocab_size + m->cfg.tgt_vocab_size +
									  3 * m->cfg.d_model + m->cfg.ffn_dim));
		if (!st.q || !st.scale)
		{
			cq_free(st.q);
			cq_free(st.scale);
			cq_model_unpack(m);
			return cq_fail(err, CQ_ENOMEM, "out of memory quantizing a model");
		}
	}
	each_linear(m, pack, &st);
	each_embedding(m, pack, &st);
	cq_free(st.q);
	cq_free(st.scale);
	return CQ_OK;
}

void
cq_model_unpack(cq_model *m)
{
	if (m->compact)
		return;					/* the packed copies are the only ones */
	each_linear(m, forget, NULL);
	each_embedding(m, forget, NULL);
	cq_free(m->packed_raw);
	m->packed_raw = NULL;
	m->packed_bytes = 0;
}

/* ---- compaction: one copy of each weight ---------------------------------- */

typedef void (*view_fn) (float **view, void *ctx);

/* fn on every pointer of m into its parameter block. */
static void
each_view(cq_model *m, view_fn fn, void *ctx)
{
	float	  **top[] = {&m->src_embed, &m->tgt_embed, &m->src_pos, &m->tgt_pos, &m->out_proj,
		&m->output.w, &m->output.b, &m->out_bias, &m->enc_ln.w, &m->enc_ln.b, &m->dec_ln.w,
	&m->dec_ln.b, &m->src_embed_ln.w, &m->src_embed_ln.b, &m->tgt_embed_ln.w, &m->tgt_embed_ln.b,
	&m->tok_type, &m->pooler.w, &m->pooler.b};

	for (int i = 0; i < (int) (sizeof(top) / sizeof(top[0])); i++)
		fn(top[i], ctx);
	for (int i = 0; i < m->cfg.encoder_layers; i++)
	{
		cq_encoder_layer *e = &m->enc[i];
		float	  **v[] = {&e->attn_ln.w, &e->attn_ln.b, &e->qkv.w, &e->qkv.b,
			&e->attn_out.w, &e->attn_out.b, &e->ffn_ln.w, &e->ffn_ln.b,
		&e->fc1.w, &e->fc1.b, &e->fc2.w, &e->fc2.b};

		for (int j = 0; j < (int) (sizeof(v) / sizeof(v[0])); j++)
			fn(v[j], ctx);
	}
	for (int i = 0; i < m->cfg.decoder_layers; i++)
	{
		cq_decoder_layer *d = &m->dec[i];
		float	  **v[] = {&d->self_ln.w, &d->self_ln.b, &d->self_qkv.w, &d->self_qkv.b,
			&d->self_out.w, &d->self_out.b, &d->cross_ln.w, &d->cross_ln.b,
			&d->cross_q.w, &d->cross_q.b, &d->cross_kv.w, &d->cross_kv.b,
			&d->cross_out.w, &d->cross_out.b, &d->ffn_ln.w, &d->ffn_ln.b,
		&d->fc1.w, &d->fc1.b, &d->fc2.w, &d->fc2.b};

		for (int j = 0; j < (int) (sizeof(v) / sizeof(v[0])); j++)
			fn(v[j], ctx);
	}
}

/* The tensors inference still reads once every linear is packed. */
typedef struct keep_map
{
	const cq_model *m;
	bool	   *keep;			/* [n_tensors] */
	float	   *base;			/* the new block */
	size_t	   *offset;			/* [n_tensors] in the new block */
} keep_map;

static int
tensor_at(const cq_model *m, const float *p)
{
	for (int t = 0; t < m->n_tensors; t++)
		if (m->params + m->tensors[t].offset == p)
			return t;
	return -1;
}

/*
 * Every linear's weight is dropped, the output projection's too when it is
 * the (tied) target embedding: the embedding is then read from the packed
 * copy (cq_embed_token).  An int8 model keeps a tied embedding in float32
 * unless its embeddings are codes too (mark_embeddings): the projection's
 * codes do not give the float32 values.
 */
static void
mark_linear(cq_linear *l, void *ctx)
{
	keep_map   *k = ctx;
	int			t = tensor_at(k->m, l->w);

	if (t >= 0 && !(l->qpacked && (l->w == k->m->tgt_embed || l->w == k->m->src_embed)))
		k->keep[t] = false;
}

/* Embeddings read as codes (cq_embed_token) need no float32 copy either. */
static void
mark_embeddings(keep_map *k)
{
	const cq_model *m = k->m;
	int			t;

	if (m->src_embed_codes && (t = tensor_at(m, m->src_embed)) >= 0)
		k->keep[t] = false;
	if (m->tgt_embed_codes && (t = tensor_at(m, m->tgt_embed)) >= 0)
		k->keep[t] = false;
}

static void
move_view(float **view, void *ctx)
{
	keep_map   *k = ctx;
	int			t;

	if (!*view)
		return;
	t = tensor_at(k->m, *view);
	*view = t >= 0 && k->keep[t] ? k->base + k->offset[t] : NULL;
}

cq_code
cq_model_compact(cq_model *m, cq_error *err)
{
	keep_map	k = {m};
	size_t		floats = 0;
	void	   *raw;
	int			n = 0;

	if (m->compact)
		return CQ_OK;
	if (!m->packed_raw)
		return cq_fail(err, CQ_EINVAL, "only a packed model can be compacted");
	k.keep = cq_alloc(sizeof(bool) * m->n_tensors);
	k.offset = cq_alloc(sizeof(size_t) * m->n_tensors);
	if (!k.keep || !k.offset)
	{
		cq_free(k.keep);
		cq_free(k.offset);
		return cq_fail(err, CQ_ENOMEM, "out of memory compacting a model");
	}
	for (int t = 0; t < m->n_tensors; t++)
		k.keep[t] = true;
	each_linear(m, mark_linear, &k);
	mark_embeddings(&k);
	for (int t = 0; t < m->n_tensors; t++)
		if (k.keep[t])
		{
			k.offset[t] = floats;
			floats += (m->tensors[t].numel + 15) / 16 * 16;
		}
	raw = cq_alloc(floats * sizeof(float) + 64);
	if (!raw)
	{
		cq_free(k.keep);
		cq_free(k.offset);
		return cq_fail(err, CQ_ENOMEM, "out of memory compacting a model (%zu floats)",
						  floats);
	}
	k.base = (float *) (((uintptr_t) raw + 63) & ~(uintptr_t) 63);
	for (int t = 0; t < m->n_tensors; t++)
		if (k.keep[t])
			memcpy(k.base + k.offset[t], m->params + m->tensors[t].offset,
				   sizeof(float) * m->tensors[t].numel);
	each_view(m, move_view, &k);
	/* the table now lists what the block holds, at its new offsets */
	for (int t = 0; t < m->n_tensors; t++)
		if (k.keep[t])
		{
			m->tensors[n] = m->tensors[t];
			m->tensors[n++].offset = k.offset[t];
		}
	m->n_tensors = n;
	m->n_floats = floats;
	cq_free(m->raw);
	m->raw = raw;
	m->params = k.base;
	m->compact = true;
	cq_free(k.keep);
	cq_free(k.offset);
	return CQ_OK;
}
