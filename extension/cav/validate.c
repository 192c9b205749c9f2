/*
 * The validator of the CAV layout: every offset, length, count, sort order
 * and string is checked before any reader touches the buffer, so a random
 * or corrupted buffer yields CQ_EFORMAT and never an out-of-bounds read.
 */
#include "cav/view_impl.h"

#include "cav/dict.h"
#include "common/utf8.h"

#include <string.h>

#define BAD(...) cq_fail(err, CQ_EFORMAT, "invalid CAV: " __VA_ARGS__)

uint32_t
cav_section_find(const uint8_t *buf, size_t pos, uint32_t n, const char *s,
				 size_t len)
{
	uint32_t	lo = 0,
				hi = n;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;
		size_t		ml;
		const char *m = cav_section_str(buf, pos, n, mid, &ml);
		int			c = cav_bytes_cmp(m, ml, s, len);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return UINT32_MAX;
}

/* u32 offsets[n+1] and the strings: strictly sorted, non-empty UTF-8. */
static cq_code
check_dict(const uint8_t *buf, size_t len, size_t *pos, uint32_t n,
		   const char *what, cq_error *err)
{
	const uint8_t *off = buf + *pos;
	uint64_t	table = ((uint64_t) n + 1) * 4;
	uint64_t	blob;

	if (table > len - *pos)
		return BAD("%s dictionary offsets run past the end", what);
	if (cq_le_get_u32(off) != 0)
		return BAD("%s dictionary does not start at offset 0", what);
	blob = cq_le_get_u32(off + (size_t) n * 4);
	if (blob > len - *pos - table)
		return BAD("%s dictionary strings run past the end", what);
	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	a = cq_le_get_u32(off + (size_t) i * 4),
					b = cq_le_get_u32(off + (size_t) i * 4 + 4);
		const uint8_t *s = off + table + a;

		if (b <= a || b > blob)
			return BAD("%s dictionary offset %u out of order", what, i);
		if (b - a > CAV_MAX_TOKEN_BYTES || !cq_utf8_valid(s, b - a))
			return BAD("%s token %u is not valid UTF-8", what, i);
		if (i > 0)
		{
			uint32_t	pa = cq_le_get_u32(off + (size_t) (i - 1) * 4);

			if (cav_bytes_cmp((const char *) off + table + pa, a - pa,
							  (const char *) s, b - a) >= 0)
				return BAD("%s dictionary not strictly sorted at %u", what, i);
		}
	}
	*pos += table + blob;
	return CQ_OK;
}

static cq_code
check_header(const uint8_t *b, size_t len, cav_view *v, cq_error *err)
{
	if (len < CAV_HEADER_SIZE)
		return BAD("%zu bytes, shorter than the header", len);
	if (memcmp(b + CAV_H_MAGIC, CAV_MAGIC, 4) != 0)
		return BAD("bad magic number");
	if (cq_le_get_u16(b + CAV_H_VERSION) != CAV_VERSION)
		return BAD("unsupported version %u", cq_le_get_u16(b + CAV_H_VERSION));
	if (cq_le_get_u16(b + CAV_H_RESERVED16) || cq_le_get_u32(b + CAV_H_RESERVED32))
		return BAD("reserved header fields are not zero");
	v->l_max = cq_le_get_u32(b + CAV_H_LMAX);
	v->n_src = cq_le_get_u32(b + CAV_H_NSRC);
	v->n_tgt = cq_le_get_u32(b + CAV_H_NTGT);
	v->n_restrict = cq_le_get_u32(b + CAV_H_NRES);
	v->n_mat = cq_le_get_u32(b + CAV_H_NMAT);
	v->n_pairs = cq_le_get_u64(b + CAV_H_NPAIRS);
	if (v->l_max < 1 || v->l_max > CAV_MAX_LMAX)
		return BAD("l_max %u out of range", v->l_max);
	if (v->n_src >= (1u << 30) || v->n_tgt >= (1u << 30) || v->n_restrict >= (1u << 30))
		return BAD("dictionary sizes out of range");
	if (v->n_mat > v->n_tgt || (v->n_restrict == 0 && v->n_mat != v->n_tgt))
		return BAD("%u matrices for %u target tokens", v->n_mat, v->n_tgt);
	return CQ_OK;
}

/* One table record: target id order, restriction, counts, start offset. */
static cq_code
check_record(const cav_view *v, uint32_t i, size_t ent_len, int64_t prev_tgt,
			 cq_error *err)
{
	const uint8_t *r = cav_view_rec(v, i);
	uint32_t	tgt = cq_le_get_u32(r + CAV_REC_TGT);
	uint64_t	start = cq_le_get_u64(r + CAV_REC_START);

	if ((int64_t) tgt <= prev_tgt || tgt >= v->n_tgt)
		return BAD("matrix %u: target id %u out of order", i, tgt);
	if (v->n_restrict == 0 && tgt != i)
		return BAD("matrix %u: unrestricted CAV skips a target token", i);
	if (v->n_restrict)
	{
		size_t		l;
		const char *s = cav_section_str(v->buf, v->tgt_dict, v->n_tgt, tgt, &l);

		if (cav_section_find(v->buf, v->res_dict, v->n_restrict, s, l) == UINT32_MAX)
			return BAD("matrix %u: token outside the restricted set", i);
	}
	if (cq_le_get_u64(r + CAV_REC_OCC) < 1 || cq_le_get_u64(r + CAV_REC_OCC) > INT64_MAX)
		return BAD("matrix %u: occurrences out of range", i);
	if (cq_le_get_u32(r + CAV_REC_NNZ) < 1)
		return BAD("matrix %u: no entries", i);
	if (start > ent_len)
		return BAD("matrix %u: entries start past the end", i);
	return CQ_OK;
}

/*
 * Entries of matrix i fill [start, end) exactly: nnz of them, (row, dist)
 * strictly increasing and in range, 1 <= count <= occurrences, and the
 * token's own cell (its row, distance 0) equal to its occurrences.
 */
static cq_code
check_entries(const cav_view *v, uint32_t i, const uint8_t *p, const uint8_t *end,
			  cq_error *err)
{
	const uint8_t *r = cav_view_rec(v, i);
	uint32_t	nnz = cq_le_get_u32(r + CAV_REC_NNZ);
	uint64_t	occ = cq_le_get_u64(r + CAV_REC_OCC);
	uint64_t	self = (uint64_t) v->n_src + cq_le_get_u32(r + CAV_REC_TGT);
	uint64_t	n_rows = (uint64_t) v->n_src + v->n_tgt;
	uint64_t	row = 0,
				prev_key = 0;
	bool		has_self = false;

	for (uint32_t e = 0; e < nnz; e++)
	{
		uint64_t	delta,
					dist,
					count,
					key;

		if (!cq_varint_get(&p, end, &delta) || !cq_varint_get(&p, end, &dist) ||
			!cq_varint_get(&p, end, &count))
			return BAD("matrix %u: entry %u truncated or malformed", i, e);
		if (delta >= n_rows - row || dist >= v->l_max)
			return BAD("matrix %u: entry %u out of range", i, e);
		row += delta;
		key = row << 16 | dist;
		if (e > 0 && key <= prev_key)
			return BAD("matrix %u: entry %u out of order", i, e);
		if (count < 1 || count > occ)
			return BAD("matrix %u: entry %u count out of range", i, e);
		if (row == self && dist == 0)
		{
			if (count != occ)
				return BAD("matrix %u: own cell differs from occurrences", i);
			has_self = true;
		}
		prev_key = key;
	}
	if (p != end)
		return BAD("matrix %u: entry bytes do not match its extent", i);
	if (!has_self)
		return BAD("matrix %u: own cell missing", i);
	return CQ_OK;
}

static cq_code
check_matrices(cav_view *v, cq_error *err)
{
	size_t		ent_len;
	int64_t		prev_tgt = -1;
	cq_code		rc;

	if ((uint64_t) v->n_mat * CAV_REC_SIZE > v->len - v->table)
		return BAD("matrix table runs past the end");
	v->entries = v->table + (size_t) v->n_mat * CAV_REC_SIZE;
	ent_len = v->len - v->entries;
	for (uint32_t i = 0; i < v->n_mat; i++)
	{
		rc = check_record(v, i, ent_len, prev_tgt, err);
		if (rc)
			return rc;
		prev_tgt = cq_le_get_u32(cav_view_rec(v, i) + CAV_REC_TGT);
	}
	if (v->n_mat == 0 && ent_len != 0)
		return BAD("trailing bytes after the matrix table");
	for (uint32_t i = 0; i < v->n_mat; i++)
	{
		uint64_t	start = cq_le_get_u64(cav_view_rec(v, i) + CAV_REC_START);
		uint64_t	end = i + 1 < v->n_mat ?
			cq_le_get_u64(cav_view_rec(v, i + 1) + CAV_REC_START) : ent_len;

		if ((i == 0 && start != 0) || end <= start)
			return BAD("matrix %u: entry extent out of order", i);
		rc = check_entries(v, i, v->buf + v->entries + start,
						   v->buf + v->entries + end, err);
		if (rc)
			return rc;
	}
	return CQ_OK;
}

cq_code
cav_validate(const void *buf, size_t len, cq_error *err)
{
	cav_view	v;

	return cav_view_open(buf, len, &v, err);
}

/* Section bounds only; see cav_view_open_trusted() in cav_view.h. */
static cq_code
skip_dict(const cav_view *v, size_t *pos, uint32_t n, cq_error *err)
{
	uint64_t	table = ((uint64_t) n + 1) * 4;

	if (table > v->len - *pos)
		return BAD("dictionary offsets run past the end");
	table += cq_le_get_u32(v->buf + *pos + (size_t) n * 4);
	if (table > v->len - *pos)
		return BAD("dictionary strings run past the end");
	*pos += table;
	return CQ_OK;
}

/* The matrix table's bounds only (trusted bytes). */
static cq_code
skip_matrices(cav_view *v, size_t pos, cq_error *err)
{
	if ((uint64_t) v->n_mat * CAV_REC_SIZE > v->len - pos)
		return BAD("matrix table runs past the end");
	v->entries = pos + (size_t) v->n_mat * CAV_REC_SIZE;
	return CQ_OK;
}

/* Opens a view: every check, or (trusted) the section bounds only. */
static cq_code
open_view(const void *buf, size_t len, cav_view *v, bool trusted, cq_error *err)
{
	size_t		pos = CAV_HEADER_SIZE;
	cq_code		rc;

	memset(v, 0, sizeof(*v));
	if (buf == NULL)
		return BAD("no buffer");
	v->buf = buf;
	v->len = len;
	rc = check_header(v->buf, len, v, err);
	{
		size_t	   *start[3] = {&v->src_dict, &v->tgt_dict, &v->res_dict};
		uint32_t	count[3] = {v->n_src, v->n_tgt, v->n_restrict};
		const char *what[3] = {"source", "target", "restricted"};

		for (int i = 0; i < 3 && rc == CQ_OK; i++)
		{
			*start[i] = pos;
			rc = trusted ? skip_dict(v, &pos, count[i], err)
				: check_dict(v->buf, len, &pos, count[i], what[i], err);
		}
	}
	if (rc == CQ_OK)
	{
		v->table = pos;
		rc = trusted ? skip_matrices(v, pos, err) : check_matrices(v, err);
	}
	if (rc)
		memset(v, 0, sizeof(*v));
	return rc;
}

cq_code
cav_view_open(const void *buf, size_t len, cav_view *v, cq_error *err)
{
	return open_view(buf, len, v, false, err);
}

cq_code
cav_view_open_trusted(const void *buf, size_t len, cav_view *v, cq_error *err)
{
	return open_view(buf, len, v, true, err);
}
