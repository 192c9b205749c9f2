#include "align/lexicon_io.h"

#include <math.h>
#include <string.h>

#include "common/le.h"
#include "common/mem.h"

static const char magic[8] = {'C', 'Q', 'L', 'E', 'X', 'I', 'C', 'N'};

#define HEADER_BYTES 24			/* magic, version, flags, two vocab sizes */
#define DIR_HEADER_BYTES 36		/* two f64, four u8, two i32, u64 nnz */

uint64_t
cq_lexicon_checksum(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t	h = 14695981039346656037ULL;

	for (size_t i = 0; i < len; i++)
	{
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* ---- little-endian writer -------------------------------------------- */

static uint8_t *
put_u64(uint8_t *p, uint64_t v)
{
	cq_le_put_u64(p, v);
	return p + 8;
}

static uint8_t *
put_u32(uint8_t *p, uint32_t v)
{
	cq_le_put_u32(p, v);
	return p + 4;
}

static uint8_t *
put_f64(uint8_t *p, double d)
{
	uint64_t	v;

	memcpy(&v, &d, 8);
	return put_u64(p, v);
}

static int64_t
kept(const cq_ttable *t, double min_prob, int32_t row)
{
	int64_t		n = 0;

	for (int64_t q = t->row_off[row]; q < t->row_off[row + 1]; q++)
		n += t->prob[q] >= min_prob;
	return n;
}

static size_t
dir_size(const cq_fa_model *md, double min_prob)
{
	int64_t		nnz = 0;

	for (int32_t r = 0; r <= md->tt.n_e; r++)
		nnz += kept(&md->tt, min_prob, r);
	return DIR_HEADER_BYTES + ((size_t) md->tt.n_e + 2) * 8 + (size_t) nnz * 12;
}

size_t
cq_lexicon_serialized_size(const cq_lexicon *lx, double min_prob)
{
	return HEADER_BYTES + dir_size(&lx->fwd, min_prob) +
		dir_size(&lx->rev, min_prob) + 8;
}

static uint8_t *
put_dir(uint8_t *p, const cq_fa_model *md, double min_prob)
{
	const cq_ttable *t = &md->tt;
	int64_t		nnz = 0;

	p = put_f64(p, md->par.tension);
	p = put_f64(p, md->par.p0);
	*p++ = md->par.favor_diagonal;
	*p++ = md->par.use_null;
	*p++ = md->probs_ready;
	*p++ = 0;
	p = put_u32(p, (uint32_t) t->n_e);
	p = put_u32(p, (uint32_t) t->n_f);
	for (int32_t r = 0; r <= t->n_e; r++)
		nnz += kept(t, min_prob, r);
	p = put_u64(p, (uint64_t) nnz);
	p = put_u64(p, 0);
	nnz = 0;
	for (int32_t r = 0; r <= t->n_e; r++)
	{
		nnz += kept(t, min_prob, r);
		p = put_u64(p, (uint64_t) nnz);
	}
	for (int64_t q = 0; q < t->nnz; q++)
		if (t->prob[q] >= min_prob)
			p = put_u32(p, (uint32_t) t->col[q]);
	for (int64_t q = 0; q < t->nnz; q++)
		if (t->prob[q] >= min_prob)
			p = put_f64(p, t->prob[q]);
	return p;
}

size_t
cq_lexicon_serialize(const cq_lexicon *lx, double min_prob, void *buf, size_t cap)
{
	size_t		need = cq_lexicon_serialized_size(lx, min_prob);
	uint8_t    *p = buf;

	if (cap < need)
		return 0;
	memcpy(p, magic, 8);
	p = put_u32(p + 8, CQ_LEXICON_VERSION);
	p = put_u32(p, 0);
	p = put_u32(p, (uint32_t) lx->src_vocab);
	p = put_u32(p, (uint32_t) lx->tgt_vocab);
	p = put_dir(p, &lx->fwd, min_prob);
	p = put_dir(p, &lx->rev, min_prob);
	put_u64(p, cq_lexicon_checksum(buf, need - 8));
	return need;
}

/* ---- validating reader ----------------------------------------------- */

typedef struct reader
{
	const uint8_t *p;
	size_t		left;
	bool		bad;
} reader;

static uint64_t
get_u64(reader *r)
{
	uint64_t	v;

	if (r->left < 8)
	{
		r->bad = true;
		return 0;
	}
	v = cq_le_get_u64(r->p);
	r->p += 8;
	r->left -= 8;
	return v;
}

static uint32_t
get_u32(reader *r)
{
	uint32_t	v;

	if (r->left < 4)
	{
		r->bad = true;
		return 0;
	}
	v = cq_le_get_u32(r->p);
	r->p += 4;
	r->left -= 4;
	return v;
}

static uint8_t
get_u8(reader *r)
{
	if (r->left < 1)
	{
		r->bad = true;
		return 0;
	}
	r->left--;
	return *r->p++;
}

static double
get_f64(reader *r)
{
	uint64_t	v = get_u64(r);
	double		d;

	memcpy(&d, &v, 8);
	return d;
}

static cq_code
corrupt(cq_error *err, const char *what)
{
	return cq_fail(err, CQ_ECORRUPT, "corrupt lexicon: %s", what);
}

static cq_code
get_dir(reader *r, cq_fa_model *md, int32_t n_e, int32_t n_f,
		cq_error *err)
{
	uint8_t		fd,
				un,
				ready,
				pad;
	uint64_t	nnz;
	cq_code		rc;

	md->par.tension = get_f64(r);
	md->par.p0 = get_f64(r);
	fd = get_u8(r);
	un = get_u8(r);
	ready = get_u8(r);
	pad = get_u8(r);
	if ((int32_t) get_u32(r) != n_e || (int32_t) get_u32(r) != n_f)
		return corrupt(err, "table shape differs from the vocabularies");
	nnz = get_u64(r);
	if (r->bad)
		return corrupt(err, "truncated");
	if (!isfinite(md->par.tension) || md->par.tension <= 0 || md->par.tension > CQ_FA_MAX_TENSION ||
		!(md->par.p0 >= 0 && md->par.p0 < 1) || fd > 1 || un > 1 || ready > 1 || pad)
		return corrupt(err, "parameter out of range");
	md->par.favor_diagonal = fd;
	md->par.use_null = un;
	md->probs_ready = ready;
	/* sizes are checked against the bytes present before any allocation */
	if (((uint64_t) n_e + 2) > r->left / 8 ||
		nnz > (r->left - ((uint64_t) n_e + 2) * 8) / 12)
		return corrupt(err, "sizes exceed the data");
	if ((rc = cq_ttable_alloc(&md->tt, n_e, n_f, (int64_t) nnz, false, err)) != CQ_OK)
		return rc;
	for (int64_t r_ = 0; r_ < (int64_t) n_e + 2; r_++)
	{
		uint64_t	off = get_u64(r);

		if (off > nnz || (r_ > 0 && (int64_t) off < md->tt.row_off[r_ - 1]) || (r_ == 0 && off != 0))
			return corrupt(err, "row offsets not monotone from 0");
		md->tt.row_off[r_] = (int64_t) off;
	}
	if ((uint64_t) md->tt.row_off[n_e + 1] != nnz)
		return corrupt(err, "row offsets do not end at the entry count");
	for (int32_t row = 0; row <= n_e; row++)
		for (int64_t q = md->tt.row_off[row]; q < md->tt.row_off[row + 1]; q++)
		{
			uint32_t	c = get_u32(r);

			if (c >= (uint32_t) n_f || (q > md->tt.row_off[row] && (int32_t) c <= md->tt.col[q - 1]))
				return corrupt(err, "columns out of range or unsorted");
			md->tt.col[q] = (int32_t) c;
		}
	for (uint64_t q = 0; q < nnz; q++)
	{
		double		p = get_f64(r);

		if (!(p >= 0.0 && p <= 1.0))
			return corrupt(err, "probability outside [0, 1]");
		md->tt.prob[q] = p;
	}
	return r->bad ? corrupt(err, "truncated") : CQ_OK;
}

cq_code
cq_lexicon_deserialize(const void *buf, size_t len, cq_lexicon *out,
					   cq_error *err)
{
	reader		r = {buf, len, false};
	uint64_t	sum;
	int32_t		vs,
				vt;
	cq_code		rc;

	memset(out, 0, sizeof(*out));
	if (buf == NULL || len < HEADER_BYTES + 8)
		return corrupt(err, "too short");
	{
		reader		t = {(const uint8_t *) buf + len - 8, 8, false};

		sum = get_u64(&t);
	}
	if (sum != cq_lexicon_checksum(buf, len - 8))
		return corrupt(err, "checksum mismatch");
	r.left = len - 8;
	if (memcmp(r.p, magic, 8) != 0)
		return corrupt(err, "bad magic");
	r.p += 8;
	r.left -= 8;
	if (get_u32(&r) != CQ_LEXICON_VERSION)
		return corrupt(err, "unsupported version");
	if (get_u32(&r) != 0)
		return corrupt(err, "unknown flags");
	vs = (int32_t) get_u32(&r);
	vt = (int32_t) get_u32(&r);
	if (vs < 0 || vt < 0 || vs >= INT32_MAX - 1 || vt >= INT32_MAX - 1)
		return corrupt(err, "vocabulary size out of range");
	out->src_vocab = vs;
	out->tgt_vocab = vt;
	if ((rc = get_dir(&r, &out->fwd, vs, vt, err)) != CQ_OK ||
		(rc = get_dir(&r, &out->rev, vt, vs, err)) != CQ_OK)
	{
		cq_lexicon_free(out);
		return rc;
	}
	if (r.left != 0)
	{
		cq_lexicon_free(out);
		return corrupt(err, "trailing bytes");
	}
	return CQ_OK;
}
