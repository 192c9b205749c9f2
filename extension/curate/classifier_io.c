/* The classifier's serialised form (FORMAT.md has the layout). */
#include "curate/classifier.h"

#include <math.h>
#include <string.h>

#include "common/crc32.h"
#include "common/le.h"
#include "curate/trees.h"
#include "filters/langid.h"
#include "filters/rules.h"

#define MAGIC "CQPQ"
/* Version 2 is version 1 whose mask may name the features from tail_src
 * on (tail_src, tail_tgt, end_punct); a classifier without them is written as version 1, byte for byte as
 * before, so builds that read only version 1 keep reading it. */
#define VERSION 2
#define V2_FIRST_FEATURE CQ_F_TAIL_SRC
#define KIND_LOGISTIC CQ_CLASSIFIER_LOGISTIC
#define KIND_TREES CQ_CLASSIFIER_TREES
#define MAX_TREES 100000
#define MAX_DEPTH 6
#define LANG_FIELD 16
#define HEADER_SIZE (16 + 8 + 8 + 2 * LANG_FIELD + 8)
#define CRC_SIZE 4

static size_t
size_for(int d)
{
	return HEADER_SIZE + 3 * 8 * (size_t) d + 3 * 8 + CRC_SIZE;
}

/* Trees: counts, base, then per tree its nodes' features (i32) and
 * thresholds (f64) and its leaves (f64); Platt a and b; the CRC. */
static size_t
tree_bytes(int depth)
{
	size_t		inner = ((size_t) 1 << depth) - 1;

	return inner * 4 + inner * 8 + (inner + 1) * 8;
}

static size_t
size_for_trees(int n_trees, int depth)
{
	return HEADER_SIZE + 8 + 8 + (size_t) n_trees * tree_bytes(depth) + 2 * 8 + CRC_SIZE;
}

size_t
cq_classifier_size(const cq_classifier *c)
{
	return c->kind == CQ_CLASSIFIER_TREES ? size_for_trees(c->n_trees, c->depth) : size_for(c->d);
}

static void
put_f64(unsigned char *p, double v)
{
	uint64_t	u;

	memcpy(&u, &v, 8);
	cq_le_put_u64(p, u);
}

static double
get_f64(const unsigned char *p)
{
	uint64_t	u = cq_le_get_u64(p);
	double		v;

	memcpy(&v, &u, 8);
	return v;
}

/* A language id as its code, zero-padded; all zeros for none. */
static void
put_lang(unsigned char *p, int lang)
{
	const char *code = lang >= 0 ? cq_langid_code(lang) : NULL;

	memset(p, 0, LANG_FIELD);
	if (code)
		memcpy(p, code, strnlen(code, LANG_FIELD - 1));
}

static unsigned char *
put_header(const cq_classifier *c, unsigned char *p)
{
	const cq_feature_set *fs = &c->fs;

	memcpy(p, MAGIC, 4);
	cq_le_put_u32(p + 4, (fs->mask >> V2_FIRST_FEATURE) ? 2 : 1);
	cq_le_put_u32(p + 8, (uint32_t) c->kind);
	cq_le_put_u32(p + 12, (uint32_t) c->d);
	cq_le_put_u64(p + 16, fs->mask);
	cq_le_put_u32(p + 24, (uint32_t) fs->src_script);
	cq_le_put_u32(p + 28, (uint32_t) fs->tgt_script);
	put_lang(p + 32, fs->src_lang);
	put_lang(p + 32 + LANG_FIELD, fs->tgt_lang);
	p += 32 + 2 * LANG_FIELD;
	cq_le_put_u32(p, (uint32_t) (fs->langid.hint | fs->langid.keep_unreliable << 1));
	cq_le_put_u32(p + 4, (uint32_t) fs->langid.min_chars);
	return p + 8;
}

static unsigned char *
put_trees(const cq_classifier *c, unsigned char *p)
{
	size_t		inner = ((size_t) 1 << c->depth) - 1;

	cq_le_put_u32(p, (uint32_t) c->n_trees);
	cq_le_put_u32(p + 4, (uint32_t) c->depth);
	put_f64(p + 8, c->base);
	p += 16;
	for (size_t t = 0; t < (size_t) c->n_trees; t++)
	{
		for (size_t i = 0; i < inner; i++, p += 4)
			cq_le_put_u32(p, (uint32_t) c->feat[t * inner + i]);
		for (size_t i = 0; i < inner; i++, p += 8)
			put_f64(p, c->thr[t * inner + i]);
		for (size_t i = 0; i <= inner; i++, p += 8)
			put_f64(p, c->leaf[t * (inner + 1) + i]);
	}
	return p;
}

cq_code
cq_classifier_write(const cq_classifier *c, unsigned char *buf, size_t cap, cq_error *err)
{
	unsigned char *p;
	size_t		size = cq_classifier_size(c);

	if (cap < size)
		return cq_fail(err, CQ_ELIMIT, "a classifier of %d features needs %zu bytes, not %zu",
					   c->d, size, cap);
	p = put_header(c, buf);
	if (c->kind == CQ_CLASSIFIER_TREES)
	{
		p = put_trees(c, p);
		put_f64(p, c->platt_a);
		put_f64(p + 8, c->platt_b);
		cq_le_put_u32(p + 16, cq_crc32(0, buf, size - CRC_SIZE));
		return CQ_OK;
	}
	for (int j = 0; j < c->d; j++)
		put_f64(p + 8 * j, c->mean[j]);
	p += 8 * c->d;
	for (int j = 0; j < c->d; j++)
		put_f64(p + 8 * j, c->scale[j]);
	p += 8 * c->d;
	for (int j = 0; j < c->d; j++)
		put_f64(p + 8 * j, c->w[j]);
	p += 8 * c->d;
	put_f64(p, c->bias);
	put_f64(p + 8, c->platt_a);
	put_f64(p + 16, c->platt_b);
	cq_le_put_u32(p + 24, cq_crc32(0, buf, size - CRC_SIZE));
	return CQ_OK;
}

/* A language field: a NUL-padded code CLD2 knows, or all zeros (-1). */
static cq_code
get_lang(const unsigned char *p, int *lang, cq_error *err)
{
	char		code[LANG_FIELD];

	memcpy(code, p, LANG_FIELD);
	if (code[LANG_FIELD - 1] != '\0')
		return cq_fail(err, CQ_EFORMAT, "classifier: a language code is not terminated");
	*lang = code[0] ? cq_langid_lookup(code) : -1;
	if (code[0] && *lang < 0)
		return cq_fail(err, CQ_EFORMAT, "classifier: unknown language code \"%s\"", code);
	return CQ_OK;
}

static cq_code
get_header(const unsigned char *buf, size_t len, cq_feature_set *fs, int *d, cq_error *err)
{
	const unsigned char *p = buf + 32 + 2 * LANG_FIELD;
	uint32_t	flags;
	cq_code		rc;

	if (len < HEADER_SIZE || memcmp(buf, MAGIC, 4) != 0)
		return cq_fail(err, CQ_EFORMAT, "not a classifier (no CQPQ header)");
	if (cq_le_get_u32(buf + 4) < 1 || cq_le_get_u32(buf + 4) > VERSION)
		return cq_fail(err, CQ_EFORMAT, "classifier format version %u is not supported (this "
					   "build reads 1 to %d)", cq_le_get_u32(buf + 4), VERSION);
	if (cq_le_get_u32(buf + 8) != KIND_LOGISTIC && cq_le_get_u32(buf + 8) != KIND_TREES)
		return cq_fail(err, CQ_EFORMAT, "classifier kind %u is unknown", cq_le_get_u32(buf + 8));
	*d = (int) cq_le_get_u32(buf + 12);
	fs->mask = cq_le_get_u64(buf + 16);
	if (cq_le_get_u32(buf + 4) == 1 && (fs->mask >> V2_FIRST_FEATURE))
		return cq_fail(err, CQ_EFORMAT, "classifier format version 1 names features from "
					   "\"%s\" on (version 2's)", cq_feature_name(V2_FIRST_FEATURE));
	fs->src_script = (int32_t) cq_le_get_u32(buf + 24);
	fs->tgt_script = (int32_t) cq_le_get_u32(buf + 28);
	if ((rc = get_lang(buf + 32, &fs->src_lang, err)) != CQ_OK ||
		(rc = get_lang(buf + 32 + LANG_FIELD, &fs->tgt_lang, err)) != CQ_OK)
		return rc;
	flags = cq_le_get_u32(p);
	fs->langid.hint = flags & 1;
	fs->langid.keep_unreliable = (flags >> 1) & 1;
	fs->langid.min_chars = (int32_t) cq_le_get_u32(p + 4);
	if (flags > 3 || fs->langid.min_chars < 0)
		return cq_fail(err, CQ_EFORMAT, "classifier: bad language ID rule");
	return CQ_OK;
}

/* The layout agrees with itself: the mask, its count, the scripts. */
static cq_code
check_layout(const cq_feature_set *fs, int d, size_t len, size_t expected, cq_error *err)
{
	cq_code		rc = cq_feature_set_check(fs, err);

	if (rc != CQ_OK)
		return cq_fail(err, CQ_EFORMAT, "classifier: %s", err ? err->msg : "bad feature set");
	if (d < 1 || d != cq_feature_count(fs))
		return cq_fail(err, CQ_EFORMAT, "classifier: %d features but a mask of %d", d,
					   cq_feature_count(fs));
	if (len != expected)
		return cq_fail(err, CQ_EFORMAT, "classifier of %d features is %zu bytes, not %zu",
					   d, len, expected);
	if ((fs->src_script >= cq_script_count() || fs->tgt_script >= cq_script_count()))
		return cq_fail(err, CQ_EFORMAT, "classifier: a script code is out of range");
	return CQ_OK;
}

static cq_code
get_values(const unsigned char *p, cq_classifier *c, cq_error *err)
{
	for (int j = 0; j < c->d; j++)
	{
		c->mean[j] = get_f64(p + 8 * j);
		c->scale[j] = get_f64(p + 8 * (c->d + j));
		c->w[j] = get_f64(p + 8 * (2 * c->d + j));
		if (!isfinite(c->mean[j]) || !(c->scale[j] > 0) || !isfinite(c->scale[j]) ||
			!isfinite(c->w[j]))
			return cq_fail(err, CQ_EFORMAT, "classifier: feature %s has a value that is not "
						   "finite or a scale <= 0", cq_feature_name(cq_feature_at(&c->fs, j)));
	}
	p += 3 * 8 * c->d;
	c->bias = get_f64(p);
	c->platt_a = get_f64(p + 8);
	c->platt_b = get_f64(p + 16);
	if (!isfinite(c->bias) || !isfinite(c->platt_a) || !isfinite(c->platt_b))
		return cq_fail(err, CQ_EFORMAT, "classifier: a bias or calibration value is not finite");
	return CQ_OK;
}

static bool
finite_f64(const unsigned char *p)
{
	return isfinite(get_f64(p));
}

/* The trees' counts (bounded before any size is computed from them). */
static cq_code
tree_counts(const unsigned char *buf, size_t len, int *n_trees, int *depth, cq_error *err)
{
	if (len < HEADER_SIZE + 16)
		return cq_fail(err, CQ_EFORMAT, "classifier: trees cut short");
	*n_trees = (int) cq_le_get_u32(buf + HEADER_SIZE);
	*depth = (int) cq_le_get_u32(buf + HEADER_SIZE + 4);
	if (*n_trees < 1 || *n_trees > MAX_TREES || *depth < 1 || *depth > MAX_DEPTH)
		return cq_fail(err, CQ_EFORMAT, "classifier: %u trees of depth %u (1..%d of 1..%d)",
					   cq_le_get_u32(buf + HEADER_SIZE), cq_le_get_u32(buf + HEADER_SIZE + 4),
					   MAX_TREES, MAX_DEPTH);
	return CQ_OK;
}

static cq_code
get_trees(const unsigned char *p, cq_classifier *c, cq_error *err)
{
	size_t		inner = ((size_t) 1 << c->depth) - 1;

	c->base = get_f64(p + 8);
	if (!finite_f64(p + 8))
		return cq_fail(err, CQ_EFORMAT, "classifier: the trees' base is not finite");
	p += 16;
	for (size_t t = 0; t < (size_t) c->n_trees; t++)
	{
		for (size_t i = 0; i < inner; i++, p += 4)
		{
			int32_t		f = (int32_t) cq_le_get_u32(p);

			if (f < -1 || f >= c->d)
				return cq_fail(err, CQ_EFORMAT, "classifier: tree %zu splits on feature %d of %d",
							   t, f, c->d);
			c->feat[t * inner + i] = f;
		}
		for (size_t i = 0; i < inner + inner + 1; i++, p += 8)
		{
			if (!finite_f64(p))
				return cq_fail(err, CQ_EFORMAT, "classifier: tree %zu has a value that is not finite", t);
			if (i < inner)
				c->thr[t * inner + i] = get_f64(p);
			else
				c->leaf[t * (inner + 1) + i - inner] = get_f64(p);
		}
	}
	c->platt_a = get_f64(p);
	c->platt_b = get_f64(p + 8);
	if (!finite_f64(p) || !finite_f64(p + 8))
		return cq_fail(err, CQ_EFORMAT, "classifier: a calibration value is not finite");
	return CQ_OK;
}

static cq_code
read_body(const unsigned char *buf, const cq_feature_set *fs, int kind, int n_trees, int depth,
		  cq_classifier *c, cq_error *err)
{
	cq_code		rc = cq_classifier_alloc(fs, c, err);

	if (rc != CQ_OK)
		return rc;
	if (kind == KIND_TREES)
	{
		c->kind = CQ_CLASSIFIER_TREES;
		c->n_trees = n_trees;
		c->depth = depth;
		if ((rc = cq_trees_alloc(c, err)) == CQ_OK)
			rc = get_trees(buf + HEADER_SIZE, c, err);
	}
	else
		rc = get_values(buf + HEADER_SIZE, c, err);
	if (rc != CQ_OK)
		cq_classifier_free(c);
	return rc;
}

cq_code
cq_classifier_read(const unsigned char *buf, size_t len, cq_classifier *c, cq_error *err)
{
	cq_feature_set fs;
	int			d = 0,
				kind,
				n_trees = 0,
				depth = 0;
	cq_code		rc;

	memset(c, 0, sizeof(*c));
	memset(&fs, 0, sizeof(fs));
	if ((rc = get_header(buf, len, &fs, &d, err)) != CQ_OK)
		return rc;
	kind = (int) cq_le_get_u32(buf + 8);
	if (kind == KIND_TREES && (rc = tree_counts(buf, len, &n_trees, &depth, err)) != CQ_OK)
		return rc;
	if ((rc = check_layout(&fs, d, len, kind == KIND_TREES ? size_for_trees(n_trees, depth)
						   : size_for(d), err)) != CQ_OK)
		return rc;
	if (cq_crc32(0, buf, len - CRC_SIZE) != cq_le_get_u32(buf + len - CRC_SIZE))
		return cq_fail(err, CQ_ECORRUPT, "classifier: checksum mismatch (damaged bytes)");
	return read_body(buf, &fs, kind, n_trees, depth, c, err);
}
