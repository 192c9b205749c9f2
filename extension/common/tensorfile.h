/*
 * The tensor-file framing shared by corpq's weight files (models/FORMAT.md
 * "Weight file", models/ANTAP.md "Weight file"): a 40-byte header (8-byte
 * magic, u32 version, u32 config_len, u32 n_tensors, u32 reserved 0, u64
 * data_offset, u64 data_size), the configuration JSON, the tensor table,
 * zero bytes up to the 64-byte aligned data section of little-endian
 * float32, and the CRC-32 of everything before it.  A format (its magic,
 * version, limits and the name used in messages) is a cq_tensorfile_format;
 * the configuration and which tensors must appear are the caller's.
 *
 * Failures are common/error.h categories (CQ_EFORMAT for every broken
 * framing rule); a reader also records which check failed
 * (cq_tensorfile.check) so that a caller with finer codes can map it.
 */
#ifndef CQ_COMMON_TENSORFILE_H
#define CQ_COMMON_TENSORFILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define CQ_TENSORFILE_HEADER 40
#define CQ_TENSORFILE_ALIGN 64
#define CQ_TENSORFILE_NAME_MAX 64	/* names are 1..63 bytes */

typedef struct cq_tensorfile_format
{
	const char *magic;			/* 8 bytes */
	uint32_t	version;
	const char *what;			/* "weight file": the subject of messages */
	const char *bad_magic;		/* "not a corpq weight file" */
	uint32_t	config_max;		/* bytes of the config JSON */
	uint32_t	tensors_max;
	uint64_t	section_max;	/* data_offset and data_size */
} cq_tensorfile_format;

/* One tensor record; offset in bytes from the data section's start. */
typedef struct cq_tensorfile_record
{
	char		name[CQ_TENSORFILE_NAME_MAX];
	int			ndim;			/* 1 or 2 */
	uint32_t	dims[2];
	uint64_t	offset;
} cq_tensorfile_record;

/* ---- writing ---- */

/* Bytes of the table record of a tensor with this name length and ndim. */
size_t		cq_tensorfile_record_bytes(size_t name_len, int ndim);

/* Offset of the data section after config_len bytes of JSON and
 * table_bytes of records; the file is that plus 4 * n_floats plus 4. */
size_t		cq_tensorfile_data_offset(size_t config_len, size_t table_bytes);

/* Record i of the table being written (offset in floats into data). */
typedef void (*cq_tensorfile_get) (const void *ctx, int i, const char **name,
								   int *ndim, const int **dims, size_t *offset_floats);

/*
 * Write the whole file into buf (size bytes, at least the file's size):
 * header, config, the n_tensors records get() returns, zero padding, the
 * n_floats of data, the CRC.  CQ_EINVAL if buf is too small.
 */
cq_code		cq_tensorfile_write(const cq_tensorfile_format *fmt, void *buf, size_t size,
								const char *config, size_t config_len,
								int n_tensors, cq_tensorfile_get get, const void *ctx,
								const float *data, size_t n_floats, cq_error *err);

/* ---- reading ---- */

typedef enum cq_tensorfile_check
{
	CQ_TF_FRAMING = 0,			/* a header, table or data rule */
	CQ_TF_MAGIC,
	CQ_TF_TRUNCATED,			/* shorter than the header or than it says */
	CQ_TF_VERSION,
	CQ_TF_CHECKSUM,
	CQ_TF_VALUE,				/* a non-finite value in a tensor */
	CQ_TF_MEMORY
} cq_tensorfile_check;

typedef struct cq_tensorfile
{
	const cq_tensorfile_format *fmt;
	const unsigned char *p;
	const char *config;
	uint32_t	config_len,
				n_tensors;
	uint64_t	data_off,
				data_size;
	cq_tensorfile_check check;	/* after a failure: which check */
	/* private */
	size_t		pos;
	uint32_t	read;
	int			n_placed;
	uint64_t   *placed;			/* per placed tensor: start, end, table pos */
} cq_tensorfile;

/*
 * Check the header, the length and the checksum of the len-byte image buf
 * (which must outlive tf) and fill tf; tf->config then points at the
 * config JSON (config_len bytes, not NUL-terminated).
 */
cq_code		cq_tensorfile_open(cq_tensorfile *tf, const cq_tensorfile_format *fmt,
							   const void *buf, size_t len, cq_error *err);

/*
 * The next of the header's n_tensors records (its name 1..63 printable ASCII
 * bytes, ndim 1 or 2, reserved byte 0, inside the table).  Call only
 * tf->n_tensors times.
 */
cq_code		cq_tensorfile_next(cq_tensorfile *tf, cq_tensorfile_record *rec, cq_error *err);

/*
 * Place rec's tensor of numel floats: its offset is 64-byte aligned, its
 * bytes lie in the data section and overlap no tensor placed before; copy
 * them into dst (host order) and check every value is finite.
 */
cq_code		cq_tensorfile_place(cq_tensorfile *tf, const cq_tensorfile_record *rec,
								size_t numel, float *dst, cq_error *err);

/* After the last record: the bytes up to the data section are zero. */
cq_code		cq_tensorfile_finish(cq_tensorfile *tf, cq_error *err);

/* Release what the reader holds (always, after open succeeded). */
void		cq_tensorfile_close(cq_tensorfile *tf);

#endif
