/*
 * A relocatable model (model.h: cq_model_arena_bytes, cq_model_flatten,
 * cq_model_attach): one contiguous arena holding every array a packed,
 * compact model's pointers reach, its pointers stored as offsets from the
 * arena's start, so that processes mapping it at different addresses (a
 * shared memory segment) each build a small private struct pointing into it.
 *
 * The arena, every section 64-byte aligned from its start:
 *   head        magic, format, the sizes of this build's structs, offsets
 *   model       the cq_model struct as flattened (its pointers are rewritten
 *               on attach; its other fields, configuration and norm and
 *               linear sizes included, are taken as they are)
 *   enc, dec    the layer arrays, likewise
 *   tensors     the tensor table
 *   slots       one uint64 per pointer of the model (slot order below): 0 for
 *               NULL, else the offset of what it points at
 *   params      the parameter block (n_floats floats)
 *   packed      the packed copies (int8 codes and scales, or float32 panels)
 *   sinusoid    the sinusoid table, if any
 */
#include <stdint.h>
#include <string.h>

#include "common/mem.h"
#include "nn/model/model.h"

#define ARENA_MAGIC UINT64_C(0x414e4552414d5143)	/* "CQMARENA" little-endian */
#define ARENA_FORMAT 1

typedef struct arena_head
{
	uint64_t	magic;
	uint32_t	format;
	uint32_t	sizes[4];		/* this build's struct sizes: head, model, enc, dec layer */
	uint64_t	total;			/* the arena's bytes */
	uint64_t	model_off,
				enc_off,
				dec_off,
				tensors_off,
				slots_off,
				params_off,
				packed_off,
				sinusoid_off;
	uint64_t	n_enc,
				n_dec,
				n_tensors,
				n_slots,
				params_bytes,
				packed_bytes,
				sinusoid_bytes;
} arena_head;

static uint64_t
up64(uint64_t n)
{
	return (n + 63) / 64 * 64;
}

/* ---- the model's pointers, in one fixed order ------------------------------ */

typedef struct slot_list
{
	void	  **at;				/* addresses of pointer fields, or NULL: only counted */
	int			n;
} slot_list;

static void
slot(slot_list *s, void *field)
{
	if (s->at)
		s->at[s->n] = field;
	s->n++;
}

static void
slot_norm(slot_list *s, cq_norm *n)
{
	slot(s, &n->w);
	slot(s, &n->b);
}

static void
slot_linear(slot_list *s, cq_linear *l)
{
	slot(s, &l->w);
	slot(s, &l->b);
	slot(s, &l->packed);
	slot(s, &l->qpacked);
}

/*
 * Every pointer field of m into its arrays (the parameter block, the packed
 * copies, the sinusoid table); the structural ones (raw, params, tensors,
 * packed_raw, enc, dec) are set apart.  m's layer arrays must have
 * cfg.encoder_layers and cfg.decoder_layers entries.
 */
static int
list_slots(cq_model *m, void **at)
{
	slot_list	s = {at, 0};

	slot(&s, &m->src_embed);
	slot(&s, &m->tgt_embed);
	slot(&s, &m->src_embed_codes);
	slot(&s, &m->tgt_embed_codes);
	slot(&s, &m->src_pos);
	slot(&s, &m->tgt_pos);
	slot(&s, &m->out_proj);
	slot_linear(&s, &m->output);
	slot_norm(&s, &m->enc_ln);
	slot_norm(&s, &m->dec_ln);
	slot_norm(&s, &m->src_embed_ln);
	slot_norm(&s, &m->tgt_embed_ln);
	slot(&s, &m->out_bias);
	slot(&s, &m->tok_type);
	slot_linear(&s, &m->pooler);
	slot(&s, &m->sinusoid);
	for (int i = 0; i < m->cfg.encoder_layers; i++)
	{
		cq_encoder_layer *e = &m->enc[i];

		slot_norm(&s, &e->attn_ln);
		slot_linear(&s, &e->qkv);
		slot_linear(&s, &e->attn_out);
		slot_norm(&s, &e->ffn_ln);
		slot_linear(&s, &e->fc1);
		slot_linear(&s, &e->fc2);
	}
	for (int i = 0; i < m->cfg.decoder_layers; i++)
	{
		cq_decoder_layer *d = &m->dec[i];

		slot_norm(&s, &d->self_ln);
		slot_linear(&s, &d->self_qkv);
		slot_linear(&s, &d->self_out);
		slot_norm(&s, &d->cross_ln);
		slot_linear(&s, &d->cross_q);
		slot_linear(&s, &d->cross_kv);
		slot_linear(&s, &d->cross_out);
		slot_norm(&s, &d->ffn_ln);
		slot_linear(&s, &d->fc1);
		slot_linear(&s, &d->fc2);
	}
	return s.n;
}

/* The pointer stored in field (read and written bytewise: fields differ in type). */
static const unsigned char *
get_ptr(void *field)
{
	const unsigned char *p;

	memcpy(&p, field, sizeof(p));
	return p;
}

static void
set_ptr(void *field, const void *p)
{
	memcpy(field, &p, sizeof(p));
}

/* ---- the layout ------------------------------------------------------------ */

static const unsigned char *
packed_base(const cq_model *m)
{
	return (const unsigned char *) (((uintptr_t) m->packed_raw + 63) & ~(uintptr_t) 63);
}

/* The head of m's arena (offsets and sizes), or CQ_EINVAL for a model that has none. */
static cq_code
plan(const cq_model *m, arena_head *h, cq_error *err)
{
	uint64_t	at;
	int			n_slots;

	if (m->attached)
		return cq_fail(err, CQ_EINVAL, "an attached model is an arena already");
	if (!m->compact || (m->packed_bytes && !m->packed_raw))
		return cq_fail(err, CQ_EINVAL, "only a packed, compacted model can be flattened");
	n_slots = list_slots((cq_model *) m, NULL);
	memset(h, 0, sizeof(*h));
	h->magic = ARENA_MAGIC;
	h->format = ARENA_FORMAT;
	h->sizes[0] = sizeof(arena_head);
	h->sizes[1] = sizeof(cq_model);
	h->sizes[2] = sizeof(cq_encoder_layer);
	h->sizes[3] = sizeof(cq_decoder_layer);
	h->n_enc = (uint64_t) m->cfg.encoder_layers;
	h->n_dec = (uint64_t) m->cfg.decoder_layers;
	h->n_tensors = (uint64_t) m->n_tensors;
	h->n_slots = (uint64_t) n_slots;
	h->params_bytes = (uint64_t) m->n_floats * sizeof(float);
	h->packed_bytes = m->packed_bytes;
	h->sinusoid_bytes = m->sinusoid ? cq_model_position_bytes(&m->cfg) : 0;
	at = up64(sizeof(arena_head));
	h->model_off = at;
	at += up64(sizeof(cq_model));
	h->enc_off = at;
	at += up64(sizeof(cq_encoder_layer) * h->n_enc);
	h->dec_off = at;
	at += up64(sizeof(cq_decoder_layer) * h->n_dec);
	h->tensors_off = at;
	at += up64(sizeof(cq_tensor_info) * h->n_tensors);
	h->slots_off = at;
	at += up64(sizeof(uint64_t) * h->n_slots);
	h->params_off = at;
	at += up64(h->params_bytes);
	h->packed_off = at;
	at += up64(h->packed_bytes);
	h->sinusoid_off = at;
	at += up64(h->sinusoid_bytes);
	h->total = at;
	return CQ_OK;
}

/* The arena offset of p, one of m's arrays, or 0 for NULL; false if outside them. */
static bool
offset_of(const cq_model *m, const arena_head *h, const unsigned char *p, uint64_t *off)
{
	const unsigned char *params = (const unsigned char *) m->params,
			   *packed = h->packed_bytes ? packed_base(m) : NULL,
			   *sin = (const unsigned char *) m->sinusoid;

	if (p == NULL)
		*off = 0;
	else if (params && p >= params && p < params + h->params_bytes)
		*off = h->params_off + (uint64_t) (p - params);
	else if (packed && p >= packed && p < packed + h->packed_bytes)
		*off = h->packed_off + (uint64_t) (p - packed);
	else if (sin && p >= sin && p < sin + h->sinusoid_bytes)
		*off = h->sinusoid_off + (uint64_t) (p - sin);
	else
		return false;
	return true;
}

size_t
cq_model_arena_bytes(const cq_model *m, cq_error *err)
{
	arena_head	h;
	void	  **at;
	int			n;
	bool		inside = true;

	if (plan(m, &h, err) != CQ_OK)
		return 0;
	/* every pointer must reach one of the arrays the arena holds */
	at = cq_alloc(sizeof(void *) * h.n_slots);
	if (!at)
	{
		cq_fail(err, CQ_ENOMEM, "out of memory sizing a model's arena");
		return 0;
	}
	n = list_slots((cq_model *) m, at);
	for (int i = 0; i < n && inside; i++)
	{
		uint64_t	off;

		inside = offset_of(m, &h, get_ptr(at[i]), &off);
	}
	cq_free(at);
	if (!inside)
	{
		cq_fail(err, CQ_EINVAL, "a pointer of the model reaches outside its arrays");
		return 0;
	}
	return (size_t) h.total;
}

cq_code
cq_model_flatten(const cq_model *m, void *dst, size_t size, cq_error *err)
{
	arena_head	h;
	unsigned char *a = dst;
	void	  **at;
	uint64_t   *offs;
	cq_code		s = plan(m, &h, err);

	if (s != CQ_OK)
		return s;
	if (((uintptr_t) dst & 63) != 0)
		return cq_fail(err, CQ_EINVAL, "a model's arena must start on a 64-byte boundary");
	if (size < h.total)
		return cq_fail(err, CQ_EINVAL, "a model's arena takes %llu bytes, %zu given",
					   (unsigned long long) h.total, size);
	at = cq_alloc(sizeof(void *) * h.n_slots);
	if (!at)
		return cq_fail(err, CQ_ENOMEM, "out of memory flattening a model");
	memset(a, 0, (size_t) h.total);
	list_slots((cq_model *) m, at);
	offs = (uint64_t *) (a + h.slots_off);
	for (uint64_t i = 0; i < h.n_slots; i++)
		if (!offset_of(m, &h, get_ptr(at[i]), &offs[i]))
		{
			cq_free(at);
			return cq_fail(err, CQ_EINVAL, "a pointer of the model reaches outside its arrays");
		}
	cq_free(at);
	memcpy(a, &h, sizeof(h));
	memcpy(a + h.model_off, m, sizeof(cq_model));
	if (h.n_enc)
		memcpy(a + h.enc_off, m->enc, sizeof(cq_encoder_layer) * h.n_enc);
	if (h.n_dec)
		memcpy(a + h.dec_off, m->dec, sizeof(cq_decoder_layer) * h.n_dec);
	if (h.n_tensors)
		memcpy(a + h.tensors_off, m->tensors, sizeof(cq_tensor_info) * h.n_tensors);
	if (h.params_bytes)
		memcpy(a + h.params_off, m->params, (size_t) h.params_bytes);
	if (h.packed_bytes)
		memcpy(a + h.packed_off, packed_base(m), (size_t) h.packed_bytes);
	if (h.sinusoid_bytes)
		memcpy(a + h.sinusoid_off, m->sinusoid, (size_t) h.sinusoid_bytes);
	return CQ_OK;
}

/* Section [off, off + len) lies inside an arena of total bytes, 64-byte aligned. */
static bool
section_ok(uint64_t off, uint64_t len, uint64_t total)
{
	return off % 64 == 0 && off <= total && len <= total - off;
}

/* A slot's offset: 0, or inside the params, packed or sinusoid section. */
static bool
slot_ok(const arena_head *h, uint64_t off)
{
	return off == 0 ||
		(off >= h->params_off && off - h->params_off < h->params_bytes) ||
		(off >= h->packed_off && off - h->packed_off < h->packed_bytes) ||
		(off >= h->sinusoid_off && off - h->sinusoid_off < h->sinusoid_bytes);
}

cq_code
cq_model_attach(const void *base, size_t bytes, cq_model **out, cq_error *err)
{
	const unsigned char *a = base;
	arena_head	h;
	cq_model   *m;
	void	  **at;
	const uint64_t *offs;

	*out = NULL;
	if (((uintptr_t) base & 63) != 0)
		return cq_fail(err, CQ_EINVAL, "a model's arena must start on a 64-byte boundary");
	if (bytes < sizeof(h))
		return cq_fail(err, CQ_EINVAL, "a model's arena is truncated");
	memcpy(&h, a, sizeof(h));
	if (h.magic != ARENA_MAGIC || h.format != ARENA_FORMAT)
		return cq_fail(err, CQ_EINVAL, "not a model arena");
	if (h.sizes[0] != sizeof(arena_head) || h.sizes[1] != sizeof(cq_model) ||
		h.sizes[2] != sizeof(cq_encoder_layer) || h.sizes[3] != sizeof(cq_decoder_layer))
		return cq_fail(err, CQ_EINVAL, "a model arena of another build");
	if (h.total > bytes)
		return cq_fail(err, CQ_EINVAL, "a model's arena is truncated (%llu bytes, %zu given)",
					   (unsigned long long) h.total, bytes);
	if (h.n_enc > INT32_MAX || h.n_dec > INT32_MAX || h.n_tensors > INT32_MAX ||
		h.n_slots > h.total / sizeof(uint64_t) ||
		!section_ok(h.model_off, sizeof(cq_model), h.total) ||
		!section_ok(h.enc_off, sizeof(cq_encoder_layer) * h.n_enc, h.total) ||
		!section_ok(h.dec_off, sizeof(cq_decoder_layer) * h.n_dec, h.total) ||
		!section_ok(h.tensors_off, sizeof(cq_tensor_info) * h.n_tensors, h.total) ||
		!section_ok(h.slots_off, sizeof(uint64_t) * h.n_slots, h.total) ||
		!section_ok(h.params_off, h.params_bytes, h.total) ||
		!section_ok(h.packed_off, h.packed_bytes, h.total) ||
		!section_ok(h.sinusoid_off, h.sinusoid_bytes, h.total))
		return cq_fail(err, CQ_EINVAL, "a model arena's sections do not fit it");
	offs = (const uint64_t *) (a + h.slots_off);
	for (uint64_t i = 0; i < h.n_slots; i++)
		if (!slot_ok(&h, offs[i]))
			return cq_fail(err, CQ_EINVAL, "a model arena's pointer %llu is outside its arrays",
						   (unsigned long long) i);
	m = cq_alloc(sizeof(*m));
	if (!m)
		return cq_fail(err, CQ_ENOMEM, "out of memory attaching a model");
	memcpy(m, a + h.model_off, sizeof(*m));
	if (m->cfg.encoder_layers != (int) h.n_enc || m->cfg.decoder_layers != (int) h.n_dec ||
		m->n_tensors != (int) h.n_tensors || !m->compact)
	{
		cq_free(m);
		return cq_fail(err, CQ_EINVAL, "a model arena's head does not match its model");
	}
	/* every pointer of the copy is the flattening process's until set here */
	m->attached = true;
	m->raw = NULL;
	m->packed_raw = NULL;
	m->params = h.params_bytes ? (float *) (a + h.params_off) : NULL;
	m->tensors = (cq_tensor_info *) (a + h.tensors_off);
	m->enc = cq_alloc(sizeof(cq_encoder_layer) * (h.n_enc ? h.n_enc : 1));
	m->dec = cq_alloc(sizeof(cq_decoder_layer) * (h.n_dec ? h.n_dec : 1));
	at = cq_alloc(sizeof(void *) * (h.n_slots ? h.n_slots : 1));
	if (!m->enc || !m->dec || !at)
	{
		cq_free(at);
		cq_model_free(m);
		return cq_fail(err, CQ_ENOMEM, "out of memory attaching a model");
	}
	if (h.n_enc)
		memcpy(m->enc, a + h.enc_off, sizeof(cq_encoder_layer) * h.n_enc);
	if (h.n_dec)
		memcpy(m->dec, a + h.dec_off, sizeof(cq_decoder_layer) * h.n_dec);
	if ((uint64_t) list_slots(m, at) != h.n_slots)
	{
		cq_free(at);
		cq_model_free(m);
		return cq_fail(err, CQ_EINVAL, "a model arena's pointers do not match its model");
	}
	for (uint64_t i = 0; i < h.n_slots; i++)
		set_ptr(at[i], offs[i] ? a + offs[i] : NULL);
	cq_free(at);
	*out = m;
	return CQ_OK;
}
