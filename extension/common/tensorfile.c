/*
 * The tensor-file framing of corpq's weight files: see tensorfile.h.
 */
#include "common/tensorfile.h"

#include <math.h>
#include <string.h>

#include "common/crc32.h"
#include "common/le.h"
#include "common/mem.h"

size_t
cq_tensorfile_record_bytes(size_t name_len, int ndim)
{
	return 2 + name_len + 2 + 4 * (size_t) ndim + 8;
}

size_t
cq_tensorfile_data_offset(size_t config_len, size_t table_bytes)
{
	return (CQ_TENSORFILE_HEADER + config_len + table_bytes + CQ_TENSORFILE_ALIGN - 1) /
		CQ_TENSORFILE_ALIGN * CQ_TENSORFILE_ALIGN;
}

cq_code
cq_tensorfile_write(const cq_tensorfile_format *fmt, void *buf, size_t size,
					const char *config, size_t config_len,
					int n_tensors, cq_tensorfile_get get, const void *ctx,
					const float *data, size_t n_floats, cq_error *err)
{
	unsigned char *p = buf;
	size_t		table = 0,
				data_off,
				data_size = n_floats * sizeof(float),
				pos;
	const char *name;
	const int  *dims;
	int			ndim;
	size_t		off;

	for (int i = 0; i < n_tensors; i++)
	{
		get(ctx, i, &name, &ndim, &dims, &off);
		table += cq_tensorfile_record_bytes(strlen(name), ndim);
	}
	data_off = cq_tensorfile_data_offset(config_len, table);
	if (size < data_off + data_size + 4)
		return cq_fail(err, CQ_EINVAL, "buffer of %zu bytes is too small for the %zu-byte file",
					   size, data_off + data_size + 4);
	memset(p, 0, data_off);
	memcpy(p, fmt->magic, 8);
	cq_le_put_u32(p + 8, fmt->version);
	cq_le_put_u32(p + 12, (uint32_t) config_len);
	cq_le_put_u32(p + 16, (uint32_t) n_tensors);
	cq_le_put_u64(p + 24, data_off);
	cq_le_put_u64(p + 32, data_size);
	memcpy(p + CQ_TENSORFILE_HEADER, config, config_len);
	pos = CQ_TENSORFILE_HEADER + config_len;
	for (int i = 0; i < n_tensors; i++)
	{
		size_t		nlen;

		get(ctx, i, &name, &ndim, &dims, &off);
		nlen = strlen(name);
		p[pos++] = (unsigned char) nlen;	/* u16, names are < 64 bytes */
		p[pos++] = 0;
		memcpy(p + pos, name, nlen);
		pos += nlen;
		p[pos++] = (unsigned char) ndim;
		p[pos++] = 0;
		for (int k = 0; k < ndim; k++, pos += 4)
			cq_le_put_u32(p + pos, (uint32_t) dims[k]);
		cq_le_put_u64(p + pos, off * sizeof(float));
		pos += 8;
	}
	cq_le_copy_floats(p + data_off, data, n_floats);
	cq_le_put_u32(p + data_off + data_size, cq_crc32(0, p, data_off + data_size));
	return CQ_OK;
}

cq_code
cq_tensorfile_open(cq_tensorfile *tf, const cq_tensorfile_format *fmt,
				   const void *buf, size_t len, cq_error *err)
{
	const unsigned char *p = buf;
	const char *what = fmt->what;
	uint32_t	version;
	uint64_t	end;

	memset(tf, 0, sizeof(*tf));
	tf->fmt = fmt;
	tf->p = p;
	if (len < 8 || memcmp(p, fmt->magic, 8) != 0)
	{
		tf->check = CQ_TF_MAGIC;
		return cq_fail(err, CQ_EFORMAT, "%s (bad magic)", fmt->bad_magic);
	}
	tf->check = CQ_TF_TRUNCATED;
	if (len < CQ_TENSORFILE_HEADER)
		return cq_fail(err, CQ_EFORMAT, "%s is truncated: %zu bytes", what, len);
	tf->check = CQ_TF_VERSION;
	version = cq_le_get_u32(p + 8);
	if (version != fmt->version)
		return cq_fail(err, CQ_EFORMAT, "%s format version %u is not supported (this build reads %u)",
					   what, version, fmt->version);
	tf->check = CQ_TF_FRAMING;
	tf->config_len = cq_le_get_u32(p + 12);
	tf->n_tensors = cq_le_get_u32(p + 16);
	tf->data_off = cq_le_get_u64(p + 24);
	tf->data_size = cq_le_get_u64(p + 32);
	if (cq_le_get_u32(p + 20) != 0)
		return cq_fail(err, CQ_EFORMAT, "%s header: reserved field is not zero", what);
	if (tf->config_len > fmt->config_max || tf->n_tensors > fmt->tensors_max ||
		tf->data_off % CQ_TENSORFILE_ALIGN != 0 ||
		tf->data_off < CQ_TENSORFILE_HEADER + (uint64_t) tf->config_len ||
		tf->data_size % 4 != 0 || tf->data_off > fmt->section_max ||
		tf->data_size > fmt->section_max)
		return cq_fail(err, CQ_EFORMAT, "%s header is inconsistent", what);
	end = tf->data_off + tf->data_size + 4;
	if (len < end)
	{
		tf->check = CQ_TF_TRUNCATED;
		return cq_fail(err, CQ_EFORMAT, "%s is truncated: %zu bytes, the header says %llu",
					   what, len, (unsigned long long) end);
	}
	if (len > end)
		return cq_fail(err, CQ_EFORMAT, "%s has %llu bytes after its checksum",
					   what, (unsigned long long) (len - end));
	if (cq_crc32(0, p, end - 4) != cq_le_get_u32(p + end - 4))
	{
		tf->check = CQ_TF_CHECKSUM;
		return cq_fail(err, CQ_EFORMAT, "%s checksum does not match (corrupted file)", what);
	}
	tf->config = (const char *) p + CQ_TENSORFILE_HEADER;
	tf->pos = CQ_TENSORFILE_HEADER + tf->config_len;
	return CQ_OK;
}

cq_code
cq_tensorfile_next(cq_tensorfile *tf, cq_tensorfile_record *rec, cq_error *err)
{
	const unsigned char *p = tf->p;
	const char *what = tf->fmt->what;
	size_t		q = tf->pos,
				end = tf->data_off;
	unsigned	nlen;

	tf->check = CQ_TF_FRAMING;
	if (tf->read >= tf->n_tensors)
		return cq_fail(err, CQ_EINTERNAL, "%s has only %u tensor records", what, tf->n_tensors);
	if (q + 2 > end || (nlen = p[q] | p[q + 1] << 8) >= CQ_TENSORFILE_NAME_MAX || nlen == 0 ||
		q + 2 + nlen + 2 > end)
		return cq_fail(err, CQ_EFORMAT, "%s tensor table is malformed", what);
	for (unsigned i = 0; i < nlen; i++)
		if (p[q + 2 + i] < 0x20 || p[q + 2 + i] > 0x7e)
			return cq_fail(err, CQ_EFORMAT,
						   "%s tensor table: the name of tensor %u has byte 0x%02x (names are printable ASCII)",
						   what, tf->read, p[q + 2 + i]);
	memcpy(rec->name, p + q + 2, nlen);
	rec->name[nlen] = '\0';
	q += 2 + nlen;
	rec->ndim = p[q];
	if (rec->ndim < 1 || rec->ndim > 2 || q + 2 + 4 * (size_t) rec->ndim + 8 > end)
		return cq_fail(err, CQ_EFORMAT, "%s tensor table is malformed at \"%s\"", what, rec->name);
	if (p[q + 1] != 0)
		return cq_fail(err, CQ_EFORMAT, "%s tensor table: the reserved byte of \"%s\" is not zero",
					   what, rec->name);
	q += 2;
	rec->dims[0] = rec->dims[1] = 0;
	for (int k = 0; k < rec->ndim; k++, q += 4)
		rec->dims[k] = cq_le_get_u32(p + q);
	rec->offset = cq_le_get_u64(p + q);
	tf->pos = q + 8;
	tf->read++;
	return CQ_OK;
}

cq_code
cq_tensorfile_place(cq_tensorfile *tf, const cq_tensorfile_record *rec,
					size_t numel, float *dst, cq_error *err)
{
	uint64_t	off = rec->offset,
				stop;

	tf->check = CQ_TF_FRAMING;
	if (off % CQ_TENSORFILE_ALIGN != 0 || off > tf->data_size || tf->data_size - off < numel * 4)
		return cq_fail(err, CQ_EFORMAT, "tensor \"%s\" lies outside the data section", rec->name);
	stop = off + numel * 4;
	if (!tf->placed && tf->n_tensors > 0 &&
		!(tf->placed = cq_alloc(sizeof(uint64_t) * 2 * tf->n_tensors)))
	{
		tf->check = CQ_TF_MEMORY;
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	}
	for (int i = 0; i < tf->n_placed; i++)
		if (off < tf->placed[2 * i + 1] && tf->placed[2 * i] < stop && numel > 0)
			return cq_fail(err, CQ_EFORMAT, "tensor \"%s\" overlaps an earlier tensor in the data section",
						   rec->name);
	if (tf->n_placed < (int) tf->n_tensors)
	{
		tf->placed[2 * tf->n_placed] = off;
		tf->placed[2 * tf->n_placed + 1] = stop;
		tf->n_placed++;
	}
	cq_le_copy_floats(dst, tf->p + tf->data_off + off, numel);
	for (size_t i = 0; i < numel; i++)
		if (!isfinite(dst[i]))
		{
			tf->check = CQ_TF_VALUE;
			return cq_fail(err, CQ_EFORMAT, "tensor \"%s\" has a non-finite value (%g) at index %zu",
						   rec->name, (double) dst[i], i);
		}
	return CQ_OK;
}

cq_code
cq_tensorfile_finish(cq_tensorfile *tf, cq_error *err)
{
	tf->check = CQ_TF_FRAMING;
	for (size_t q = tf->pos; q < tf->data_off; q++)
		if (tf->p[q] != 0)
			return cq_fail(err, CQ_EFORMAT, "%s has stray bytes after its tensor table", tf->fmt->what);
	return CQ_OK;
}

void
cq_tensorfile_close(cq_tensorfile *tf)
{
	cq_free(tf->placed);
	tf->placed = NULL;
	tf->n_placed = 0;
}
