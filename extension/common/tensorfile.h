/*
 * The tensor-file framing shared by corpq's weight files (models/FORMAT.md
 * "Weight file", models/ANTAP.md "Weight file"): a 40-byte header (8-byte
 * magic, u32 version, u32 config_len, u32 n_tensors, u32 reserved 0, u64
 * data_offset, u64 data_size), the configuration JSON, the tensor table,
 * zero bytes up to the 64-byte aligned data section of little-endian
 * tensors (each 64-byte aligned), and the CRC-32 of everything before it.
 * A format (its magic, versions, limits and the name used in messages) is a
 * cq_tensorfile_format; the configuration and which tensors must appear are
 * the caller's.
 *
 * A format may have a typed version: there the byte after a record's ndim,
 * reserved (0) in the untyped version, is the tensor's dtype (float32 or
 * int8).  A writer writes the untyped version when every tensor is float32,
 * so a file that needs no dtype has the bytes it had before dtypes existed.
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

/* How a tensor's values are stored. */
typedef enum cq_dtype
{
	CQ_DTYPE_FLOAT32 = 0,		/* IEEE 754 binary32, little-endian, every value finite */
	CQ_DTYPE_INT8 = 1			/* two's complement bytes (quantization codes) */
} cq_dtype;

#define CQ_DTYPE_COUNT 2

/* Bytes of one value: 4 or 1. */
size_t		cq_dtype_size(cq_dtype t);
const char *cq_dtype_name(cq_dtype t);	/* "float32", "int8" */

typedef struct cq_tensorfile_format
{
	const char *magic;			/* 8 bytes */
	uint32_t	version;		/* the untyped version: every tensor float32 */
	uint32_t	typed_version;	/* the version whose records carry a dtype, 0: none */
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
	cq_dtype	dtype;			/* float32 in an untyped version */
	uint64_t	offset;
} cq_tensorfile_record;

/* ---- writing ---- */

/* A tensor to write. */
typedef struct cq_tensorfile_entry
{
	const char *name;			/* 1..63 printable ASCII bytes */
	int			ndim;			/* 1 or 2 */
	uint32_t	dims[2];
	cq_dtype	dtype;
} cq_tensorfile_entry;

/*
 * The tensors of a file being written, in order: entry(ctx, i, e) describes
 * record i, fill(ctx, i, dst) writes its numel x dtype-size bytes
 * (little-endian) to dst.  The writer places each at the next 64-byte
 * boundary of the data section and zeroes the padding.
 */
typedef struct cq_tensorfile_source
{
	int			n;
	void		(*entry) (const void *ctx, int i, cq_tensorfile_entry *e);
	void		(*fill) (const void *ctx, int i, unsigned char *dst);
	const void *ctx;
} cq_tensorfile_source;

/* The size of the file of config_len bytes of JSON and src's tensors. */
size_t		cq_tensorfile_size(size_t config_len, const cq_tensorfile_source *src);

/*
 * Write the whole file into buf (size bytes, at least the file's size):
 * header, config, src's records, zero padding, the data, the CRC.  The
 * version is fmt->version when every tensor is float32, else
 * fmt->typed_version.  CQ_EINVAL if buf is too small or a tensor is not
 * float32 in a format without a typed version.
 */
cq_code		cq_tensorfile_write(const cq_tensorfile_format *fmt, void *buf, size_t size,
								const char *config, size_t config_len,
								const cq_tensorfile_source *src, cq_error *err);

/*
 * The part of the file before its data section, for a writer that fills the
 * data itself (a stream): header, config, src's records and the zero bytes
 * up to the data section, into buf[0..cq_tensorfile_head_size) (size bytes
 * at least), the same bytes cq_tensorfile_write writes there (src->fill is
 * not called).  offsets (when not NULL, src->n of them): each record's
 * offset in the data section; *data_size: the section's bytes.  The data
 * section follows, each tensor zero-padded to 64 bytes, then the CRC-32 of
 * everything before it.
 */
size_t		cq_tensorfile_head_size(size_t config_len, const cq_tensorfile_source *src);
cq_code		cq_tensorfile_write_head(const cq_tensorfile_format *fmt, void *buf, size_t size,
									 const char *config, size_t config_len,
									 const cq_tensorfile_source *src, uint64_t *offsets,
									 uint64_t *data_size, cq_error *err);

/* ---- reading ---- */

typedef enum cq_tensorfile_check
{
	CQ_TF_FRAMING = 0,			/* a header, table or data rule */
	CQ_TF_MAGIC,
	CQ_TF_TRUNCATED,			/* shorter than the header or than it says */
	CQ_TF_VERSION,
	CQ_TF_CHECKSUM,
	CQ_TF_VALUE,				/* a non-finite value or an out-of-range code */
	CQ_TF_MEMORY
} cq_tensorfile_check;

typedef struct cq_tensorfile
{
	const cq_tensorfile_format *fmt;
	const unsigned char *p;
	const char *config;
	uint32_t	version,		/* the file's: fmt->version or fmt->typed_version */
				config_len,
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
 * bytes, ndim 1 or 2, the byte after it 0 or, in a typed version, a known
 * dtype, inside the table).  Call only tf->n_tensors times.
 */
cq_code		cq_tensorfile_next(cq_tensorfile *tf, cq_tensorfile_record *rec, cq_error *err);

/*
 * Place rec's float32 tensor of numel values: it is float32, its offset is
 * 64-byte aligned, its bytes lie in the data section and overlap no tensor
 * placed before; copy them into dst (host order) and check every value is
 * finite.
 */
cq_code		cq_tensorfile_place(cq_tensorfile *tf, const cq_tensorfile_record *rec,
								size_t numel, float *dst, cq_error *err);

/*
 * Place rec's int8 tensor of numel codes as cq_tensorfile_place does, check
 * every code lies in [-qmax, qmax], and point *codes at them in the image.
 */
cq_code		cq_tensorfile_place_codes(cq_tensorfile *tf, const cq_tensorfile_record *rec,
									  size_t numel, int qmax, const int8_t **codes,
									  cq_error *err);

/* After the last record: the bytes up to the data section are zero. */
cq_code		cq_tensorfile_finish(cq_tensorfile *tf, cq_error *err);

/* Release what the reader holds (always, after open succeeded). */
void		cq_tensorfile_close(cq_tensorfile *tf);

#endif
