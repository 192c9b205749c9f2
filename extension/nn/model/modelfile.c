#include "nn/model/modelfile.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "common/crc32.h"
#include "common/le.h"
#include "common/mem.h"
#include "common/tensorfile.h"
#include "nn/ops/qgemm.h"

static const cq_tensorfile_format model_format = {
	.magic = CQ_MODELFILE_MAGIC, .version = CQ_MODELFILE_VERSION,
	.typed_version = CQ_MODELFILE_VERSION_TYPED,
	.what = "weight file", .bad_magic = "not a corpq weight file",
	.config_max = 65536, .tensors_max = 100000, .section_max = (uint64_t) 1 << 48,
};

/* The scales of code tensor "X" are the float32 tensor "X_scale". */
#define SCALE_SUFFIX "_scale"

/* ---- writing ------------------------------------------------------------ */

/* A record of the file: tensor t of the file's table, or its scales. */
typedef struct file_record
{
	int			t;
	bool		scale;
	char		name[CQ_TENSOR_NAME_MAX + sizeof(SCALE_SUFFIX)];
} file_record;

/*
 * The records of m's weight file: m's float32 tensors, or for an int8 model
 * the tensors of its int8 image (cq_model_coded_tensors), every code tensor
 * followed by its scales, quantized from m's float32 weights by the rule of
 * nn/ops/qgemm.h, the rule an int8 version loaded from float32 weights uses.
 */
typedef struct file_source
{
	const cq_model *m;
	cq_tensor_info *table;		/* m->tensors, or the int8 image's */
	file_record *recs;
	int			n;
	int8_t	   *row;			/* one row's codes, scratch */
} file_source;

static void
source_close(file_source *fs)
{
	if (fs->table != fs->m->tensors)
		cq_free(fs->table);
	cq_free(fs->recs);
	cq_free(fs->row);
}

static bool
source_open(const cq_model *m, file_source *fs)
{
	bool		coded = m->cfg.precision == CQ_PRECISION_INT8;
	int			n = coded ? cq_model_coded_tensors(&m->cfg, NULL) : m->n_tensors;

	*fs = (file_source) {m, m->tensors};
	if (coded && (fs->table = cq_alloc0(sizeof(cq_tensor_info) * n)))
		cq_model_coded_tensors(&m->cfg, fs->table);
	fs->recs = cq_alloc(sizeof(file_record) * 2 * n);
	fs->row = cq_alloc(m->cfg.d_model > m->cfg.ffn_dim ? m->cfg.d_model : m->cfg.ffn_dim);
	if (!fs->table || !fs->recs || !fs->row)
	{
		source_close(fs);
		return false;
	}
	for (int t = 0; t < n; t++)
		for (int scale = 0; scale <= (fs->table[t].bits != 0); scale++)
		{
			file_record *r = &fs->recs[fs->n++];

			r->t = t;
			r->scale = scale;
			snprintf(r->name, sizeof(r->name), "%s%s", fs->table[t].name, scale ? SCALE_SUFFIX : "");
		}
	return true;
}

static void
source_entry(const void *ctx, int i, cq_tensorfile_entry *e)
{
	const file_source *fs = ctx;
	const file_record *r = &fs->recs[i];
	const cq_tensor_info *t = &fs->table[r->t];

	e->name = r->name;
	e->ndim = r->scale ? 1 : t->ndim;
	e->dims[0] = (uint32_t) t->dims[0];
	e->dims[1] = r->scale ? 0 : (uint32_t) t->dims[1];
	e->dtype = t->bits && !r->scale ? CQ_DTYPE_INT8 : CQ_DTYPE_FLOAT32;
}

/*
 * The float32 values of tensor t of the file: m's tensor of that name; the
 * one an int8 image has and m lacks is a tied output projection's own
 * codes, quantized from the embedding it is tied to.
 */
static const float *
source_values(const cq_model *m, const cq_tensor_info *t)
{
	const cq_tensor_info *own = cq_model_tensor(m, t->name);

	return own ? m->params + own->offset : m->out_proj;
}

static void
source_fill(const void *ctx, int i, unsigned char *dst)
{
	const file_source *fs = ctx;
	const file_record *r = &fs->recs[i];
	const cq_tensor_info *t = &fs->table[r->t];
	const float *v = source_values(fs->m, t);
	int			cols = t->dims[1];

	if (!t->bits)
	{
		cq_le_copy_floats(dst, v, t->numel);
		return;
	}
	for (int row = 0; row < t->dims[0]; row++)
	{
		const float *w = v + (size_t) row * cols;

		if (r->scale)
		{
			float		scale = cq_qgemm_quantize_vec_bits(w, cols, t->bits, fs->row);

			cq_le_copy_floats(dst + 4 * (size_t) row, &scale, 1);
		}
		else
			(void) cq_qgemm_quantize_vec_bits(w, cols, t->bits, (int8_t *) dst + (size_t) row * cols);
	}
}

static size_t
config_json(const cq_model *m, char *buf, size_t size)
{
	return cq_config_to_json(&m->cfg, buf, size);
}

size_t
cq_modelfile_size(const cq_model *m)
{
	char		cfg[1024];
	size_t		clen = config_json(m, cfg, sizeof(cfg)),
				size;
	file_source fs;

	if (!source_open(m, &fs))
		return 0;
	size = cq_tensorfile_size(clen, &(cq_tensorfile_source) {fs.n, source_entry, source_fill, &fs});
	source_close(&fs);
	return size;
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
	size_t		clen = config_json(m, cfg, sizeof(cfg));
	file_source fs;
	cq_error	e;
	cq_code		s = CQ_OK;

	if (m->compact)
		return cq_fail(err, CQ_EINVAL, "a compacted model has no weight file");
	if (!source_open(m, &fs))
		return cq_fail(err, CQ_ENOMEM, "out of memory writing a weight file");
	if (cq_tensorfile_write(&model_format, buf, size, cfg, clen,
							&(cq_tensorfile_source) {fs.n, source_entry, source_fill, &fs},
							&e) != CQ_OK)
		s = from_tensorfile(&e, err);
	source_close(&fs);
	return s;
}

/* ---- reading ------------------------------------------------------------ */

typedef struct reader
{
	cq_tensorfile *tf;
	cq_model   *m;
	unsigned char *seen;		/* per tensor: 1 its values or codes, 2 its scales */
	const int8_t **codes;		/* code tensors: their codes, in the image */
	float	   *scales;			/* every code tensor's scales */
	size_t	   *scale_at;		/* where tensor t's begin in scales */
} reader;

/* The tensor a record names: that tensor, or (X_scale) code tensor X's scales. */
static const cq_tensor_info *
lookup(const cq_model *m, const char *name, bool *scale)
{
	const cq_tensor_info *t = cq_model_tensor(m, name);
	size_t		n = strlen(name),
				k = strlen(SCALE_SUFFIX);
	char		base[CQ_TENSOR_NAME_MAX];

	*scale = false;
	if (t || n <= k || strcmp(name + n - k, SCALE_SUFFIX) != 0)
		return t;
	memcpy(base, name, n - k);
	base[n - k] = '\0';
	t = cq_model_tensor(m, base);
	*scale = t && t->bits;
	return *scale ? t : NULL;
}

/* The record's shape is t's (its scales: [rows]). */
static cq_code
check_shape(const cq_tensorfile_record *r, const cq_tensor_info *t, bool scale, cq_error *err)
{
	int			ndim = scale ? 1 : t->ndim;
	char		have[32],
				need[32];

	if (r->ndim == ndim && r->dims[0] == (uint32_t) t->dims[0] &&
		(ndim == 1 || r->dims[1] == (uint32_t) t->dims[1]))
		return CQ_OK;
	snprintf(have, sizeof(have), r->ndim == 2 ? "%u, %u" : "%u", r->dims[0], r->dims[1]);
	snprintf(need, sizeof(need), ndim == 2 ? "%d, %d" : "%d", t->dims[0], t->dims[1]);
	return cq_fail(err, CQ_EFORMAT, "tensor \"%s\" has shape [%s], the config needs [%s]",
				   r->name, have, need);
}

/* The record's values into the model, or its codes or scales aside for packing. */
static cq_code
place(reader *rd, const cq_tensorfile_record *r, const cq_tensor_info *t, bool scale,
	  cq_error *err)
{
	size_t		ti = t - rd->m->tensors;
	float	   *sc;
	cq_error	e;

	if (!scale && !t->bits)
		return cq_tensorfile_place(rd->tf, r, t->numel, rd->m->params + t->offset, &e)
			? from_tensorfile(&e, err) : CQ_OK;
	if (!scale)
		return cq_tensorfile_place_codes(rd->tf, r, t->numel, (1 << (t->bits - 1)) - 1,
										 &rd->codes[ti], &e) ? from_tensorfile(&e, err) : CQ_OK;
	sc = rd->scales + rd->scale_at[ti];
	if (cq_tensorfile_place(rd->tf, r, t->dims[0], sc, &e) != CQ_OK)
		return from_tensorfile(&e, err);
	for (int i = 0; i < t->dims[0]; i++)
		if (signbit(sc[i]))
			return cq_fail(err, CQ_EFORMAT, "tensor \"%s\" has a negative scale (%g) at index %d",
						   r->name, (double) sc[i], i);
	return CQ_OK;
}

/* One record of the tensor table into the model. */
static cq_code
read_tensor(reader *rd, cq_error *err)
{
	cq_tensorfile_record r;
	const cq_tensor_info *t;
	bool		scale;
	unsigned char bit;
	cq_error	e;
	cq_code		s;

	if (cq_tensorfile_next(rd->tf, &r, &e) != CQ_OK)
		return from_tensorfile(&e, err);
	t = lookup(rd->m, r.name, &scale);
	if (!t)
		return cq_fail(err, CQ_EFORMAT, "weight file has an unknown tensor \"%s\"", r.name);
	bit = scale ? 2 : 1;
	if (rd->seen[t - rd->m->tensors] & bit)
		return cq_fail(err, CQ_EFORMAT, "weight file has tensor \"%s\" twice", r.name);
	rd->seen[t - rd->m->tensors] |= bit;
	if ((s = check_shape(&r, t, scale, err)))
		return s;
	return place(rd, &r, t, scale, err);
}

/* Every tensor (and code tensor's scales) present; pack the codes. */
static cq_code
read_end(reader *rd, cq_error *err)
{
	cq_model   *m = rd->m;
	cq_error	e;

	for (int i = 0; i < m->n_tensors; i++)
		if (rd->seen[i] != (m->tensors[i].bits ? 3 : 1))
			return cq_fail(err, CQ_EFORMAT, "weight file lacks tensor \"%s%s\"", m->tensors[i].name,
						   rd->seen[i] & 1 ? SCALE_SUFFIX : "");
	if (cq_tensorfile_finish(rd->tf, &e) != CQ_OK)
		return from_tensorfile(&e, err);
	for (int i = 0; i < m->n_tensors; i++)
		if (m->tensors[i].bits)
			cq_model_fill_codes(m, &m->tensors[i], rd->codes[i], rd->scales + rd->scale_at[i]);
	return CQ_OK;
}

static cq_code
read_tensors(cq_tensorfile *tf, cq_model *m, cq_error *err)
{
	reader		rd = {tf, m};
	size_t		rows = 0;
	cq_code		s = CQ_OK;

	rd.seen = cq_alloc0(m->n_tensors);
	rd.codes = cq_alloc0(sizeof(int8_t *) * m->n_tensors);
	rd.scale_at = cq_alloc0(sizeof(size_t) * m->n_tensors);
	for (int i = 0; rd.scale_at && i < m->n_tensors; i++)
	{
		rd.scale_at[i] = rows;
		rows += m->tensors[i].bits ? m->tensors[i].dims[0] : 0;
	}
	rd.scales = cq_alloc(sizeof(float) * (rows + 1));
	if (!rd.seen || !rd.codes || !rd.scale_at || !rd.scales)
		s = cq_fail(err, CQ_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < tf->n_tensors && !s; i++)
		s = read_tensor(&rd, err);
	if (!s)
		s = read_end(&rd, err);
	cq_free(rd.seen);
	cq_free(rd.codes);
	cq_free(rd.scale_at);
	cq_free(rd.scales);
	return s;
}

cq_code
cq_modelfile_load(const void *buf, size_t len, cq_model **out, cq_error *err)
{
	cq_tensorfile tf;
	cq_error	e;
	cq_model_config cfg;
	bool		coded = false;
	size_t		need;
	cq_code s;

	*out = NULL;
	if (cq_tensorfile_open(&tf, &model_format, buf, len, &e) != CQ_OK)
		return from_tensorfile(&e, err);
	if ((s = cq_config_from_json(tf.config, tf.config_len, &cfg, err)))
		return s;
	/* an int8 model in a typed file is its codes; in a version-1 file its float32 weights */
	coded = tf.version == CQ_MODELFILE_VERSION_TYPED && cfg.precision == CQ_PRECISION_INT8;
	/* a small file must not make us allocate a large model: tensors do not overlap */
	need = cq_model_data_min(&cfg, coded);
	if (need > tf.data_size)
		return cq_fail(err, CQ_EFORMAT,
					   "weight file data section has %llu bytes, the config's tensors need %zu",
					   (unsigned long long) tf.data_size, need);
	if ((s = coded ? cq_model_new_coded(&cfg, out, err) : cq_model_new(&cfg, out, err)))
		return s;
	if ((s = read_tensors(&tf, *out, err)))
	{
		cq_model_free(*out);
		*out = NULL;
	}
	cq_tensorfile_close(&tf);
	return s;
}

/*
 * The checks of cq_modelfile_memory on an image's head; *cfg its
 * configuration, *coded whether its tensors are codes (an int8 model in a
 * typed file).
 */
static cq_code
parse_head(const unsigned char *p, size_t head_len, size_t image_len,
		   cq_model_config *cfg, bool *coded, cq_error *err)
{
	uint32_t	version,
				config_len;
	cq_code		s;

	if (head_len < 8 || memcmp(p, model_format.magic, 8) != 0)
		return cq_fail(err, CQ_EFORMAT, "%s (bad magic)", model_format.bad_magic);
	if (head_len < CQ_MODELFILE_HEADER || image_len < head_len)
		return cq_fail(err, CQ_EFORMAT, "weight file is truncated: %zu bytes", head_len);
	version = cq_le_get_u32(p + 8);
	config_len = cq_le_get_u32(p + 12);
	if (version != CQ_MODELFILE_VERSION && version != CQ_MODELFILE_VERSION_TYPED)
		return cq_fail(err, CQ_EFORMAT, "weight file format version %u is not supported (this build reads %u and %u)",
					   version, CQ_MODELFILE_VERSION, CQ_MODELFILE_VERSION_TYPED);
	if (config_len > model_format.config_max || config_len > head_len - CQ_MODELFILE_HEADER)
		return cq_fail(err, CQ_EFORMAT, "weight file header is inconsistent");
	if ((s = cq_config_from_json((const char *) p + CQ_MODELFILE_HEADER, config_len, cfg, err)))
		return s;
	*coded = version == CQ_MODELFILE_VERSION_TYPED && cfg->precision == CQ_PRECISION_INT8;
	return CQ_OK;
}

cq_code
cq_modelfile_memory(const void *head, size_t head_len, size_t image_len,
					cq_model_memory *mem, cq_error *err)
{
	cq_model_config cfg;
	bool		coded = false;
	cq_code		s;

	if ((s = parse_head(head, head_len, image_len, &cfg, &coded, err)))
		return s;
	cq_model_load_memory(&cfg, coded, image_len, mem);
	return CQ_OK;
}

cq_code
cq_modelfile_head(const void *head, size_t head_len, size_t image_len,
				  cq_model_config *cfg, cq_error *err)
{
	const unsigned char *p = head;
	uint64_t	data_offset,
				data_size;
	bool		coded = false;
	cq_code		s;

	if ((s = parse_head(p, head_len, image_len, cfg, &coded, err)))
		return s;
	data_offset = cq_le_get_u64(p + 24);
	data_size = cq_le_get_u64(p + 32);
	if (data_offset > image_len || data_size > image_len ||
		data_offset + data_size + 4 != image_len)
		return cq_fail(err, CQ_EFORMAT,
					   "weight file of %zu bytes, its header says %llu (data offset %llu, data size %llu, CRC 4)",
					   image_len, (unsigned long long) (data_offset + data_size + 4),
					   (unsigned long long) data_offset, (unsigned long long) data_size);
	if (cq_model_data_min(cfg, coded) > data_size)
		return cq_fail(err, CQ_EFORMAT,
					   "weight file data section has %llu bytes, the config's tensors need %zu",
					   (unsigned long long) data_size, cq_model_data_min(cfg, coded));
	return CQ_OK;
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

/* ---- quantizing a float32 image as a stream (cq_modelquant) -------------- */

/* Where a row of an input tensor goes in the int8 image. */
typedef struct quant_target
{
	bool		coded;			/* codes (and scales) or a float32 copy */
	size_t		at;				/* offset in the output of the codes or values */
	size_t		scale_at;		/* coded: offset of the scales */
} quant_target;

/* A tensor of the float32 input, in data order. */
typedef struct quant_input
{
	char		name[CQ_TENSOR_NAME_MAX];
	uint64_t	offset;			/* in the input's data section */
	size_t		rows,
				cols;			/* a 1-d tensor is one row */
	int			n_targets;
	quant_target targets[2];	/* itself; a tied projection's own codes */
} quant_input;

/* A block of the output (cq_modelquant_next). */
enum
{
	BLOCK_WAITING = 0,			/* no byte yet: not allocated */
	BLOCK_OPEN,					/* allocated, bytes still to come */
	BLOCK_READY,				/* complete, not yet taken */
	BLOCK_TAKEN					/* given to the caller (and freed) */
};

struct cq_modelquant
{
	cq_model_config out_cfg;
	int			bits;
	size_t		in_len,
				in_data_off;
	size_t		out_size,
				out_data_off,
				out_data_size;
	quant_input *in;			/* sorted by offset */
	int			n_in;
	/* the stream */
	size_t		pos;			/* input bytes seen */
	uint32_t	crc;			/* of input bytes [0, in_len - 4) */
	unsigned char trailer[4];
	int			cur;			/* the input tensor being read */
	size_t		row,
				fill;			/* its row, and bytes of that row seen */
	unsigned char *rowbuf;		/* one row as stored */
	float	   *rowf;			/* one row, host order */
	int8_t	   *rowq;			/* one row's codes */
	/* the output's records (cq_tensorfile_write_head) */
	cq_tensor_info *table;
	file_record *recs;
	int			n_recs;
	/* the output, in blocks of `block` bytes (the last shorter) */
	size_t		block,
				n_blocks;
	unsigned char **blk;		/* an open or ready block's bytes */
	size_t	   *need;			/* bytes still to come into each block (padding excluded) */
	size_t	   *need0;			/* need before the stream: padding only */
	unsigned char *state;		/* BLOCK_* */
	uint32_t   *blk_crc;		/* a ready block's CRC-32, over its bytes before the trailer */
	size_t	   *ready;			/* ready blocks in the order they completed */
	size_t		n_ready,
				next_ready;
	size_t		taken;			/* the block the caller holds (n_blocks: none) */
	bool		dry;			/* counting open blocks: no bytes move */
	size_t		open,
				peak;
};

/* The record entry of the int8 image (as source_entry, without a model). */
static void
quant_entry(const void *ctx, int i, cq_tensorfile_entry *e)
{
	const cq_modelquant *q = ctx;
	const file_record *r = &q->recs[i];
	const cq_tensor_info *t = &q->table[r->t];

	e->name = r->name;
	e->ndim = r->scale ? 1 : t->ndim;
	e->dims[0] = (uint32_t) t->dims[0];
	e->dims[1] = r->scale ? 0 : (uint32_t) t->dims[1];
	e->dtype = t->bits && !r->scale ? CQ_DTYPE_INT8 : CQ_DTYPE_FLOAT32;
}

/* The bytes of record i's data in the int8 image. */
static size_t
quant_record_bytes(const cq_modelquant *q, int i)
{
	cq_tensorfile_entry e;

	quant_entry(q, i, &e);
	return (size_t) e.dims[0] * (e.ndim == 2 ? e.dims[1] : 1) * (e.dtype == CQ_DTYPE_INT8 ? 1 : 4);
}

void
cq_modelquant_free(cq_modelquant *q)
{
	if (!q)
		return;
	if (q->blk)
		for (size_t b = 0; b < q->n_blocks; b++)
			cq_free(q->blk[b]);
	cq_free(q->blk);
	cq_free(q->need);
	cq_free(q->need0);
	cq_free(q->state);
	cq_free(q->blk_crc);
	cq_free(q->ready);
	cq_free(q->in);
	cq_free(q->rowbuf);
	cq_free(q->rowf);
	cq_free(q->rowq);
	cq_free(q->table);
	cq_free(q->recs);
	cq_free(q);
}

static int
cmp_input(const void *a, const void *b)
{
	const quant_input *x = a,
			   *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Parse the input's table into q->in (checked against cfg's float32 tensors). */
static cq_code
quant_read_table(cq_modelquant *q, const unsigned char *p, size_t head_len,
				 const cq_model_config *cfg, uint64_t data_size, cq_error *err)
{
	uint32_t	config_len = cq_le_get_u32(p + 12),
				n = cq_le_get_u32(p + 16);
	size_t		pos = CQ_MODELFILE_HEADER + config_len,
				end = q->in_data_off,
				widest = 1;
	int			nt = cq_model_float_tensors(cfg, NULL);
	cq_tensor_info *want = cq_alloc0(sizeof(cq_tensor_info) * (size_t) nt);
	bool	   *seen = cq_alloc0(sizeof(bool) * (size_t) nt);
	cq_code		s = CQ_OK;

	if (!want || !seen || !(q->in = cq_alloc0(sizeof(quant_input) * (size_t) (nt + 1))))
	{
		s = cq_fail(err, CQ_ENOMEM, "out of memory reading a weight file's table");
		goto done;
	}
	cq_model_float_tensors(cfg, want);
	if (pos > end)
	{
		s = cq_fail(err, CQ_EFORMAT, "weight file header is inconsistent (its data starts inside its configuration)");
		goto done;
	}
	if (end > head_len)
	{
		s = cq_fail(err, CQ_ELIMIT, "weight file's table ends at byte %zu, past the %zu bytes read ahead",
					end, head_len);
		goto done;
	}
	if (n != (uint32_t) nt)
	{
		s = cq_fail(err, CQ_EFORMAT, "weight file has %u tensors, the configuration %d", n, nt);
		goto done;
	}
	for (uint32_t i = 0; i < n; i++)
	{
		char		name[CQ_TENSOR_NAME_MAX];
		size_t		nlen;
		int			ndim,
					t;
		uint32_t	dims[2] = {0, 0};
		uint64_t	off;
		quant_input *in;

		if (end - pos < 2 || (nlen = cq_le_get_u16(p + pos)) == 0 || nlen >= CQ_TENSOR_NAME_MAX ||
			end - pos < 2 + nlen + 2)
		{
			s = cq_fail(err, CQ_EFORMAT, "weight file tensor record %u is malformed", i);
			goto done;
		}
		memcpy(name, p + pos + 2, nlen);
		name[nlen] = '\0';
		pos += 2 + nlen;
		ndim = p[pos];
		if ((ndim != 1 && ndim != 2) || p[pos + 1] != 0 || end - pos < 2 + 4 * (size_t) ndim + 8)
		{
			s = cq_fail(err, CQ_EFORMAT, "weight file tensor record %u is malformed", i);
			goto done;
		}
		pos += 2;
		for (int k = 0; k < ndim; k++, pos += 4)
			dims[k] = cq_le_get_u32(p + pos);
		off = cq_le_get_u64(p + pos);
		pos += 8;
		for (t = 0; t < nt; t++)
			if (strcmp(want[t].name, name) == 0)
				break;
		if (t == nt || seen[t])
		{
			s = cq_fail(err, CQ_EFORMAT, "weight file tensor %u: %s tensor \"%s\"", i,
						t == nt ? "unknown" : "duplicate", name);
			goto done;
		}
		seen[t] = true;
		if (ndim != want[t].ndim || (int64_t) dims[0] != want[t].dims[0] ||
			(ndim == 2 && (int64_t) dims[1] != want[t].dims[1]))
		{
			s = cq_fail(err, CQ_EFORMAT, "weight file tensor \"%s\" has the wrong shape", name);
			goto done;
		}
		if (off % CQ_TENSORFILE_ALIGN != 0 || off > data_size || data_size - off < 4 * want[t].numel)
		{
			s = cq_fail(err, CQ_EFORMAT, "weight file tensor \"%s\" has an out-of-range offset", name);
			goto done;
		}
		in = &q->in[q->n_in++];
		memcpy(in->name, name, nlen + 1);
		in->offset = off;
		in->rows = ndim == 2 ? dims[0] : 1;
		in->cols = ndim == 2 ? dims[1] : dims[0];
		if (in->cols > widest)
			widest = in->cols;
	}
	for (size_t k = pos; k < end; k++)
		if (p[k] != 0)
		{
			s = cq_fail(err, CQ_EFORMAT, "weight file has non-zero bytes between its table and its data");
			goto done;
		}
	qsort(q->in, (size_t) q->n_in, sizeof(quant_input), cmp_input);
	for (int i = 1; i < q->n_in; i++)
		if (q->in[i - 1].offset + 4 * q->in[i - 1].rows * q->in[i - 1].cols > q->in[i].offset)
		{
			s = cq_fail(err, CQ_EFORMAT, "weight file tensor \"%s\" overlaps \"%s\"",
						q->in[i].name, q->in[i - 1].name);
			goto done;
		}
	/* a sentinel past the data: the stream skips to the trailer */
	q->in[q->n_in].offset = data_size;
	q->rowbuf = cq_alloc(4 * widest);
	q->rowf = cq_alloc(sizeof(float) * widest);
	q->rowq = cq_alloc(widest);
	if (!q->rowbuf || !q->rowf || !q->rowq)
		s = cq_fail(err, CQ_ENOMEM, "out of memory reading a weight file");
done:
	cq_free(want);
	cq_free(seen);
	return s;
}

/* ---- the output's blocks ---- */

static size_t
block_len(const cq_modelquant *q, size_t b)
{
	return b + 1 < q->n_blocks ? q->block : q->out_size - b * q->block;
}

/* Block b has all its bytes: its CRC (the part before the trailer), then ready. */
static void
block_complete(cq_modelquant *q, size_t b)
{
	size_t		start = b * q->block,
				body = q->out_size - 4;

	q->state[b] = BLOCK_READY;
	if (q->dry)
		return;
	/* a block holding trailer bytes has its CRC taken by end, before the trailer */
	if (start + block_len(q, b) <= body)
		q->blk_crc[b] = cq_crc32(0, q->blk[b], block_len(q, b));
	q->ready[q->n_ready++] = b;
}

/*
 * Bytes [off, off + len) of the image (data NULL: zeros; in a dry run none
 * move), each byte given once: a block is allocated, zeroed (its padding),
 * when its first byte comes and is ready when its last does.
 */
static cq_code
quant_emit(cq_modelquant *q, size_t off, const void *data, size_t len, cq_error *err)
{
	const unsigned char *p = data;

	while (len > 0)
	{
		size_t		b = off / q->block,
					at = off - b * q->block,
					n = block_len(q, b) - at;

		if (n > len)
			n = len;
		if (q->state[b] != BLOCK_WAITING && q->state[b] != BLOCK_OPEN)
			return cq_fail(err, CQ_EINTERNAL, "int8 image block %zu written after it was complete", b);
		if (q->state[b] == BLOCK_WAITING)
		{
			if (!q->dry && !(q->blk[b] = cq_alloc0(block_len(q, b))))
				return cq_fail(err, CQ_ENOMEM, "out of memory for a %zu-byte block of the int8 image",
							   block_len(q, b));
			q->state[b] = BLOCK_OPEN;
			if (++q->open > q->peak)
				q->peak = q->open;
		}
		if (n > q->need[b])
			return cq_fail(err, CQ_EINTERNAL, "int8 image block %zu written twice", b);
		if (!q->dry && p)
			memcpy(q->blk[b] + at, p, n);
		q->need[b] -= n;
		if (q->need[b] == 0)
		{
			q->open--;
			block_complete(q, b);
		}
		off += n;
		len -= n;
		if (p)
			p += n;
	}
	return CQ_OK;
}

/* Row `row` of input tensor `in` (values in q->rowf, bytes in q->rowbuf; dry: none) to its targets. */
static cq_code
quant_emit_row(cq_modelquant *q, const quant_input *in, size_t row, cq_error *err)
{
	size_t		cols = in->cols;
	cq_code		s;

	for (int k = 0; k < in->n_targets; k++)
	{
		const quant_target *tg = &in->targets[k];

		if (tg->coded)
		{
			unsigned char scale_le[4] = {0};

			if (!q->dry)
			{
				float		scale = cq_qgemm_quantize_vec_bits(q->rowf, (int) cols, q->bits, q->rowq);

				cq_le_copy_floats(scale_le, &scale, 1);
			}
			if ((s = quant_emit(q, tg->at + row * cols, q->rowq, cols, err)) ||
				(s = quant_emit(q, tg->scale_at + 4 * row, scale_le, 4, err)))
				return s;
		}
		else if ((s = quant_emit(q, tg->at + 4 * row * cols, q->rowbuf, 4 * cols, err)))
			return s;
	}
	return CQ_OK;
}

/*
 * The blocks: each one's bytes to come (its padding, zero, comes with its
 * allocation), then a dry run of the whole stream in input order counting
 * the most blocks open at once; then the head, the first bytes written.
 */
static cq_code
quant_blocks(cq_modelquant *q, const unsigned char *head, const uint64_t *offsets, cq_error *err)
{
	size_t		nb = (q->out_size + q->block - 1) / q->block,
				prev_end = q->out_data_off;
	cq_code		s;

	q->n_blocks = nb;
	q->taken = nb;
	q->blk = cq_alloc0(sizeof(unsigned char *) * nb);
	q->need = cq_alloc(sizeof(size_t) * nb);
	q->need0 = cq_alloc(sizeof(size_t) * nb);
	q->state = cq_alloc0(nb);
	q->blk_crc = cq_alloc0(sizeof(uint32_t) * nb);
	q->ready = cq_alloc(sizeof(size_t) * nb);
	if (!q->blk || !q->need || !q->need0 || !q->state || !q->blk_crc || !q->ready)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	for (size_t b = 0; b < nb; b++)
		q->need0[b] = block_len(q, b);
	/* the zero padding before each record and after the last */
	for (int r = 0; r <= q->n_recs; r++)
	{
		size_t		start = r < q->n_recs ? q->out_data_off + (size_t) offsets[r]
			: q->out_data_off + q->out_data_size;

		for (size_t off = prev_end; off < start;)
		{
			size_t		b = off / q->block,
						n = (b + 1) * q->block - off;

			if (n > start - off)
				n = start - off;
			q->need0[b] -= n;
			off += n;
		}
		if (r < q->n_recs)
			prev_end = start + quant_record_bytes(q, r);
	}
	/* the dry run */
	memcpy(q->need, q->need0, sizeof(size_t) * nb);
	q->dry = true;
	if ((s = quant_emit(q, 0, NULL, q->out_data_off, err)))
		return s;
	for (int i = 0; i < q->n_in; i++)
		for (size_t row = 0; row < q->in[i].rows; row++)
			if ((s = quant_emit_row(q, &q->in[i], row, err)))
				return s;
	if ((s = quant_emit(q, q->out_size - 4, NULL, 4, err)))
		return s;
	for (size_t b = 0; b < nb; b++)
		if (q->state[b] != BLOCK_READY && q->need0[b] != 0)
			return cq_fail(err, CQ_EINTERNAL, "int8 image block %zu would never be complete", b);
	/* the stream: blocks of padding only are ready now */
	q->dry = false;
	q->open = 0;
	memcpy(q->need, q->need0, sizeof(size_t) * nb);
	memset(q->state, BLOCK_WAITING, nb);
	for (size_t b = 0; b < nb; b++)
		if (q->need[b] == 0)
		{
			if (!(q->blk[b] = cq_alloc0(block_len(q, b))))
				return cq_fail(err, CQ_ENOMEM, "out of memory");
			block_complete(q, b);
		}
	return quant_emit(q, 0, head, q->out_data_off, err);
}

cq_code
cq_modelquant_begin(const void *head, size_t head_len, size_t image_len, int weight_bits,
					cq_precision embedding_precision, size_t block, cq_modelquant **out,
					size_t *out_size, cq_error *err)
{
	const unsigned char *p = head;
	cq_model_config cfg;
	cq_modelquant *q;
	char		json[1024];
	size_t		clen;
	uint64_t   *offsets = NULL;
	unsigned char *scratch = NULL;
	cq_code		s;

	*out = NULL;
	if ((s = cq_modelfile_head(head, head_len, image_len, &cfg, err)))
		return s;
	if (cq_le_get_u32(p + 8) != CQ_MODELFILE_VERSION || cfg.precision == CQ_PRECISION_INT8)
		return cq_fail(err, CQ_EINVAL, "the weight file is int8 already");
	if (weight_bits != 7 && weight_bits != 8)
		return cq_fail(err, CQ_EINVAL, "weight_bits must be 7 or 8, not %d", weight_bits);
	if (block == 0)
		return cq_fail(err, CQ_EINVAL, "the int8 image's block size must be positive");
	if (!(q = cq_alloc0(sizeof(cq_modelquant))))
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	q->in_len = image_len;
	q->in_data_off = (size_t) cq_le_get_u64(p + 24);
	q->block = block;
	if ((s = quant_read_table(q, p, head_len, &cfg, cq_le_get_u64(p + 32), err)))
		goto fail;
	q->out_cfg = cfg;
	q->out_cfg.precision = CQ_PRECISION_INT8;
	q->out_cfg.weight_bits = weight_bits;
	q->out_cfg.embedding_precision = embedding_precision;
	q->bits = weight_bits;
	q->n_recs = cq_model_coded_tensors(&q->out_cfg, NULL);
	q->table = cq_alloc0(sizeof(cq_tensor_info) * (size_t) q->n_recs);
	q->recs = cq_alloc(sizeof(file_record) * 2 * (size_t) q->n_recs);
	offsets = cq_alloc(sizeof(uint64_t) * 2 * (size_t) q->n_recs);
	if (!q->table || !q->recs || !offsets)
	{
		s = cq_fail(err, CQ_ENOMEM, "out of memory");
		goto fail;
	}
	cq_model_coded_tensors(&q->out_cfg, q->table);
	{
		int			nt = q->n_recs;

		q->n_recs = 0;
		for (int t = 0; t < nt; t++)
			for (int scale = 0; scale <= (q->table[t].bits != 0); scale++)
			{
				file_record *r = &q->recs[q->n_recs++];

				r->t = t;
				r->scale = scale;
				snprintf(r->name, sizeof(r->name), "%s%s", q->table[t].name, scale ? SCALE_SUFFIX : "");
			}
	}
	clen = cq_config_to_json(&q->out_cfg, json, sizeof(json));
	{
		cq_tensorfile_source src = {q->n_recs, quant_entry, NULL, q};

		q->out_data_off = cq_tensorfile_head_size(clen, &src);
		q->out_size = cq_tensorfile_size(clen, &src);
	}
	/* each input tensor's targets, from the output's records */
	for (int r = 0; r < q->n_recs; r++)
	{
		const file_record *rec = &q->recs[r];
		const cq_tensor_info *t = &q->table[rec->t];
		const char *src = t->name;
		quant_input *in = NULL;

		if (rec->scale)
			continue;
		for (int i = 0; i < q->n_in && !in; i++)
			if (strcmp(q->in[i].name, src) == 0)
				in = &q->in[i];
		if (!in)
		{
			/* a tied projection's own codes: the embedding it is tied to */
			src = cfg.share_embeddings ? "encoder.embed_tokens" : "decoder.embed_tokens";
			for (int i = 0; i < q->n_in && !in; i++)
				if (strcmp(q->in[i].name, src) == 0)
					in = &q->in[i];
		}
		if (!in || in->n_targets == 2)
		{
			s = cq_fail(err, CQ_EINTERNAL, "int8 tensor %s has no float32 source", t->name);
			goto fail;
		}
		in->targets[in->n_targets].coded = t->bits != 0;
		in->targets[in->n_targets].at = r;	/* a record number until the offsets are known */
		in->n_targets++;
	}
	{
		cq_tensorfile_source src = {q->n_recs, quant_entry, NULL, q};

		if (!(scratch = cq_alloc(q->out_data_off)))
		{
			s = cq_fail(err, CQ_ENOMEM, "out of memory");
			goto fail;
		}
		if ((s = cq_tensorfile_write_head(&model_format, scratch, q->out_data_off, json, clen, &src,
										  offsets, &q->out_data_size, err)))
			goto fail;
	}
	for (int i = 0; i < q->n_in; i++)
		for (int k = 0; k < q->in[i].n_targets; k++)
		{
			quant_target *tg = &q->in[i].targets[k];
			size_t		r = tg->at;

			tg->at = q->out_data_off + offsets[r];
			if (tg->coded)
				tg->scale_at = q->out_data_off + offsets[r + 1];
		}
	if ((s = quant_blocks(q, scratch, offsets, err)))
		goto fail;
	cq_free(scratch);
	cq_free(offsets);
	*out = q;
	*out_size = q->out_size;
	return CQ_OK;
fail:
	cq_free(scratch);
	cq_free(offsets);
	cq_modelquant_free(q);
	return s;
}

size_t
cq_modelquant_peak_blocks(const cq_modelquant *q)
{
	return q->peak;
}

bool
cq_modelquant_next(cq_modelquant *q, size_t *index, const void **data, size_t *len)
{
	size_t		b;

	if (q->taken < q->n_blocks)
	{
		cq_free(q->blk[q->taken]);
		q->blk[q->taken] = NULL;
		q->taken = q->n_blocks;
	}
	if (q->next_ready == q->n_ready)
		return false;
	b = q->ready[q->next_ready++];
	q->state[b] = BLOCK_TAKEN;
	q->taken = b;
	*index = b;
	*data = q->blk[b];
	*len = block_len(q, b);
	return true;
}

/* Row q->row of tensor q->cur is in q->rowbuf: check it, write it to its targets. */
static cq_code
quant_row(cq_modelquant *q, cq_error *err)
{
	const quant_input *in = &q->in[q->cur];
	size_t		cols = in->cols;

	cq_le_copy_floats(q->rowf, q->rowbuf, cols);
	for (size_t i = 0; i < cols; i++)
		if (!isfinite(q->rowf[i]))
			return cq_fail(err, CQ_EFORMAT, "weight file tensor \"%s\" holds a non-finite value at index %zu",
						   in->name, q->row * cols + i);
	return quant_emit_row(q, in, q->row, err);
}

cq_code
cq_modelquant_put(cq_modelquant *q, const void *data, size_t len, cq_error *err)
{
	const unsigned char *p = data;
	size_t		body = q->in_len - 4;
	cq_code		s;

	if (len > q->in_len - q->pos)
		return cq_fail(err, CQ_EFORMAT, "weight file is longer than its header says (%zu bytes)", q->in_len);
	if (q->pos < body)
		q->crc = cq_crc32(q->crc, p, len < body - q->pos ? len : body - q->pos);
	while (len > 0)
	{
		size_t		n;

		if (q->pos >= body)
		{
			q->trailer[q->pos - body] = *p;
			n = 1;
		}
		else if (q->pos < q->in_data_off)
			n = q->in_data_off - q->pos;	/* the head, checked by begin */
		else
		{
			size_t		d = q->pos - q->in_data_off;
			quant_input *in = &q->in[q->cur];

			if (q->cur == q->n_in || d < in->offset)
				n = (q->cur == q->n_in ? body - q->in_data_off : in->offset) - d;	/* a gap */
			else
			{
				size_t		rowbytes = 4 * in->cols;

				n = rowbytes - q->fill;
				if (n > len)
					n = len;
				memcpy(q->rowbuf + q->fill, p, n);
				q->fill += n;
				if (q->fill == rowbytes)
				{
					if ((s = quant_row(q, err)))
						return s;
					q->fill = 0;
					if (++q->row == in->rows)
					{
						q->row = 0;
						q->cur++;
					}
				}
			}
		}
		if (n > len)
			n = len;
		p += n;
		len -= n;
		q->pos += n;
	}
	return CQ_OK;
}

cq_code
cq_modelquant_end(cq_modelquant *q, cq_error *err)
{
	size_t		body = q->out_size - 4,
				first = body / q->block;	/* the first block holding trailer bytes */
	uint32_t	crc = 0;
	unsigned char trailer[4];

	if (q->pos != q->in_len)
		return cq_fail(err, CQ_EFORMAT, "weight file is truncated: %zu of %zu bytes", q->pos, q->in_len);
	if (q->crc != cq_le_get_u32(q->trailer))
		return cq_fail(err, CQ_EFORMAT, "weight file checksum mismatch (CRC-32 %08x, the file says %08x)",
					   q->crc, cq_le_get_u32(q->trailer));
	if (q->cur != q->n_in)
		return cq_fail(err, CQ_EINTERNAL, "weight file stream ended inside a tensor");
	/* every block is complete but those the trailer ends, whose bytes before it are */
	for (size_t b = 0; b < q->n_blocks; b++)
	{
		size_t		start = b * q->block,
					n = block_len(q, b);

		if (b < first && q->state[b] != BLOCK_READY && q->state[b] != BLOCK_TAKEN)
			return cq_fail(err, CQ_EINTERNAL, "int8 image block %zu is incomplete at the end", b);
		if (b >= first)
		{
			n = start < body ? body - start : 0;
			/* no byte came into it yet: all padding before the trailer */
			if (q->state[b] == BLOCK_WAITING)
			{
				if (!(q->blk[b] = cq_alloc0(block_len(q, b))))
					return cq_fail(err, CQ_ENOMEM, "out of memory");
				q->state[b] = BLOCK_OPEN;
				q->open++;
			}
			if (q->need[b] != (start + block_len(q, b)) - (start < body ? body : start))
				return cq_fail(err, CQ_EINTERNAL, "int8 image block %zu is incomplete at the end", b);
			q->blk_crc[b] = cq_crc32(0, q->blk[b], n);
		}
		crc = cq_crc32_combine(crc, q->blk_crc[b], n);
	}
	cq_le_put_u32(trailer, crc);
	return quant_emit(q, body, trailer, 4, err);
}
