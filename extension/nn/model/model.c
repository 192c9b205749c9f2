#include "nn/model/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "nn/model/positions.h"

/* Appends tensors to the table, or only counts them when table is NULL. */
typedef struct layout
{
	cq_tensor_info *table;
	float	 ***views;				/* where each tensor's pointer goes */
	int			n;
	size_t		floats;				/* padding included */
	size_t		params;				/* numel only */
} layout;

static size_t
aligned(size_t n)
{
	return (n + CQ_TENSOR_ALIGN_FLOATS - 1) / CQ_TENSOR_ALIGN_FLOATS * CQ_TENSOR_ALIGN_FLOATS;
}

static void add(layout *l, float **view, int d0, int d1, const char *fmt, ...)
			__attribute__((format(printf, 5, 6)));

static void
add(layout *l, float **view, int d0, int d1, const char *fmt, ...)
{
	va_list		ap;
	size_t		numel = (size_t) d0 * (d1 > 0 ? d1 : 1);

	if (l->table)
	{
		cq_tensor_info *t = &l->table[l->n];

		va_start(ap, fmt);
		vsnprintf(t->name, sizeof(t->name), fmt, ap);
		va_end(ap);
		t->ndim = d1 > 0 ? 2 : 1;
		t->dims[0] = d0;
		t->dims[1] = d1 > 0 ? d1 : 0;
		t->offset = l->floats;
		t->numel = numel;
		l->views[l->n] = view;
	}
	l->n++;
	l->floats += aligned(numel);
	l->params += numel;
}

/*
 * A norm's place: its size, the configuration's kind and epsilon, and its
 * tensors when the model has it (name.weight, name.bias if its kind has one).
 */
static void
add_norm(layout *l, const cq_model_config *c, cq_norm *n, bool present, const char *name)
{
	n->d = c->d_model;
	n->kind = c->norm;
	n->eps = c->layer_norm_eps;
	if (!present)
		return;
	add(l, &n->w, n->d, 0, "%s.weight", name);
	if (cq_norm_has_bias(n->kind))
		add(l, &n->b, n->d, 0, "%s.bias", name);
}

/* The norm of sublayer `what` of layer i. */
static void
add_layer_norm(layout *l, const cq_model_config *c, cq_norm *n, const char *prefix, int i,
			   const char *what)
{
	char		name[CQ_TENSOR_NAME_MAX];

	snprintf(name, sizeof(name), "%s.layers.%d.%s", prefix, i, what);
	add_norm(l, c, n, true, name);
}

static void
add_linear(layout *l, cq_linear *lin, int out, int in, const char *prefix,
		   int i, const char *what)
{
	lin->out = out;
	lin->in = in;
	add(l, &lin->w, out, in, "%s.layers.%d.%s.weight", prefix, i, what);
	add(l, &lin->b, out, 0, "%s.layers.%d.%s.bias", prefix, i, what);
}

/* An encoder's tensors outside its layers: the token type vector, the pooler. */
static void
add_encoder_extras(cq_model *m, layout *l, bool pooler)
{
	const cq_model_config *c = &m->cfg;
	int			d = c->d_model;

	if (!pooler && c->token_type_embedding)
		add(l, &m->tok_type, d, 0, "encoder.embed_token_type");
	if (pooler && c->pooler)
	{
		m->pooler.out = m->pooler.in = d;
		add(l, &m->pooler.w, d, d, "encoder.pooler.dense.weight");
		add(l, &m->pooler.b, d, 0, "encoder.pooler.dense.bias");
	}
}

/* A layer's self-attention (norm, qkv, out) or feed-forward (norm, fc1, fc2) tensors. */
static void
add_sublayer(layout *l, const cq_model_config *c, const char *prefix, int i, cq_norm *n,
			 const char *n_name, cq_linear *a, int a_out, int a_in, const char *a_name,
			 cq_linear *b, int b_out, int b_in, const char *b_name)
{
	add_layer_norm(l, c, n, prefix, i, n_name);
	add_linear(l, a, a_out, a_in, prefix, i, a_name);
	add_linear(l, b, b_out, b_in, prefix, i, b_name);
}

/* The tensor order of the block and of weight files (models/FORMAT.md). */
static void
build_layout(cq_model *m, layout *l)
{
	const cq_model_config *c = &m->cfg;
	int			d = c->d_model,
				f = c->ffn_dim;
	bool		decoder = c->kind != CQ_KIND_ENCODER;

	add(l, &m->src_embed, c->src_vocab_size, d, "encoder.embed_tokens");
	if (!c->share_embeddings)
		add(l, &m->tgt_embed, c->tgt_vocab_size, d, "decoder.embed_tokens");
	if (c->positions == CQ_POS_LEARNED)
	{
		add(l, &m->src_pos, c->max_positions, d, "encoder.embed_positions");
		if (decoder)
			add(l, &m->tgt_pos, c->max_positions, d, "decoder.embed_positions");
	}
	add_encoder_extras(m, l, false);
	add_norm(l, c, &m->src_embed_ln, c->layernorm_embedding, "encoder.layernorm_embedding");
	add_norm(l, c, &m->tgt_embed_ln, c->layernorm_embedding && decoder,
			 "decoder.layernorm_embedding");
	for (int i = 0; i < c->encoder_layers; i++)
	{
		cq_encoder_layer scratch;
		cq_encoder_layer *e = m->enc ? &m->enc[i] : &scratch;	/* counting only */

		add_sublayer(l, c, "encoder", i, &e->attn_ln, "self_attn_layer_norm",
					 &e->qkv, 3 * d, d, "self_attn.qkv", &e->attn_out, d, d, "self_attn.out_proj");
		add_sublayer(l, c, "encoder", i, &e->ffn_ln, "final_layer_norm",
					 &e->fc1, f, d, "fc1", &e->fc2, d, f, "fc2");
	}
	add_norm(l, c, &m->enc_ln, c->encoder_final_norm, "encoder.layer_norm");
	add_encoder_extras(m, l, true);
	for (int i = 0; i < c->decoder_layers; i++)
	{
		cq_decoder_layer scratch;
		cq_decoder_layer *e = m->dec ? &m->dec[i] : &scratch;	/* counting only */

		add_sublayer(l, c, "decoder", i, &e->self_ln, "self_attn_layer_norm",
					 &e->self_qkv, 3 * d, d, "self_attn.qkv", &e->self_out, d, d,
					 "self_attn.out_proj");
		add_layer_norm(l, c, &e->cross_ln, "decoder", i, "encoder_attn_layer_norm");
		add_linear(l, &e->cross_q, d, d, "decoder", i, "encoder_attn.q");
		add_linear(l, &e->cross_kv, 2 * d, d, "decoder", i, "encoder_attn.kv");
		add_linear(l, &e->cross_out, d, d, "decoder", i, "encoder_attn.out_proj");
		add_sublayer(l, c, "decoder", i, &e->ffn_ln, "final_layer_norm",
					 &e->fc1, f, d, "fc1", &e->fc2, d, f, "fc2");
	}
	add_norm(l, c, &m->dec_ln, c->decoder_final_norm && decoder, "decoder.layer_norm");
	if (!c->tie_output)
		add(l, &m->out_proj, c->tgt_vocab_size, d, "decoder.output_projection.weight");
	if (c->output_bias)
		add(l, &m->out_bias, c->tgt_vocab_size, 0, "decoder.output_projection.bias");
}

void
cq_model_size_for(const cq_model_config *cfg, size_t *floats, size_t *params)
{
	cq_model	m;
	layout		l = {0};

	memset(&m, 0, sizeof(m));
	m.cfg = *cfg;
	build_layout(&m, &l);
	*floats = l.floats;
	*params = l.params;
}

cq_code
cq_model_new(const cq_model_config *cfg, cq_model **out, cq_error *err)
{
	cq_code s = cq_config_validate(cfg, err);
	cq_model   *m;
	layout		l = {0};

	*out = NULL;
	if (s)
		return s;
	m = cq_alloc0(sizeof(*m));
	if (!m)
		return cq_fail(err, CQ_ENOMEM, "out of memory for a model");
	m->cfg = *cfg;
	m->enc = cq_alloc0(sizeof(*m->enc) * cfg->encoder_layers);
	/* an encoder has no decoder layers: one unused slot, never a 0-byte allocation */
	m->dec = cq_alloc0(sizeof(*m->dec) * (cfg->decoder_layers > 0 ? cfg->decoder_layers : 1));
	if (m->enc && m->dec)
	{
		build_layout(m, &l);		/* count */
		m->n_tensors = l.n;
		m->n_floats = l.floats;
		m->tensors = cq_alloc0(sizeof(cq_tensor_info) * l.n);
		l = (layout) {m->tensors, cq_alloc(sizeof(float **) * m->n_tensors), 0, 0, 0};
		m->raw = cq_alloc0(m->n_floats * sizeof(float) + 64);
		if (cfg->positions == CQ_POS_SINUSOIDAL)
			m->sinusoid = cq_alloc(sizeof(float) * cfg->max_positions * cfg->d_model);
	}
	if (!m->enc || !m->dec || !m->tensors || !l.views || !m->raw ||
		(cfg->positions == CQ_POS_SINUSOIDAL && !m->sinusoid))
	{
		cq_free(l.views);
		cq_model_free(m);
		return cq_fail(err, CQ_ENOMEM, "out of memory for a model of %zu parameters",
						  l.floats);
	}
	m->params = (float *) (((uintptr_t) m->raw + 63) & ~(uintptr_t) 63);
	build_layout(m, &l);			/* name, place and bind */
	for (int i = 0; i < m->n_tensors; i++)
		*l.views[i] = m->params + m->tensors[i].offset;
	cq_free(l.views);
	if (cfg->share_embeddings)
		m->tgt_embed = m->src_embed;
	if (cfg->tie_output)
		m->out_proj = m->tgt_embed;
	m->output = (cq_linear) {m->out_proj, m->out_bias, cfg->tgt_vocab_size, cfg->d_model, NULL};
	if (m->sinusoid)
		cq_sinusoid_table(m->sinusoid, cfg->max_positions, cfg->d_model,
						  cfg->position_offset, cfg->sinusoid_half);
	*out = m;
	return CQ_OK;
}

void
cq_model_free(cq_model *m)
{
	if (!m)
		return;
	cq_free(m->enc);
	cq_free(m->dec);
	cq_free(m->tensors);
	cq_free(m->raw);
	cq_free(m->sinusoid);
	cq_free(m->packed_raw);
	cq_free(m);
}

const cq_tensor_info *
cq_model_tensor(const cq_model *m, const char *name)
{
	for (int i = 0; i < m->n_tensors; i++)
		if (strcmp(m->tensors[i].name, name) == 0)
			return &m->tensors[i];
	return NULL;
}

size_t
cq_model_param_floats(const cq_model *m)
{
	return m->n_floats;
}

size_t
cq_model_param_count(const cq_model *m)
{
	size_t		n = 0;

	for (int i = 0; i < m->n_tensors; i++)
		n += m->tensors[i].numel;
	return n;
}
