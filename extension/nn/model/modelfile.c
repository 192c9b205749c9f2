#include "nn/model/modelfile.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "common/tensorfile.h"

static const cq_tensorfile_format model_format = {
	.magic = CQ_MODELFILE_MAGIC, .version = CQ_MODELFILE_VERSION,
	.what = "weight file", .bad_magic = "not a corpq weight file",
	.config_max = 65536, .tensors_max = 100000, .section_max = (uint64_t) 1 << 48,
};

/* The model's tensor i for the shared writer. */
static void
get_tensor(const void *ctx, int i, const char **name, int *ndim, const int **dims,
		   size_t *offset)
{
	const cq_tensor_info *t = &((const cq_model *) ctx)->tensors[i];

	*name = t->name;
	*ndim = t->ndim;
	*dims = t->dims;
	*offset = t->offset;
}

size_t
cq_modelfile_size(const cq_model *m)
{
	char		cfg[1024];
	size_t		clen = cq_config_to_json(&m->cfg, cfg, sizeof(cfg)),
				table = 0;

	for (int i = 0; i < m->n_tensors; i++)
		table += cq_tensorfile_record_bytes(strlen(m->tensors[i].name), m->tensors[i].ndim);
	return cq_tensorfile_data_offset(clen, table) + m->n_floats * sizeof(float) + 4;
}

/*
 * A failure of the shared reader or writer (common/tensorfile.h) with its
 * message: out of memory and bad arguments as they are, anything else a
 * malformed weight file (models/FORMAT.md).
 */
static cq_code
from_tensorfile(const cq_error *e, cq_error *err)
{
	cq_code		s = e->code == CQ_ENOMEM || e->code == CQ_EINVAL ? e->code : CQ_EFORMAT;

	return cq_fail(err, s, "%s", e->msg);
}

cq_code
cq_modelfile_write(const cq_model *m, void *buf, size_t size, cq_error *err)
{
	char		cfg[1024];
	size_t		clen = cq_config_to_json(&m->cfg, cfg, sizeof(cfg));
	cq_error	e;

	if (m->compact)
		return cq_fail(err, CQ_EINVAL, "a compacted model has no weight file");
	if (cq_tensorfile_write(&model_format, buf, size, cfg, clen, m->n_tensors, get_tensor, m,
							m->params, m->n_floats, &e) != CQ_OK)
		return from_tensorfile(&e, err);
	return CQ_OK;
}

/* One record of the tensor table into the model. */
static cq_code
read_tensor(cq_tensorfile *tf, cq_model *m, unsigned char *seen, cq_error *err)
{
	cq_tensorfile_record r;
	const cq_tensor_info *t;
	cq_error	e;

	if (cq_tensorfile_next(tf, &r, &e) != CQ_OK)
		return from_tensorfile(&e, err);
	t = cq_model_tensor(m, r.name);
	if (!t)
		return cq_fail(err, CQ_EFORMAT, "weight file has an unknown tensor \"%s\"", r.name);
	if (seen[t - m->tensors]++)
		return cq_fail(err, CQ_EFORMAT, "weight file has tensor \"%s\" twice", r.name);
	if (r.ndim != t->ndim || r.dims[0] != (uint32_t) t->dims[0] ||
		(r.ndim == 2 && r.dims[1] != (uint32_t) t->dims[1]))
		return cq_fail(err, CQ_EFORMAT, "tensor \"%s\" has shape [%u%s%u], the config needs [%d%s%d]",
						  r.name, r.dims[0], r.ndim == 2 ? ", " : "", r.ndim == 2 ? r.dims[1] : 0,
						  t->dims[0], t->ndim == 2 ? ", " : "", t->ndim == 2 ? t->dims[1] : 0);
	if (cq_tensorfile_place(tf, &r, t->numel, m->params + t->offset, &e) != CQ_OK)
		return from_tensorfile(&e, err);
	return CQ_OK;
}

static cq_code
read_tensors(cq_tensorfile *tf, cq_model *m, cq_error *err)
{
	unsigned char *seen = cq_alloc0(m->n_tensors);
	cq_code s = CQ_OK;
	cq_error	e;

	if (!seen)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < tf->n_tensors && !s; i++)
		s = read_tensor(tf, m, seen, err);
	for (int i = 0; i < m->n_tensors && !s; i++)
		if (!seen[i])
			s = cq_fail(err, CQ_EFORMAT, "weight file lacks tensor \"%s\"", m->tensors[i].name);
	if (!s && cq_tensorfile_finish(tf, &e) != CQ_OK)
		s = from_tensorfile(&e, err);
	cq_free(seen);
	return s;
}

cq_code
cq_modelfile_load(const void *buf, size_t len, cq_model **out, cq_error *err)
{
	cq_tensorfile tf;
	cq_error	e;
	cq_model_config cfg;
	size_t		floats,
				params;
	cq_code s;

	*out = NULL;
	if (cq_tensorfile_open(&tf, &model_format, buf, len, &e) != CQ_OK)
		return from_tensorfile(&e, err);
	if ((s = cq_config_from_json(tf.config, tf.config_len, &cfg, err)))
		return s;
	/* a small file must not make us allocate a large model: tensors do not overlap */
	cq_model_size_for(&cfg, &floats, &params);
	if (params * 4 > tf.data_size)
		return cq_fail(err, CQ_EFORMAT,
						  "weight file data section has %llu bytes, the config's tensors need %zu",
						  (unsigned long long) tf.data_size, params * 4);
	if ((s = cq_model_new(&cfg, out, err)))
		return s;
	if ((s = read_tensors(&tf, *out, err)))
	{
		cq_model_free(*out);
		*out = NULL;
	}
	cq_tensorfile_close(&tf);
	return s;
}

cq_code
cq_modelfile_load_path(const char *path, cq_model **out, cq_error *err)
{
	FILE	   *f = fopen(path, "rb");
	long		len;
	void	   *buf = NULL;
	cq_code s;

	*out = NULL;
	if (!f)
		return cq_fail(err, CQ_EIO, "could not open weight file \"%s\"", path);
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
		!(buf = cq_alloc(len)) || fread(buf, 1, len, f) != (size_t) len)
		s = buf ? cq_fail(err, CQ_EIO, "could not read weight file \"%s\"", path)
			: cq_fail(err, CQ_ENOMEM, "out of memory reading \"%s\"", path);
	else
		s = cq_modelfile_load(buf, len, out, err);
	fclose(f);
	cq_free(buf);
	return s;
}

cq_code
cq_modelfile_save_path(const cq_model *m, const char *path, cq_error *err)
{
	size_t		size = cq_modelfile_size(m);
	void	   *buf = cq_alloc(size);
	FILE	   *f;
	cq_code s;

	if (!buf)
		return cq_fail(err, CQ_ENOMEM, "out of memory for a %zu-byte weight file", size);
	s = cq_modelfile_write(m, buf, size, err);
	if (!s)
	{
		f = fopen(path, "wb");
		if (!f || fwrite(buf, 1, size, f) != size)
			s = cq_fail(err, CQ_EIO, "could not write weight file \"%s\"", path);
		if (f && fclose(f) != 0 && !s)
			s = cq_fail(err, CQ_EIO, "could not write weight file \"%s\"", path);
	}
	cq_free(buf);
	return s;
}
