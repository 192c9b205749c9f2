#include "nn/model/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "nn/model/positions.h"
#include "nn/ops/qgemm.h"
#include "nn/ops/rowgemm.h"

/* Appends tensors to the table, or only counts them when table is NULL. */
typedef struct layout
{
	cq_tensor_info *table;
	float	 ***views;				/* float32 tensors: where each pointer goes */
	void	 ***slots;				/* code tensors: where each packed copy goes */
	int			n;
	size_t		floats;				/* padding included */
	size_t		params;				/* numel only */
	/* an int8 image's layout (cq_model_new_coded), else 0 */
	int			weight_bits;		/* the linear weights' codes */
	size_t		packed;				/* bytes of the code tensors' packed copies */
	size_t		codes;				/* their codes */
	size_t		scales;				/* and rows */
	int			n_coded;			/* code tensors */
	size_t		linear_floats;		/* float32 layer linears' weights, padding included */
} layout;

static size_t
aligned(size_t n)
{
	return (n + CQ_TENSOR_ALIGN_FLOATS - 1) / CQ_TENSOR_ALIGN_FLOATS * CQ_TENSOR_ALIGN_FLOATS;
}

/* A tensor of float32 values (bits 0) bound to view, or of codes bound to slot. */
static void
put(layout *l, float **view, void **slot, int bits, int d0, int d1, const char *name)
{
	size_t		numel = (size_t) d0 * (d1 > 0 ? d1 : 1);

	if (l->table)
	{
		cq_tensor_info *t = &l->table[l->n];

		snprintf(t->name, sizeof(t->name), "%s", name);
		t->ndim = d1 > 0 ? 2 : 1;
		t->dims[0] = d0;
		t->dims[1] = d1 > 0 ? d1 : 0;
		t->offset = bits ? l->packed : l->floats;
		t->numel = numel;
		t->bits = bits;
		if (l->views)
		{
			l->views[l->n] = bits ? NULL : view;
			l->slots[l->n] = bits ? slot : NULL;
		}
	}
	l->n++;
	if (bits)
	{
		l->packed += (cq_qgemm_packed_bytes(d0, d1) + 63) / 64 * 64;
		l->codes += numel;
		l->scales += d0;
		l->n_coded++;
	}
	else
	{
		l->floats += aligned(numel);
		l->params += numel;
	}
}

static void add(layout *l, float **view, int d0, int d1, const char *fmt, ...)
			__attribute__((format(printf, 5, 6)));

static void
add(layout *l, float **view, int d0, int d1, const char *fmt, ...)
{
	va_list		ap;
	char		name[CQ_TENSOR_NAME_MAX];

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	put(l, view, NULL, 0, d0, d1, name);
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
	char		name[CQ_TENSOR_NAME_MAX];

	lin->out = out;
	lin->in = in;
	snprintf(name, sizeof(name), "%s.layers.%d.%s.weight", prefix, i, what);
	put(l, &lin->w, &lin->qpacked, l->weight_bits, out, in, name);
	if (!l->weight_bits)
		l->linear_floats += aligned((size_t) out * in);
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

	/* an int8 image with embedding_precision int8 stores embeddings as codes */
	int			eb = c->embedding_precision == CQ_PRECISION_INT8 ? l->weight_bits : 0;

	put(l, &m->src_embed, &m->src_embed_codes, eb, c->src_vocab_size, d, "encoder.embed_tokens");
	if (!c->share_embeddings)
		put(l, &m->tgt_embed, &m->tgt_embed_codes, eb, c->tgt_vocab_size, d,
			"decoder.embed_tokens");
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
		put(l, &m->out_proj, &m->output.qpacked, l->weight_bits, c->tgt_vocab_size, d,
			"decoder.output_projection.weight");
	else if (l->weight_bits && !eb && decoder)
		/* an int8 image with float32 embeddings: a tied projection has codes
		 * of its own (with int8 embeddings it is its embedding's codes) */
		put(l, NULL, &m->output.qpacked, l->weight_bits, c->tgt_vocab_size, d,
			"decoder.output_projection.weight");
	if (c->output_bias)
		add(l, &m->out_bias, c->tgt_vocab_size, 0, "decoder.output_projection.bias");
}

/* The layout of cfg's int8 image (coded) or of its float32 parameter block. */
static layout
layout_for(const cq_model_config *cfg, bool coded)
{
	layout		l = {0};

	if (coded)
		l.weight_bits = cfg->weight_bits;
	return l;
}

/* Lay out (table NULL: count) a model of cfg that is not allocated. */
static layout
layout_only(const cq_model_config *cfg, bool coded, cq_tensor_info *table)
{
	cq_model	m;
	layout		l = layout_for(cfg, coded);

	memset(&m, 0, sizeof(m));
	m.cfg = *cfg;
	l.table = table;
	build_layout(&m, &l);
	return l;
}

void
cq_model_size_for(const cq_model_config *cfg, size_t *floats, size_t *params)
{
	layout		l = layout_only(cfg, false, NULL);

	*floats = l.floats;
	*params = l.params;
}

size_t
cq_model_data_min(const cq_model_config *cfg, bool coded)
{
	layout		l = layout_only(cfg, coded, NULL);

	return 4 * l.params + l.codes + 4 * l.scales;
}

int
cq_model_float_tensors(const cq_model_config *cfg, cq_tensor_info *table)
{
	return layout_only(cfg, false, table).n;
}

int
cq_model_coded_tensors(const cq_model_config *cfg, cq_tensor_info *table)
{
	return layout_only(cfg, true, table).n;
}

size_t
cq_model_position_bytes(const cq_model_config *cfg)
{
	int			rows = cfg->max_positions < CQ_SINUSOID_TABLE_ROWS
		? cfg->max_positions : CQ_SINUSOID_TABLE_ROWS;

	return cfg->positions == CQ_POS_SINUSOIDAL ? sizeof(float) * (size_t) rows * cfg->d_model : 0;
}

/* ---- the memory of a load (cq_model_load_memory) ---------------------------- */

/* What model_new allocates for l and keeps (allocate's views and slots aside). */
static size_t
new_bytes(const cq_model_config *c, const layout *l)
{
	return sizeof(cq_model) + sizeof(cq_encoder_layer) * (size_t) c->encoder_layers +
		sizeof(cq_decoder_layer) * (size_t) (c->decoder_layers > 0 ? c->decoder_layers : 1) +
		sizeof(cq_tensor_info) * (size_t) l->n + l->floats * sizeof(float) + 64 +
		(l->packed ? l->packed + 64 : 0) + cq_model_position_bytes(c);
}

/* The bytes of one linear's packed copy as cq_model_pack lays it out. */
static size_t
pack_slot(const cq_model_config *c, int out, int in)
{
	size_t		b = c->precision == CQ_PRECISION_INT8 ? cq_qgemm_packed_bytes(out, in)
		: cq_rowgemm_packed_floats(out, in) * sizeof(float);

	return (b + 63) / 64 * 64;
}

/*
 * What cq_model_pack packs of a model read from float32 weights: every
 * layer linear, the output projection (a translation model's) or the pooler
 * (an encoder's), and with int8 embeddings the embeddings it reads as codes
 * (model_pack.c: each_linear, each_embedding).  *bytes: the packed copies;
 * *most: the largest of them in elements (the int8 quantization scratch).
 */
static void
pack_sizes(const cq_model_config *c, size_t *bytes, size_t *most)
{
	int			d = c->d_model,
				f = c->ffn_dim;
	int			shapes[16][2];
	int			n = 0;
	bool		tied = c->tie_output && c->kind != CQ_KIND_ENCODER;

	*bytes = 0;
	*most = 0;
	for (int i = 0; i < c->encoder_layers + c->decoder_layers; i++)
	{
		bool		enc = i < c->encoder_layers;
		int			k = 0;
		int			layer[7][2] = {{3 * d, d}, {d, d}, {f, d}, {d, f}, {d, d}, {2 * d, d}, {d, d}};

		/* encoder: qkv, out, fc1, fc2; decoder: and cross q, kv, out */
		for (k = 0; k < (enc ? 4 : 7); k++)
		{
			*bytes += pack_slot(c, layer[k][0], layer[k][1]);
			if ((size_t) layer[k][0] * layer[k][1] > *most)
				*most = (size_t) layer[k][0] * layer[k][1];
		}
	}
	if (c->kind != CQ_KIND_ENCODER)
	{
		shapes[n][0] = c->tgt_vocab_size;
		shapes[n++][1] = d;
	}
	else if (c->pooler)
	{
		shapes[n][0] = d;
		shapes[n++][1] = d;
	}
	if (c->precision == CQ_PRECISION_INT8 && c->embedding_precision == CQ_PRECISION_INT8)
	{
		if (!(c->share_embeddings && tied))
		{
			shapes[n][0] = c->src_vocab_size;
			shapes[n++][1] = d;
		}
		if (!c->share_embeddings && !tied)
		{
			shapes[n][0] = c->tgt_vocab_size;
			shapes[n++][1] = d;
		}
	}
	for (int i = 0; i < n; i++)
	{
		*bytes += pack_slot(c, shapes[i][0], shapes[i][1]);
		if ((size_t) shapes[i][0] * shapes[i][1] > *most)
			*most = (size_t) shapes[i][0] * shapes[i][1];
	}
}

/*
 * The floats cq_model_compact keeps of a model read from float32 weights:
 * every tensor but the packed linears' weights (model_pack.c: mark_linear,
 * mark_embeddings): the layer linears, the pooler, an untied output
 * projection; a tied one's embedding too unless int8 (whose codes do not
 * give the float32 values); embeddings read as codes.
 */
static size_t
compact_floats(const cq_model_config *c, const layout *l)
{
	size_t		d = (size_t) c->d_model,
				src = aligned((size_t) c->src_vocab_size * d),
				tgt = aligned((size_t) c->tgt_vocab_size * d),
				floats = l->floats - l->linear_floats;
	bool		decoder = c->kind != CQ_KIND_ENCODER,
				int8 = c->precision == CQ_PRECISION_INT8,
				src_gone = false,
				tgt_gone = false;

	if (!decoder && c->pooler)
		floats -= aligned(d * d);
	if (decoder && !c->tie_output)
		floats -= tgt;
	if (decoder && c->tie_output && !int8)
	{
		/* the tied target embedding (the source one when shared) */
		if (c->share_embeddings)
			src_gone = true;
		else
			tgt_gone = true;
	}
	if (int8 && c->embedding_precision == CQ_PRECISION_INT8)
	{
		src_gone = true;
		tgt_gone = !c->share_embeddings;
	}
	if (src_gone)
		floats -= src;
	if (tgt_gone && !c->share_embeddings)
		floats -= tgt;
	return floats;
}

void
cq_model_load_memory(const cq_model_config *cfg, bool coded, size_t image,
					 cq_model_memory *out)
{
	layout		l = layout_only(cfg, coded, NULL);
	size_t		model = new_bytes(cfg, &l),
				n = (size_t) l.n,
				records = n + (size_t) l.n_coded,
				reading,
				packed,
				most,
				kept,
				quant = 0,
				pack_peak,
				compact_peak;

	/*
	 * Reading (modelfile.c: read_tensors, and the tensor file's record of
	 * placed tensors), beside the image; allocate's views and slots (16 n)
	 * are fewer.
	 */
	reading = n + sizeof(int8_t *) * n + sizeof(size_t) * n + sizeof(float) * (l.scales + 1) +
		sizeof(uint64_t) * 2 * records;
	out->peak = image + model + reading;
	out->loaded = model;
	if (coded)
		return;					/* an int8 image's model is packed and compact as read */
	pack_sizes(cfg, &packed, &most);
	packed += 64;
	if (cfg->precision == CQ_PRECISION_INT8)
		quant = most + sizeof(float) * ((size_t) cfg->src_vocab_size + cfg->tgt_vocab_size +
										3 * (size_t) cfg->d_model + cfg->ffn_dim);
	kept = compact_floats(cfg, &l) * sizeof(float) + 64;
	pack_peak = model + packed + quant;
	compact_peak = model + packed + sizeof(bool) * n + sizeof(size_t) * n + kept;
	if (pack_peak > out->peak)
		out->peak = pack_peak;
	if (compact_peak > out->peak)
		out->peak = compact_peak;
	out->loaded = model - (l.floats * sizeof(float) + 64) + packed + kept;
}

/* The 64-byte aligned start of an allocation made 64 bytes larger. */
static void *
align64(void *p)
{
	return (void *) (((uintptr_t) p + 63) & ~(uintptr_t) 63);
}

/* Allocate m's table, block and packed copies for l (counted) and bind them. */
static bool
allocate(cq_model *m, layout *l)
{
	layout		bind = *l;

	m->n_tensors = l->n;
	m->n_floats = l->floats;
	m->packed_bytes = l->packed;
	m->tensors = cq_alloc0(sizeof(cq_tensor_info) * l->n);
	bind.views = cq_alloc(sizeof(float **) * l->n);
	bind.slots = cq_alloc(sizeof(void **) * l->n);
	m->raw = cq_alloc0(m->n_floats * sizeof(float) + 64);
	if (l->packed)
		m->packed_raw = cq_alloc(l->packed + 64);
	if (m->cfg.positions == CQ_POS_SINUSOIDAL)
		m->sinusoid = cq_alloc(cq_model_position_bytes(&m->cfg));
	if (!m->tensors || !bind.views || !bind.slots || !m->raw || (l->packed && !m->packed_raw) ||
		(m->cfg.positions == CQ_POS_SINUSOIDAL && !m->sinusoid))
	{
		cq_free(bind.views);
		cq_free(bind.slots);
		return false;
	}
	m->params = align64(m->raw);
	bind.table = m->tensors;
	bind.n = 0;
	bind.floats = bind.params = bind.packed = bind.codes = bind.scales = 0;
	build_layout(m, &bind);			/* name, place and bind */
	for (int i = 0; i < m->n_tensors; i++)
	{
		if (bind.views[i])
			*bind.views[i] = m->params + m->tensors[i].offset;
		if (bind.slots[i])
			*bind.slots[i] = (unsigned char *) align64(m->packed_raw) + m->tensors[i].offset;
	}
	cq_free(bind.views);
	cq_free(bind.slots);
	return true;
}

/* Tied and shared tensors, the output projection as a linear. */
static void
wire(cq_model *m)
{
	const cq_model_config *c = &m->cfg;

	if (c->share_embeddings)
	{
		m->tgt_embed = m->src_embed;
		m->tgt_embed_codes = m->src_embed_codes;
	}
	if (c->tie_output)
		m->out_proj = m->tgt_embed;
	if (c->tie_output && m->tgt_embed_codes)
		m->output.qpacked = m->tgt_embed_codes;	/* an int8 image's int8 embedding */
	m->output.w = m->out_proj;
	m->output.b = m->out_bias;
	m->output.out = c->tgt_vocab_size;
	m->output.in = c->d_model;
}

static cq_code
model_new(const cq_model_config *cfg, bool coded, cq_model **out, cq_error *err)
{
	cq_code		s = cq_config_validate(cfg, err);
	cq_model   *m;
	layout		l = layout_for(cfg, coded);

	*out = NULL;
	if (s)
		return s;
	if (coded && cfg->precision != CQ_PRECISION_INT8)
		return cq_fail(err, CQ_EINVAL, "only an int8 model has code tensors");
	if (coded && (cfg->d_model > CQ_QGEMM_MAX_K || cfg->ffn_dim > CQ_QGEMM_MAX_K))
		return cq_fail(err, CQ_EINVAL, "an int8 model's layers take at most %d inputs",
					   CQ_QGEMM_MAX_K);
	m = cq_alloc0(sizeof(*m));
	if (!m)
		return cq_fail(err, CQ_ENOMEM, "out of memory for a model");
	m->cfg = *cfg;
	m->enc = cq_alloc0(sizeof(*m->enc) * cfg->encoder_layers);
	/* an encoder has no decoder layers: one unused slot, never a 0-byte allocation */
	m->dec = cq_alloc0(sizeof(*m->dec) * (cfg->decoder_layers > 0 ? cfg->decoder_layers : 1));
	if (m->enc && m->dec)
		build_layout(m, &l);		/* count */
	if (!m->enc || !m->dec || !allocate(m, &l))
	{
		cq_model_free(m);
		return cq_fail(err, CQ_ENOMEM, "out of memory for a model of %zu parameters",
					   l.params + l.codes);
	}
	wire(m);
	if (m->sinusoid)
	{
		m->sinusoid_rows = cfg->max_positions < CQ_SINUSOID_TABLE_ROWS
			? cfg->max_positions : CQ_SINUSOID_TABLE_ROWS;
		cq_sinusoid_table(m->sinusoid, m->sinusoid_rows, cfg->d_model,
						  cfg->position_offset, cfg->sinusoid_half);
	}
	m->compact = coded;
	*out = m;
	return CQ_OK;
}

cq_code
cq_model_new(const cq_model_config *cfg, cq_model **out, cq_error *err)
{
	return model_new(cfg, false, out, err);
}

cq_code
cq_model_new_coded(const cq_model_config *cfg, cq_model **out, cq_error *err)
{
	return model_new(cfg, true, out, err);
}

void
cq_model_fill_codes(cq_model *m, const cq_tensor_info *t, const int8_t *codes,
					const float *scales)
{
	cq_qgemm_pack(codes, scales, t->dims[0], t->dims[1], t->bits,
				  (unsigned char *) align64(m->packed_raw) + t->offset);
}

void
cq_model_free(cq_model *m)
{
	if (!m)
		return;
	cq_free(m->enc);
	cq_free(m->dec);
	if (m->attached)
	{
		/* the other arrays are an arena's (cq_model_attach) */
		cq_free(m);
		return;
	}
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
	size_t		floats,
				params;

	/* what the model holds may be less (compact) or coded (an int8 image) */
	cq_model_size_for(&m->cfg, &floats, &params);
	return params;
}
