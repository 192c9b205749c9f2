#include "nn/model/modelfile.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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
