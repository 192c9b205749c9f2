/* ANTAP's parameter block: tensor table, allocation, initialisation. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "antap/model.h"
#include "common/mem.h"
#include "common/rng.h"

/* emb_cols, emb_rows, attn_ln, qkv, attn_out, fc1, fc2: 2 tensors each */
#define FIXED_TENSORS 14

static size_t
aligned(size_t n)
{
	return (n + CQ_TENSOR_ALIGN_FLOATS - 1) / CQ_TENSOR_ALIGN_FLOATS * CQ_TENSOR_ALIGN_FLOATS;
}

/* Appends a tensor to the table (views[i] receives its pointer later). */
static void
add(cq_antap_model *m, float ***views, float **view, int d0, int d1, const char *name)
{
	cq_tensor_info *t = &m->tensors[m->n_tensors];

	snprintf(t->name, sizeof(t->name), "%s", name);
	t->ndim = d1 > 0 ? 2 : 1;
	t->dims[0] = d0;
	t->dims[1] = d1 > 0 ? d1 : 0;
	t->numel = (size_t) d0 * (d1 > 0 ? d1 : 1);
	t->offset = m->n_floats;
	views[m->n_tensors++] = view;
	m->n_floats += aligned(t->numel);
}

static void
add_linear(cq_antap_model *m, float ***views, cq_linear *lin, int out, int in, const char *name)
{
	char		buf[CQ_TENSOR_NAME_MAX];

	lin->out = out;
	lin->in = in;
	snprintf(buf, sizeof(buf), "%s.weight", name);
	add(m, views, &lin->w, out, in, buf);
	snprintf(buf, sizeof(buf), "%s.bias", name);
	add(m, views, &lin->b, out, 0, buf);
}

/* The tensor order of the block and of weight files (models/ANTAP.md). */
static void
build_layout(cq_antap_model *m, float ***views)
{
	const cq_antap_config *c = &m->cfg;
	int			dims[CQ_ANTAP_MAX_PRED + 1],
				D = c->d_model;

	add_linear(m, views, &m->emb_cols, c->seq_len, c->pool_cols, "emb_cols");
	add_linear(m, views, &m->emb_rows, D, c->pool_rows, "emb_rows");
	m->attn_ln = (cq_norm) {.d = D, .kind = CQ_NORM_LAYER, .eps = CQ_ANTAP_LN_EPS};
	add(m, views, &m->attn_ln.w, D, 0, "attn_ln.weight");
	add(m, views, &m->attn_ln.b, D, 0, "attn_ln.bias");
	add_linear(m, views, &m->qkv, 3 * D, D, "attn.qkv");
	add_linear(m, views, &m->attn_out, D, D, "attn.out_proj");
	add_linear(m, views, &m->fc1, c->ffn_dim, D, "ffn.fc1");
	add_linear(m, views, &m->fc2, D, c->ffn_dim, "ffn.fc2");
	m->n_pred = cq_antap_pred_dims(c, dims);
	for (int i = 0; i < m->n_pred; i++)
	{
		char		name[32];

		snprintf(name, sizeof(name), "pred.%d", i);
		add_linear(m, views, &m->pred[i], dims[i + 1], dims[i], name);
	}
}

cq_code
cq_antap_new(const cq_antap_config *cfg, cq_antap_model **out, cq_error *err)
{
	cq_antap_model *m;
	float	  **views[FIXED_TENSORS + 2 * CQ_ANTAP_MAX_PRED];
	cq_code		rc;

	*out = NULL;
	if ((rc = cq_antap_config_validate(cfg, err)) != CQ_OK)
		return rc;
	if (!(m = cq_alloc0(sizeof(*m))) ||
		!(m->tensors = cq_alloc0(sizeof(cq_tensor_info) * (FIXED_TENSORS + 2 * CQ_ANTAP_MAX_PRED))))
	{
		cq_free(m);
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	}
	m->cfg = *cfg;
	build_layout(m, views);
	if (!(m->raw = cq_alloc0(m->n_floats * sizeof(float) + 64)))
	{
		cq_antap_free(m);
		return cq_fail(err, CQ_ENOMEM, "out of memory for %zu ANTAP parameters", m->n_floats);
	}
	m->params = (float *) (((uintptr_t) m->raw + 63) & ~(uintptr_t) 63);
	for (int i = 0; i < m->n_tensors; i++)
		*views[i] = m->params + m->tensors[i].offset;
	*out = m;
	return CQ_OK;
}

void
cq_antap_free(cq_antap_model *m)
{
	if (!m)
		return;
	cq_free(m->raw);
	cq_free(m->tensors);
	cq_free(m);
}

const cq_tensor_info *
cq_antap_tensor(const cq_antap_model *m, const char *name)
{
	for (int i = 0; i < m->n_tensors; i++)
		if (strcmp(m->tensors[i].name, name) == 0)
			return &m->tensors[i];
	return NULL;
}

size_t
cq_antap_param_floats(const cq_antap_model *m)
{
	return m->n_floats;
}

void
cq_antap_copy(cq_antap_model *dst, const cq_antap_model *src)
{
	memcpy(dst->params, src->params, sizeof(float) * src->n_floats);
}

/* Uniform on [-bound, bound) from stream `stream` of key. */
static void
fill_uniform(float *x, size_t n, float bound, cq_philox_key key, uint32_t stream)
{
	for (size_t i = 0; i < n; i += 4)
	{
		cq_philox_ctr r = cq_philox4x32((cq_philox_ctr) {{(uint32_t) (i >> 2), (uint32_t) (i >> 34), stream, 0}}, key);

		for (int w = 0; w < 4 && i + w < n; w++)
			x[i + w] = (2.0f * cq_u32_to_unit(r.c[w]) - 1.0f) * bound;
	}
}

void
cq_antap_init_random(cq_antap_model *m, uint64_t seed)
{
	cq_philox_key key = cq_philox_key_from_seed(seed);

	memset(m->params, 0, sizeof(float) * m->n_floats);
	for (int i = 0; i < m->n_tensors; i++)
	{
		const cq_tensor_info *t = &m->tensors[i];
		float	   *x = m->params + t->offset;

		if (strcmp(t->name, "attn_ln.weight") == 0)
			for (size_t j = 0; j < t->numel; j++)
				x[j] = 1.0f;
		else if (strcmp(t->name, "attn_ln.bias") != 0)
		{
			/* a bias [out] shares its weight's fan-in, the previous tensor's */
			int			fan_in = t->ndim == 2 ? t->dims[1] : m->tensors[i - 1].dims[1];

			fill_uniform(x, t->numel, 1.0f / sqrtf((float) fan_in), key, (uint32_t) i);
		}
	}
}
