/*
 * The tensor-file framing of corpq's weight files: see tensorfile.h.
 */
#include "common/tensorfile.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "common/crc32.h"
#include "common/le.h"
#include "common/mem.h"

size_t
cq_dtype_size(cq_dtype t)
{
	return t == CQ_DTYPE_INT8 ? 1 : 4;
}

const char *
cq_dtype_name(cq_dtype t)
{
	return t == CQ_DTYPE_INT8 ? "int8" : "float32";
}

static size_t
align_up(size_t n)
{
	return (n + CQ_TENSORFILE_ALIGN - 1) / CQ_TENSORFILE_ALIGN * CQ_TENSORFILE_ALIGN;
}

/* The data bytes of e, padded to the next tensor's alignment. */
static size_t
entry_bytes(const cq_tensorfile_entry *e)
{
	return align_up((size_t) e->dims[0] * (e->ndim == 2 ? e->dims[1] : 1) * cq_dtype_size(e->dtype));
}

/* The table's bytes, the data section's and whether any tensor is not float32. */
static void
measure(const cq_tensorfile_source *src, size_t *table, size_t *data, bool *typed)
{
	cq_tensorfile_entry e;

	*table = *data = 0;
	*typed = false;
	for (int i = 0; i < src->n; i++)
	{
		src->entry(src->ctx, i, &e);
		*table += 2 + strlen(e.name) + 2 + 4 * (size_t) e.ndim + 8;
		*data += entry_bytes(&e);
		*typed |= e.dtype != CQ_DTYPE_FLOAT32;
	}
}

size_t
cq_tensorfile_size(size_t config_len, const cq_tensorfile_source *src)
{
	size_t		table,
				data;
	bool		typed;

	measure(src, &table, &data, &typed);
	return align_up(CQ_TENSORFILE_HEADER + config_len + table) + data + 4;
}

/* Record e at p (the table), its data at offset off of the section. */
static size_t
put_record(unsigned char *p, const cq_tensorfile_entry *e, bool typed, uint64_t off)
{
	size_t		nlen = strlen(e->name),
				pos = 0;

	p[pos++] = (unsigned char) nlen;	/* u16, names are < 64 bytes */
	p[pos++] = 0;
	memcpy(p + pos, e->name, nlen);
	pos += nlen;
	p[pos++] = (unsigned char) e->ndim;
	p[pos++] = typed ? (unsigned char) e->dtype : 0;
	for (int k = 0; k < e->ndim; k++, pos += 4)
		cq_le_put_u32(p + pos, e->dims[k]);
	cq_le_put_u64(p + pos, off);
	return pos + 8;
}

size_t
cq_tensorfile_head_size(size_t config_len, const cq_tensorfile_source *src)
{
	size_t		table,
				data;
	bool		typed;

	measure(src, &table, &data, &typed);
	return align_up(CQ_TENSORFILE_HEADER + config_len + table);
}

cq_code
cq_tensorfile_write_head(const cq_tensorfile_format *fmt, void *buf, size_t size,
						 const char *config, size_t config_len,
						 const cq_tensorfile_source *src, uint64_t *offsets,
						 uint64_t *data_size_out, cq_error *err)
{
	unsigned char *p = buf;
	size_t		table,
				data_size,
				data_off,
				pos,
				off = 0;
	bool		typed;
	cq_tensorfile_entry e;

	measure(src, &table, &data_size, &typed);
	if (typed && fmt->typed_version == 0)
		return cq_fail(err, CQ_EINVAL, "a %s holds float32 tensors only", fmt->what);
	data_off = align_up(CQ_TENSORFILE_HEADER + config_len + table);
	if (size < data_off)
		return cq_fail(err, CQ_EINVAL, "buffer of %zu bytes is too small for the %zu-byte head",
					   size, data_off);
	memset(p, 0, data_off);
	memcpy(p, fmt->magic, 8);
	cq_le_put_u32(p + 8, typed ? fmt->typed_version : fmt->version);
	cq_le_put_u32(p + 12, (uint32_t) config_len);
	cq_le_put_u32(p + 16, (uint32_t) src->n);
	cq_le_put_u64(p + 24, data_off);
	cq_le_put_u64(p + 32, data_size);
	memcpy(p + CQ_TENSORFILE_HEADER, config, config_len);
	pos = CQ_TENSORFILE_HEADER + config_len;
	for (int i = 0; i < src->n; i++)
	{
		src->entry(src->ctx, i, &e);
		pos += put_record(p + pos, &e, typed, off);
		if (offsets)
			offsets[i] = off;
		off += entry_bytes(&e);
	}
	if (data_size_out)
		*data_size_out = data_size;
	return CQ_OK;
}

cq_code
cq_tensorfile_write(const cq_tensorfile_format *fmt, void *buf, size_t size,
					const char *config, size_t config_len,
					const cq_tensorfile_source *src, cq_error *err)
{
	unsigned char *p = buf;
	size_t		data_off = cq_tensorfile_head_size(config_len, src),
				off = 0;
	uint64_t	data_size;
	cq_tensorfile_entry e;
	cq_code		s;

	if (size < data_off || size - data_off < cq_tensorfile_size(config_len, src) - data_off)
		return cq_fail(err, CQ_EINVAL, "buffer of %zu bytes is too small for the %zu-byte file",
					   size, cq_tensorfile_size(config_len, src));
	s = cq_tensorfile_write_head(fmt, buf, size, config, config_len, src, NULL, &data_size, err);
	if (s != CQ_OK)
		return s;
	memset(p + data_off, 0, data_size);
	for (int i = 0; i < src->n; i++)
	{
		src->entry(src->ctx, i, &e);
		src->fill(src->ctx, i, p + data_off + off);
		off += entry_bytes(&e);
	}
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
	if (version != fmt->version && (fmt->typed_version == 0 || version != fmt->typed_version))
		return fmt->typed_version == 0
			? cq_fail(err, CQ_EFORMAT, "%s format version %u is not supported (this build reads %u)",
					  what, version, fmt->version)
			: cq_fail(err, CQ_EFORMAT, "%s format version %u is not supported (this build reads %u and %u)",
					  what, version, fmt->version, fmt->typed_version);
	tf->version = version;
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
	rec->dtype = CQ_DTYPE_FLOAT32;
	if (tf->version != tf->fmt->typed_version && p[q + 1] != 0)
		return cq_fail(err, CQ_EFORMAT, "%s tensor table: the reserved byte of \"%s\" is not zero",
					   what, rec->name);
	if (tf->version == tf->fmt->typed_version)
	{
		if (p[q + 1] >= CQ_DTYPE_COUNT)
			return cq_fail(err, CQ_EFORMAT, "%s tensor table: \"%s\" has unknown dtype %u",
						   what, rec->name, p[q + 1]);
		rec->dtype = (cq_dtype) p[q + 1];
	}
	q += 2;
	rec->dims[0] = rec->dims[1] = 0;
	for (int k = 0; k < rec->ndim; k++, q += 4)
		rec->dims[k] = cq_le_get_u32(p + q);
	rec->offset = cq_le_get_u64(p + q);
	tf->pos = q + 8;
	tf->read++;
	return CQ_OK;
}

/*
 * Claim the bytes of rec's tensor of numel values of dtype want: it has that
 * dtype, its offset is aligned, it lies in the data section and overlaps no
 * tensor claimed before.
 */
static cq_code
claim(cq_tensorfile *tf, const cq_tensorfile_record *rec, size_t numel, cq_dtype want,
	  cq_error *err)
{
	uint64_t	off = rec->offset,
				bytes = numel * cq_dtype_size(want),
				stop;

	tf->check = CQ_TF_FRAMING;
	if (rec->dtype != want)
		return cq_fail(err, CQ_EFORMAT, "tensor \"%s\" is %s, %s expected", rec->name,
					   cq_dtype_name(rec->dtype), cq_dtype_name(want));
	if (off % CQ_TENSORFILE_ALIGN != 0 || off > tf->data_size || tf->data_size - off < bytes)
		return cq_fail(err, CQ_EFORMAT, "tensor \"%s\" lies outside the data section", rec->name);
	stop = off + bytes;
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
	return CQ_OK;
}

cq_code
cq_tensorfile_place(cq_tensorfile *tf, const cq_tensorfile_record *rec,
					size_t numel, float *dst, cq_error *err)
{
	cq_code		s = claim(tf, rec, numel, CQ_DTYPE_FLOAT32, err);

	if (s != CQ_OK)
		return s;
	cq_le_copy_floats(dst, tf->p + tf->data_off + rec->offset, numel);
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
cq_tensorfile_place_codes(cq_tensorfile *tf, const cq_tensorfile_record *rec,
						  size_t numel, int qmax, const int8_t **codes, cq_error *err)
{
	cq_code		s = claim(tf, rec, numel, CQ_DTYPE_INT8, err);
	const int8_t *q;

	if (s != CQ_OK)
		return s;
	/* only a claimed record's offset lies inside the image */
	q = (const int8_t *) (tf->p + tf->data_off + rec->offset);
	for (size_t i = 0; i < numel; i++)
		if (q[i] < -qmax || q[i] > qmax)
		{
			tf->check = CQ_TF_VALUE;
			return cq_fail(err, CQ_EFORMAT, "tensor \"%s\" has code %d at index %zu, outside [-%d, %d]",
						   rec->name, q[i], i, qmax, qmax);
		}
	*codes = q;
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
