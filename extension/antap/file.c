/*
 * ANTAP weight files (models/ANTAP.md): the shared tensor-file framing
 * (common/tensorfile.h, models/FORMAT.md) under the magic "CORPQAP\0" and
 * ANTAP's configuration.
 */
#include <string.h>

#include "antap/model.h"
#include "common/le.h"
#include "common/mem.h"
#include "common/tensorfile.h"

#define CONFIG_MAX 4096

static const cq_tensorfile_format antap_format = {
	.magic = CQ_ANTAP_FILE_MAGIC, .version = CQ_ANTAP_FILE_VERSION,
	.what = "ANTAP weight file", .bad_magic = "not an ANTAP weight file",
	.config_max = CONFIG_MAX, .tensors_max = 1000, .section_max = (uint64_t) 1 << 40,
};

static void
entry(const void *ctx, int i, cq_tensorfile_entry *e)
{
	const cq_tensor_info *t = &((const cq_antap_model *) ctx)->tensors[i];

	*e = (cq_tensorfile_entry) {t->name, t->ndim, {(uint32_t) t->dims[0], (uint32_t) t->dims[1]},
	CQ_DTYPE_FLOAT32};
}

static void
fill(const void *ctx, int i, unsigned char *dst)
{
	const cq_antap_model *m = ctx;

	cq_le_copy_floats(dst, m->params + m->tensors[i].offset, m->tensors[i].numel);
}

static cq_tensorfile_source
source(const cq_antap_model *m)
{
	return (cq_tensorfile_source) {m->n_tensors, entry, fill, m};
}

size_t
cq_antap_file_size(const cq_antap_model *m)
{
	char		cfg[CONFIG_MAX];
	cq_tensorfile_source src = source(m);

	return cq_tensorfile_size(cq_antap_config_to_json(&m->cfg, cfg, sizeof(cfg)), &src);
}

cq_code
cq_antap_file_write(const cq_antap_model *m, void *buf, size_t size, cq_error *err)
{
	char		cfg[CONFIG_MAX];
	size_t		clen = cq_antap_config_to_json(&m->cfg, cfg, sizeof(cfg));
	cq_tensorfile_source src = source(m);

	return cq_tensorfile_write(&antap_format, buf, size, cfg, clen, &src, err);
}

/* One record of the tensor table into m. */
static cq_code
read_tensor(cq_tensorfile *tf, cq_antap_model *m, unsigned char *seen, cq_error *err)
{
	cq_tensorfile_record r;
	const cq_tensor_info *t;
	cq_code		rc;

	if ((rc = cq_tensorfile_next(tf, &r, err)) != CQ_OK)
		return rc;
	if (!(t = cq_antap_tensor(m, r.name)))
		return cq_fail(err, CQ_EFORMAT, "ANTAP weight file has an unknown tensor \"%s\"", r.name);
	if (seen[t - m->tensors]++)
		return cq_fail(err, CQ_EFORMAT, "ANTAP weight file has tensor \"%s\" twice", r.name);
	if (r.ndim != t->ndim || r.dims[0] != (uint32_t) t->dims[0] ||
		(r.ndim == 2 && r.dims[1] != (uint32_t) t->dims[1]))
		return cq_fail(err, CQ_EFORMAT, "tensor \"%s\" has the wrong shape for the configuration", r.name);
	return cq_tensorfile_place(tf, &r, t->numel, m->params + t->offset, err);
}

static cq_code
read_tensors(cq_tensorfile *tf, cq_antap_model *m, cq_error *err)
{
	unsigned char *seen = cq_alloc0(m->n_tensors);
	cq_code		rc = CQ_OK;

	if (!seen)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < tf->n_tensors && rc == CQ_OK; i++)
		rc = read_tensor(tf, m, seen, err);
	for (int i = 0; i < m->n_tensors && rc == CQ_OK; i++)
		if (!seen[i])
			rc = cq_fail(err, CQ_EFORMAT, "ANTAP weight file lacks tensor \"%s\"", m->tensors[i].name);
	if (rc == CQ_OK)
		rc = cq_tensorfile_finish(tf, err);
	cq_free(seen);
	return rc;
}

cq_code
cq_antap_file_load(const void *buf, size_t len, cq_antap_model **out, cq_error *err)
{
	cq_tensorfile tf;
	cq_antap_config cfg;
	cq_code		rc;

	*out = NULL;
	if ((rc = cq_tensorfile_open(&tf, &antap_format, buf, len, err)) != CQ_OK ||
		(rc = cq_antap_config_from_json(tf.config, tf.config_len, &cfg, err)) != CQ_OK)
		return rc;
	/* a small file must not make us allocate a large model: tensors do not overlap */
	if (cq_antap_config_params(&cfg) * 4 > tf.data_size)
		return cq_fail(err, CQ_EFORMAT, "ANTAP weight file data section is smaller than its tensors");
	if ((rc = cq_antap_new(&cfg, out, err)) != CQ_OK)
		return rc;
	if ((rc = read_tensors(&tf, *out, err)) != CQ_OK)
	{
		cq_antap_free(*out);
		*out = NULL;
	}
	cq_tensorfile_close(&tf);
	return rc;
}
