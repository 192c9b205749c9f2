/*
 * Training checkpoints (models/FORMAT.md, "Training checkpoints"): a
 * 128-byte header, the model's weight-file image, the two AdamW moment
 * blocks in the parameter layout, CRC-32 over everything before it.
 */
#include <string.h>

#include "common/crc32.h"
#include "common/mem.h"
#include "nn/model/modelfile.h"
#include "nn/train/train_state.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoints are written in host order, which must be little-endian"
#endif

#define ALIGN64(x) (((x) + 63) / 64 * 64)

/* Header fields after magic, version (u32) and reserved (u32), at offset 16. */
typedef struct ckpt_header
{
	uint64_t	model_bytes;
	uint64_t	n_floats;
	int64_t		step;
	int64_t		epoch;
	int64_t		batch_in_epoch;
	uint64_t	seed;
	double		lr;
	double		warmup_init_lr;
	double		clip_norm;
	float		beta1,
				beta2,
				eps,
				weight_decay,
				label_smoothing;
	int32_t		warmup_updates;
	int32_t		update_freq;
	int32_t		max_tokens;
	int32_t		dropout;
	uint32_t	zero;				/* 0; an encoder model's: its scale's float bits */
} ckpt_header;						/* 112 bytes, no padding: 16 + 112 = 128 */

/*
 * The loss's parameters by the model's kind: a translation model's label
 * smoothing (and 0 after the last field), an encoder's margin (in label
 * smoothing's place) and scale (in the last field).
 */
static void
put_loss(const cq_train_state *st, ckpt_header *h)
{
	if (st->model->cfg.kind != CQ_KIND_ENCODER)
		return;
	h->label_smoothing = st->tc.margin;
	memcpy(&h->zero, &st->tc.scale, sizeof(float));
}

static cq_code
get_loss(const cq_model *m, const ckpt_header *h, cq_train_config *tc, cq_error *err)
{
	cq_train_config def;

	if (m->cfg.kind != CQ_KIND_ENCODER)
		return h->zero != 0 ? cq_fail(err, CQ_EFORMAT, "the training checkpoint header has invalid fields")
			: CQ_OK;
	cq_train_config_default(&def);
	tc->label_smoothing = def.label_smoothing;
	tc->margin = h->label_smoothing;
	memcpy(&tc->scale, &h->zero, sizeof(float));
	return CQ_OK;
}

_Static_assert(16 + sizeof(ckpt_header) <= CQ_TRAIN_CKPT_HEADER, "header fits");

static size_t
moments_offset(size_t model_bytes)
{
	return ALIGN64(CQ_TRAIN_CKPT_HEADER + model_bytes);
}

size_t
cq_train_checkpoint_size(const cq_train_state *st)
{
	return moments_offset(cq_modelfile_size(st->model)) +
		2 * sizeof(float) * st->model->n_floats + 4;
}

cq_code
cq_train_checkpoint_write(const cq_train_state *st, void *buf, size_t size,
						  cq_error *err)
{
	const cq_train_config *tc = &st->tc;
	size_t		mb = cq_modelfile_size(st->model),
				need = cq_train_checkpoint_size(st),
				mo = moments_offset(mb),
				nf = st->model->n_floats;
	char	   *out = buf;
	uint32_t	version = CQ_TRAIN_CKPT_VERSION,
				crc;
	ckpt_header h = {mb, nf, st->step, st->epoch, st->batch_in_epoch, tc->seed,
		tc->lr, tc->warmup_init_lr, tc->clip_norm, tc->adam.beta1, tc->adam.beta2,
		tc->adam.eps, tc->adam.weight_decay, tc->label_smoothing, tc->warmup_updates,
	tc->update_freq, tc->max_tokens, tc->dropout, 0};
	cq_code s;

	put_loss(st, &h);

	if (!buf || size < need)
		return cq_fail(err, CQ_EINVAL, "checkpoint buffer of %zu bytes, %zu needed", size, need);
	memset(out, 0, mo);
	memcpy(out, CQ_TRAIN_CKPT_MAGIC, 8);
	memcpy(out + 8, &version, 4);
	memcpy(out + 16, &h, sizeof(h));
	if ((s = cq_modelfile_write(st->model, out + CQ_TRAIN_CKPT_HEADER, mb, err)))
		return s;
	memcpy(out + mo, st->exp_avg, sizeof(float) * nf);
	memcpy(out + mo + sizeof(float) * nf, st->exp_avg_sq, sizeof(float) * nf);
	crc = cq_crc32(0, out, need - 4);
	memcpy(out + need - 4, &crc, 4);
	return CQ_OK;
}

cq_code
cq_train_checkpoint_load(const void *buf, size_t len, cq_train_state **out,
						 cq_error *err)
{
	const char *in = buf;
	uint32_t	version,
				reserved,
				crc;
	ckpt_header h;
	cq_train_config tc;
	cq_model   *m = NULL;
	cq_code s;
	size_t		mo;

	*out = NULL;
	if (!buf || len < CQ_TRAIN_CKPT_HEADER + 4)
		return cq_fail(err, CQ_EFORMAT, "a training checkpoint has at least %d bytes, this one %zu",
						  CQ_TRAIN_CKPT_HEADER + 4, len);
	if (memcmp(in, CQ_TRAIN_CKPT_MAGIC, 8) != 0)
		return cq_fail(err, CQ_EFORMAT, "not a corpq training checkpoint");
	memcpy(&version, in + 8, 4);
	memcpy(&reserved, in + 12, 4);
	if (version != CQ_TRAIN_CKPT_VERSION)
		return cq_fail(err, CQ_EFORMAT, "training checkpoint version %u is not supported (only %d)",
						  version, CQ_TRAIN_CKPT_VERSION);
	memcpy(&h, in + 16, sizeof(h));
	if (h.model_bytes > len || h.n_floats > len / 8)
		return cq_fail(err, CQ_EFORMAT, "the checkpoint is shorter than its header says");
	mo = moments_offset(h.model_bytes);
	if (mo + 8 * h.n_floats + 4 != len)
		return cq_fail(err, CQ_EFORMAT, "the checkpoint has %zu bytes, its header says %zu",
						  len, (size_t) (mo + 8 * h.n_floats + 4));
	memcpy(&crc, in + len - 4, 4);
	if (crc != cq_crc32(0, in, len - 4))
		return cq_fail(err, CQ_EFORMAT, "the training checkpoint's checksum does not match");
	if (reserved != 0 || h.step < 0 || h.epoch < 0 || h.batch_in_epoch < 0)
		return cq_fail(err, CQ_EFORMAT, "the training checkpoint header has invalid fields");
	cq_train_config_default(&tc);
	tc = (cq_train_config) {h.lr, h.warmup_init_lr, h.warmup_updates,
		{h.beta1, h.beta2, h.eps, h.weight_decay}, h.clip_norm, h.label_smoothing,
	h.update_freq, h.max_tokens, h.seed, h.dropout != 0, tc.margin, tc.scale};
	if ((s = cq_modelfile_load(in + CQ_TRAIN_CKPT_HEADER, h.model_bytes, &m, err)))
		return s;
	if (m->n_floats != h.n_floats)
	{
		cq_model_free(m);
		return cq_fail(err, CQ_EFORMAT, "the checkpoint's moments have %zu floats, its model %zu",
						  (size_t) h.n_floats, m->n_floats);
	}
	if ((s = get_loss(m, &h, &tc, err)))
	{
		cq_model_free(m);
		return s;
	}
	s = cq_train_state_new(m, &tc, out, err);
	cq_model_free(m);
	if (s)
		return s;
	memcpy((*out)->exp_avg, in + mo, sizeof(float) * h.n_floats);
	memcpy((*out)->exp_avg_sq, in + mo + sizeof(float) * h.n_floats, sizeof(float) * h.n_floats);
	(*out)->step = h.step;
	(*out)->epoch = h.epoch;
	(*out)->batch_in_epoch = h.batch_in_epoch;
	return CQ_OK;
}
