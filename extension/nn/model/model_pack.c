/*
 * Packing a model for inference (model.h, rowgemm.h): every linear weight and
 * the output projection, once, so that no scoring call repacks them and every
 * product runs the row-independent kernel.
 */
#include <stdint.h>

#include "common/mem.h"
#include "nn/model/model.h"
#include "nn/ops/rowgemm.h"

typedef void (*linear_fn) (cq_linear *l, void *ctx);

/* fn on every linear of m, in layout order, then the output projection. */
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
	fn(&m->output, ctx);
}

/* Floats of one packed weight, rounded up to keep the next 64-byte aligned. */
static size_t
slot(const cq_linear *l)
{
	return (cq_rowgemm_packed_floats(l->out, l->in) + 15) / 16 * 16;
}

static void
count(cq_linear *l, void *ctx)
{
	*(size_t *) ctx += slot(l);
}

static void
pack(cq_linear *l, void *ctx)
{
	float	  **next = ctx;

	cq_rowgemm_pack(l->w, l->in, l->out, l->in, *next);
	l->packed = *next;
	*next += slot(l);
}

static void
forget(cq_linear *l, void *ctx)
{
	l->packed = NULL;
}

cq_nn_status
cq_model_pack(cq_model *m, cq_nn_error *err)
{
	size_t		total = 0;
	float	   *next;

	cq_model_unpack(m);
	each_linear(m, count, &total);
	m->packed_raw = cq_alloc(total * sizeof(float) + 64);
	if (!m->packed_raw)
		return cq_nn_fail(err, CQ_NN_ENOMEM, "out of memory packing a model (%zu floats)", total);
	next = (float *) (((uintptr_t) m->packed_raw + 63) & ~(uintptr_t) 63);
	each_linear(m, pack, &next);
	return CQ_NN_OK;
}

void
cq_model_unpack(cq_model *m)
{
	each_linear(m, forget, NULL);
	cq_free(m->packed_raw);
	m->packed_raw = NULL;
}
