/*
 * ANTAP weight files (models/ANTAP.md): nn's weight-file layout
 * (models/FORMAT.md: header, config JSON, tensor table, aligned float32
 * data, CRC-32) under the magic "CORPQAP\0" and ANTAP's configuration.
 */
#include <math.h>
#include <string.h>

#include "antap/model.h"
#include "common/crc32.h"
#include "common/le.h"
#include "common/mem.h"

#define HEADER 40
#define CONFIG_MAX 4096

static size_t
table_bytes(const cq_antap_model *m)
{
	size_t		n = 0;

	for (int i = 0; i < m->n_tensors; i++)
		n += 2 + strlen(m->tensors[i].name) + 2 + 4 * m->tensors[i].ndim + 8;
	return n;
}

static size_t
data_offset(const cq_antap_model *m, size_t config_len)
{
	return (HEADER + config_len + table_bytes(m) + 63) / 64 * 64;
}

size_t
cq_antap_file_size(const cq_antap_model *m)
{
	char		cfg[CONFIG_MAX];

	return data_offset(m, cq_antap_config_to_json(&m->cfg, cfg, sizeof(cfg))) +
		m->n_floats * sizeof(float) + 4;
}

cq_code
cq_antap_file_write(const cq_antap_model *m, void *buf, size_t size, cq_error *err)
{
	unsigned char *p = buf;
	char		cfg[CONFIG_MAX];
	size_t		clen = cq_antap_config_to_json(&m->cfg, cfg, sizeof(cfg)),
				off = data_offset(m, clen),
				dsize = m->n_floats * sizeof(float),
				pos = HEADER + clen;

	if (size < off + dsize + 4)
		return cq_fail(err, CQ_EINVAL, "buffer of %zu bytes is too small for the %zu-byte file",
					   size, off + dsize + 4);
	memset(p, 0, off);
	memcpy(p, CQ_ANTAP_FILE_MAGIC, 8);
	cq_le_put_u32(p + 8, CQ_ANTAP_FILE_VERSION);
	cq_le_put_u32(p + 12, (uint32_t) clen);
	cq_le_put_u32(p + 16, (uint32_t) m->n_tensors);
	cq_le_put_u64(p + 24, off);
	cq_le_put_u64(p + 32, dsize);
	memcpy(p + HEADER, cfg, clen);
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
	cq_le_copy_floats(p + off, m->params, m->n_floats);
	cq_le_put_u32(p + off + dsize, cq_crc32(0, p, off + dsize));
	return CQ_OK;
}

typedef struct header
{
	uint32_t	config_len,
				n_tensors;
	uint64_t	data_off,
				data_size;
} header;

static cq_code
read_header(const unsigned char *p, size_t len, header *h, cq_error *err)
{
	if (len < 8 || memcmp(p, CQ_ANTAP_FILE_MAGIC, 8) != 0)
		return cq_fail(err, CQ_EFORMAT, "not an ANTAP weight file (bad magic)");
	if (len < HEADER)
		return cq_fail(err, CQ_EFORMAT, "ANTAP weight file is truncated: %zu bytes", len);
	if (cq_le_get_u32(p + 8) != CQ_ANTAP_FILE_VERSION)
		return cq_fail(err, CQ_EFORMAT, "ANTAP weight file version %u is not supported (this build reads %d)",
					   cq_le_get_u32(p + 8), CQ_ANTAP_FILE_VERSION);
	h->config_len = cq_le_get_u32(p + 12);
	h->n_tensors = cq_le_get_u32(p + 16);
	h->data_off = cq_le_get_u64(p + 24);
	h->data_size = cq_le_get_u64(p + 32);
	if (cq_le_get_u32(p + 20) != 0 || h->config_len > CONFIG_MAX || h->n_tensors > 1000 ||
		h->data_off % 64 != 0 || h->data_off < HEADER + (uint64_t) h->config_len ||
		h->data_size % 4 != 0 || h->data_off > ((uint64_t) 1 << 40) ||
		h->data_size > ((uint64_t) 1 << 40))
		return cq_fail(err, CQ_EFORMAT, "ANTAP weight file header is inconsistent");
	if (len != h->data_off + h->data_size + 4)
		return cq_fail(err, CQ_EFORMAT, "ANTAP weight file has %zu bytes, its header says %llu",
					   len, (unsigned long long) (h->data_off + h->data_size + 4));
	if (cq_crc32(0, p, h->data_off + h->data_size) != cq_le_get_u32(p + h->data_off + h->data_size))
		return cq_fail(err, CQ_EFORMAT, "ANTAP weight file checksum does not match");
	return CQ_OK;
}

/* One record of the tensor table at *pos (bounded by end) into m. */
static cq_code
read_tensor(const unsigned char *p, size_t *pos, size_t end, const header *h,
			cq_antap_model *m, unsigned char *seen, cq_error *err)
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
		return cq_fail(err, CQ_EFORMAT, "ANTAP weight file tensor table is malformed");
	memcpy(name, p + q + 2, nlen);
	name[nlen] = '\0';
	q += 2 + nlen;
	ndim = p[q];
	if (ndim < 1 || ndim > 2 || p[q + 1] != 0 || q + 2 + 4 * ndim + 8 > end)
		return cq_fail(err, CQ_EFORMAT, "ANTAP weight file tensor table is malformed at \"%s\"", name);
	q += 2;
	for (unsigned k = 0; k < ndim; k++, q += 4)
		dims[k] = cq_le_get_u32(p + q);
	off = cq_le_get_u64(p + q);
	*pos = q + 8;
	if (!(t = cq_antap_tensor(m, name)))
		return cq_fail(err, CQ_EFORMAT, "ANTAP weight file has an unknown tensor \"%s\"", name);
	if (seen[t - m->tensors]++)
		return cq_fail(err, CQ_EFORMAT, "ANTAP weight file has tensor \"%s\" twice", name);
	if ((int) ndim != t->ndim || dims[0] != (uint32_t) t->dims[0] ||
		(ndim == 2 && dims[1] != (uint32_t) t->dims[1]))
		return cq_fail(err, CQ_EFORMAT, "tensor \"%s\" has the wrong shape for the configuration", name);
	if (off % 64 != 0 || off > h->data_size || h->data_size - off < t->numel * 4)
		return cq_fail(err, CQ_EFORMAT, "tensor \"%s\" lies outside the data section", name);
	cq_le_copy_floats(m->params + t->offset, p + h->data_off + off, t->numel);
	for (size_t i = 0; i < t->numel; i++)
		if (!isfinite(m->params[t->offset + i]))
			return cq_fail(err, CQ_EFORMAT, "tensor \"%s\" has a non-finite value at index %zu",
						   name, i);
	return CQ_OK;
}

static cq_code
read_tensors(const unsigned char *p, const header *h, cq_antap_model *m, cq_error *err)
{
	size_t		pos = HEADER + h->config_len;
	unsigned char *seen = cq_alloc0(m->n_tensors);
	cq_code		rc = CQ_OK;

	if (!seen)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < h->n_tensors && rc == CQ_OK; i++)
		rc = read_tensor(p, &pos, h->data_off, h, m, seen, err);
	for (int i = 0; i < m->n_tensors && rc == CQ_OK; i++)
		if (!seen[i])
			rc = cq_fail(err, CQ_EFORMAT, "ANTAP weight file lacks tensor \"%s\"", m->tensors[i].name);
	for (size_t q = pos; q < h->data_off && rc == CQ_OK; q++)
		if (p[q] != 0)
			rc = cq_fail(err, CQ_EFORMAT, "ANTAP weight file has stray bytes after its tensor table");
	cq_free(seen);
	return rc;
}

cq_code
cq_antap_file_load(const void *buf, size_t len, cq_antap_model **out, cq_error *err)
{
	const unsigned char *p = buf;
	header		h = {0};
	cq_antap_config cfg;
	cq_code		rc;

	*out = NULL;
	if ((rc = read_header(p, len, &h, err)) != CQ_OK ||
		(rc = cq_antap_config_from_json((const char *) p + HEADER, h.config_len, &cfg, err)) != CQ_OK)
		return rc;
	/* a small file must not make us allocate a large model: tensors do not overlap */
	if (cq_antap_config_params(&cfg) * 4 > h.data_size)
		return cq_fail(err, CQ_EFORMAT, "ANTAP weight file data section is smaller than its tensors");
	if ((rc = cq_antap_new(&cfg, out, err)) != CQ_OK)
		return rc;
	if ((rc = read_tensors(p, &h, *out, err)) != CQ_OK)
	{
		cq_antap_free(*out);
		*out = NULL;
	}
	return rc;
}
