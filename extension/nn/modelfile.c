#include "nn/modelfile.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/crc32.h"
#include "common/le.h"
#include "common/mem.h"

#define CONFIG_MAX 65536

/* Bytes of the tensor table for m's tensors. */
static size_t
table_bytes(const cq_model *m)
{
	size_t		n = 0;

	for (int i = 0; i < m->n_tensors; i++)
		n += 2 + strlen(m->tensors[i].name) + 2 + 4 * m->tensors[i].ndim + 8;
	return n;
}

static size_t
data_offset_of(const cq_model *m, size_t config_len)
{
	return (CQ_MODELFILE_HEADER + config_len + table_bytes(m) + 63) / 64 * 64;
}

size_t
cq_modelfile_size(const cq_model *m)
{
	char		cfg[1024];
	size_t		clen = cq_config_to_json(&m->cfg, cfg, sizeof(cfg));

	return data_offset_of(m, clen) + m->n_floats * sizeof(float) + 4;
}

cq_nn_status
cq_modelfile_write(const cq_model *m, void *buf, size_t size, cq_nn_error *err)
{
	unsigned char *p = buf;
	char		cfg[1024];
	size_t		clen = cq_config_to_json(&m->cfg, cfg, sizeof(cfg));
	size_t		data_off = data_offset_of(m, clen),
				data_size = m->n_floats * sizeof(float),
				pos;

	if (size < data_off + data_size + 4)
		return cq_nn_fail(err, CQ_NN_EINVAL, "buffer of %zu bytes is too small for the %zu-byte file",
						  size, data_off + data_size + 4);
	memset(p, 0, data_off);
	memcpy(p, CQ_MODELFILE_MAGIC, 8);
	cq_le_put_u32(p + 8, CQ_MODELFILE_VERSION);
	cq_le_put_u32(p + 12, (uint32_t) clen);
	cq_le_put_u32(p + 16, (uint32_t) m->n_tensors);
	cq_le_put_u64(p + 24, data_off);
	cq_le_put_u64(p + 32, data_size);
	memcpy(p + CQ_MODELFILE_HEADER, cfg, clen);
	pos = CQ_MODELFILE_HEADER + clen;
	for (int i = 0; i < m->n_tensors; i++)
	{
		const cq_tensor_info *t = &m->tensors[i];
		size_t		nlen = strlen(t->name);

		p[pos++] = (unsigned char) nlen;
		p[pos++] = 0;
		memcpy(p + pos, t->name, nlen);
		pos += nlen;
		p[pos++] = (unsigned char) t->ndim;
		p[pos++] = 0;
		for (int k = 0; k < t->ndim; k++, pos += 4)
			cq_le_put_u32(p + pos, (uint32_t) t->dims[k]);
		cq_le_put_u64(p + pos, t->offset * sizeof(float));
		pos += 8;
	}
	cq_le_copy_floats(p + data_off, m->params, m->n_floats);
	cq_le_put_u32(p + data_off + data_size, cq_crc32(0, p, data_off + data_size));
	return CQ_NN_OK;
}

/* The header fields the loader checks before reading anything else. */
typedef struct header
{
	uint32_t	config_len,
				n_tensors;
	uint64_t	data_off,
				data_size;
} header;

static cq_nn_status
read_header(const unsigned char *p, size_t len, header *h, cq_nn_error *err)
{
	uint32_t	version;

	if (len < 8 || memcmp(p, CQ_MODELFILE_MAGIC, 8) != 0)
		return cq_nn_fail(err, CQ_NN_EMAGIC, "not a corpq weight file (bad magic)");
	if (len < CQ_MODELFILE_HEADER)
		return cq_nn_fail(err, CQ_NN_ETRUNCATED, "weight file is truncated: %zu bytes", len);
	version = cq_le_get_u32(p + 8);
	if (version != CQ_MODELFILE_VERSION)
		return cq_nn_fail(err, CQ_NN_EVERSION, "weight file format version %u is not supported (this build reads %d)",
						  version, CQ_MODELFILE_VERSION);
	h->config_len = cq_le_get_u32(p + 12);
	h->n_tensors = cq_le_get_u32(p + 16);
	h->data_off = cq_le_get_u64(p + 24);
	h->data_size = cq_le_get_u64(p + 32);
	if (cq_le_get_u32(p + 20) != 0)
		return cq_nn_fail(err, CQ_NN_EFORMAT, "weight file header: reserved field is not zero");
	if (h->config_len > CONFIG_MAX || h->n_tensors > 100000 || h->data_off % 64 != 0 ||
		h->data_off < CQ_MODELFILE_HEADER + (uint64_t) h->config_len ||
		h->data_size % 4 != 0 || h->data_off > ((uint64_t) 1 << 48) ||
		h->data_size > ((uint64_t) 1 << 48))
		return cq_nn_fail(err, CQ_NN_EFORMAT, "weight file header is inconsistent");
	if (len < h->data_off + h->data_size + 4)
		return cq_nn_fail(err, CQ_NN_ETRUNCATED, "weight file is truncated: %zu bytes, the header says %llu",
						  len, (unsigned long long) (h->data_off + h->data_size + 4));
	if (len > h->data_off + h->data_size + 4)
		return cq_nn_fail(err, CQ_NN_EFORMAT, "weight file has %llu bytes after its checksum",
						  (unsigned long long) (len - h->data_off - h->data_size - 4));
	if (cq_crc32(0, p, h->data_off + h->data_size) != cq_le_get_u32(p + h->data_off + h->data_size))
		return cq_nn_fail(err, CQ_NN_ECHECKSUM, "weight file checksum does not match (corrupted file)");
	return CQ_NN_OK;
}

/* One record of the tensor table at *pos (bounded by end) into the model. */
static cq_nn_status
read_tensor(const unsigned char *p, size_t *pos, size_t end, const header *h,
			cq_model *m, unsigned char *seen, cq_nn_error *err)
{
	size_t		q = *pos;
	char		name[CQ_TENSOR_NAME_MAX];
	unsigned	nlen,
				ndim;
	uint32_t	dims[2] = {0, 0};
	uint64_t	off;
	const cq_tensor_info *t;

	if (q + 2 > end || (nlen = p[q] | p[q + 1] << 8) >= CQ_TENSOR_NAME_MAX || nlen == 0 ||
		q + 2 + nlen + 2 > end)
		return cq_nn_fail(err, CQ_NN_EFORMAT, "weight file tensor table is malformed");
	memcpy(name, p + q + 2, nlen);
	name[nlen] = '\0';
	q += 2 + nlen;
	ndim = p[q];
	if (ndim < 1 || ndim > 2 || p[q + 1] != 0 || q + 2 + 4 * ndim + 8 > end)
		return cq_nn_fail(err, CQ_NN_EFORMAT, "weight file tensor table is malformed at \"%s\"", name);
	q += 2;
	for (unsigned k = 0; k < ndim; k++, q += 4)
		dims[k] = cq_le_get_u32(p + q);
	off = cq_le_get_u64(p + q);
	*pos = q + 8;
	t = cq_model_tensor(m, name);
	if (!t)
		return cq_nn_fail(err, CQ_NN_ETENSOR, "weight file has an unknown tensor \"%s\"", name);
	if (seen[t - m->tensors]++)
		return cq_nn_fail(err, CQ_NN_ETENSOR, "weight file has tensor \"%s\" twice", name);
	if ((int) ndim != t->ndim || dims[0] != (uint32_t) t->dims[0] ||
		(ndim == 2 && dims[1] != (uint32_t) t->dims[1]))
		return cq_nn_fail(err, CQ_NN_ETENSOR, "tensor \"%s\" has shape [%u%s%u], the config needs [%d%s%d]",
						  name, dims[0], ndim == 2 ? ", " : "", ndim == 2 ? dims[1] : 0,
						  t->dims[0], t->ndim == 2 ? ", " : "", t->ndim == 2 ? t->dims[1] : 0);
	if (off % 64 != 0 || off > h->data_size || h->data_size - off < t->numel * 4)
		return cq_nn_fail(err, CQ_NN_EFORMAT, "tensor \"%s\" lies outside the data section", name);
	cq_le_copy_floats(m->params + t->offset, p + h->data_off + off, t->numel);
	for (size_t i = 0; i < t->numel; i++)
		if (!isfinite(m->params[t->offset + i]))
			return cq_nn_fail(err, CQ_NN_ETENSOR, "tensor \"%s\" has a non-finite value (%g) at index %zu",
							  name, (double) m->params[t->offset + i], i);
	return CQ_NN_OK;
}

static cq_nn_status
read_tensors(const unsigned char *p, const header *h, cq_model *m, cq_nn_error *err)
{
	size_t		pos = CQ_MODELFILE_HEADER + h->config_len;
	unsigned char *seen = cq_alloc0(m->n_tensors);
	cq_nn_status s = CQ_NN_OK;

	if (!seen)
		return cq_nn_fail(err, CQ_NN_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < h->n_tensors && !s; i++)
		s = read_tensor(p, &pos, h->data_off, h, m, seen, err);
	for (int i = 0; i < m->n_tensors && !s; i++)
		if (!seen[i])
			s = cq_nn_fail(err, CQ_NN_ETENSOR, "weight file lacks tensor \"%s\"", m->tensors[i].name);
	for (size_t q = pos; q < h->data_off && !s; q++)
		if (p[q] != 0)
			s = cq_nn_fail(err, CQ_NN_EFORMAT, "weight file has stray bytes after its tensor table");
	cq_free(seen);
	return s;
}

cq_nn_status
cq_modelfile_load(const void *buf, size_t len, cq_model **out, cq_nn_error *err)
{
	const unsigned char *p = buf;
	header		h = {0};
	cq_model_config cfg;
	size_t		floats,
				params;
	cq_nn_status s;

	*out = NULL;
	if ((s = read_header(p, len, &h, err)) ||
		(s = cq_config_from_json((const char *) p + CQ_MODELFILE_HEADER, h.config_len, &cfg, err)))
		return s;
	/* a small file must not make us allocate a large model: tensors do not overlap */
	cq_model_size_for(&cfg, &floats, &params);
	if (params * 4 > h.data_size)
		return cq_nn_fail(err, CQ_NN_EFORMAT,
						  "weight file data section has %llu bytes, the config's tensors need %zu",
						  (unsigned long long) h.data_size, params * 4);
	if ((s = cq_model_new(&cfg, out, err)))
		return s;
	if ((s = read_tensors(p, &h, *out, err)))
	{
		cq_model_free(*out);
		*out = NULL;
	}
	return s;
}

cq_nn_status
cq_modelfile_load_path(const char *path, cq_model **out, cq_nn_error *err)
{
	FILE	   *f = fopen(path, "rb");
	long		len;
	void	   *buf = NULL;
	cq_nn_status s;

	*out = NULL;
	if (!f)
		return cq_nn_fail(err, CQ_NN_EIO, "could not open weight file \"%s\"", path);
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
		!(buf = cq_alloc(len)) || fread(buf, 1, len, f) != (size_t) len)
		s = buf ? cq_nn_fail(err, CQ_NN_EIO, "could not read weight file \"%s\"", path)
			: cq_nn_fail(err, CQ_NN_ENOMEM, "out of memory reading \"%s\"", path);
	else
		s = cq_modelfile_load(buf, len, out, err);
	fclose(f);
	cq_free(buf);
	return s;
}

cq_nn_status
cq_modelfile_save_path(const cq_model *m, const char *path, cq_nn_error *err)
{
	size_t		size = cq_modelfile_size(m);
	void	   *buf = cq_alloc(size);
	FILE	   *f;
	cq_nn_status s;

	if (!buf)
		return cq_nn_fail(err, CQ_NN_ENOMEM, "out of memory for a %zu-byte weight file", size);
	s = cq_modelfile_write(m, buf, size, err);
	if (!s)
	{
		f = fopen(path, "wb");
		if (!f || fwrite(buf, 1, size, f) != size)
			s = cq_nn_fail(err, CQ_NN_EIO, "could not write weight file \"%s\"", path);
		if (f && fclose(f) != 0 && !s)
			s = cq_nn_fail(err, CQ_NN_EIO, "could not write weight file \"%s\"", path);
	}
	cq_free(buf);
	return s;
}
