/* Merging two serialized CAVs in one linear pass (see merge_flat.h). */
#include "cav/merge_flat.h"

#include "cav/dict.h"
#include "cav/view_impl.h"
#include "common/mem.h"

#include <string.h>

/* Worst-case bytes of one encoded entry: row delta, distance, count. */
#define ENTRY_MAX_BYTES (5 + 3 + 10)

typedef struct side_map
{
	const cav_view *v;
	uint32_t   *src;			/* source id -> union source id */
	uint32_t   *tgt;			/* target id -> union target id */
} side_map;

static size_t
section_size(const cav_view *v, size_t pos, uint32_t n)
{
	return ((size_t) n + 1) * 4 + cq_le_get_u32(v->buf + pos + (size_t) n * 4);
}

/*
 * Sorted union of two dictionary sections: amap/bmap receive each input
 * id's union id.  With out != NULL (and n_total from a first pass) the
 * union section is written there too.  Returns the union size.
 */
static uint32_t
dict_union(const cav_view *a, size_t apos, uint32_t an,
		   const cav_view *b, size_t bpos, uint32_t bn,
		   uint32_t *amap, uint32_t *bmap, uint8_t *out, uint32_t n_total,
		   size_t *bytes)
{
	uint32_t	i = 0,
				j = 0,
				n = 0;
	size_t		off = 0;

	while (i < an || j < bn)
	{
		const char *sa = NULL,
				   *sb = NULL,
				   *s;
		size_t		la = 0,
					lb = 0,
					len;
		int			c;

		if (i < an)
			sa = cav_section_str(a->buf, apos, an, i, &la);
		if (j < bn)
			sb = cav_section_str(b->buf, bpos, bn, j, &lb);
		c = i == an ? 1 : j == bn ? -1 : cav_bytes_cmp(sa, la, sb, lb);
		s = c <= 0 ? sa : sb;
		len = c <= 0 ? la : lb;
		if (c <= 0)
			amap[i++] = n;
		if (c >= 0)
			bmap[j++] = n;
		if (out)
		{
			cq_le_put_u32(out + (size_t) n * 4, (uint32_t) off);
			memcpy(out + ((size_t) n_total + 1) * 4 + off, s, len);
		}
		off += len;
		n++;
	}
	if (out)
		cq_le_put_u32(out + (size_t) n * 4, (uint32_t) off);
	*bytes = off;
	return n;
}

/* Union target id of matrix idx of one side, UINT32_MAX past the end. */
static uint32_t
mat_target(const side_map *s, uint32_t idx)
{
	if (idx >= s->v->n_mat)
		return UINT32_MAX;
	return s->tgt[cq_le_get_u32(cav_view_rec(s->v, idx) + CAV_REC_TGT)];
}

/* Next entry of one side with its row in union numbering; false at the end. */
static bool
next_mapped(const side_map *s, uint32_t n_src_out, cav_entry_iter *it,
			cav_entry *e)
{
	if (!cav_entry_iter_next(it, e))
		return false;
	e->row = e->row < s->v->n_src ? s->src[e->row]
		: n_src_out + s->tgt[e->row - s->v->n_src];
	return true;
}

/*
 * Write the merged entries of matrix ia of a and ib of b (UINT32_MAX: that
 * side has none) at p; returns the end, nnz in *nnz.  Remapped rows keep
 * their order, so this is a merge of two sorted lists.
 */
static uint8_t *
merge_entries(const side_map *a, uint32_t ia, const side_map *b, uint32_t ib,
			  uint32_t n_src_out, uint8_t *p, uint32_t *nnz)
{
	cav_entry_iter ita = {0},
				itb = {0};
	cav_entry	ea = {0},
				eb = {0};
	bool		ha = false,
				hb = false;
	uint32_t	prev = 0,
				n = 0;

	if (ia != UINT32_MAX)
	{
		cav_entry_iter_init(a->v, ia, &ita);
		ha = next_mapped(a, n_src_out, &ita, &ea);
	}
	if (ib != UINT32_MAX)
	{
		cav_entry_iter_init(b->v, ib, &itb);
		hb = next_mapped(b, n_src_out, &itb, &eb);
	}
	while (ha || hb)
	{
		uint64_t	ka = ha ? (uint64_t) ea.row << 16 | ea.dist : UINT64_MAX;
		uint64_t	kb = hb ? (uint64_t) eb.row << 16 | eb.dist : UINT64_MAX;
		const cav_entry *e = ka <= kb ? &ea : &eb;
		int64_t		count = (ka <= kb ? ea.count : 0) + (kb <= ka ? eb.count : 0);

		p = cq_varint_put(p, e->row - prev);
		p = cq_varint_put(p, e->dist);
		p = cq_varint_put(p, (uint64_t) count);
		prev = e->row;
		n++;
		if (ka <= kb)
			ha = next_mapped(a, n_src_out, &ita, &ea);
		if (kb <= ka)
			hb = next_mapped(b, n_src_out, &itb, &eb);
	}
	*nnz = n;
	return p;
}

static bool
same_options(const cav_view *a, const cav_view *b)
{
	size_t		sa = section_size(a, a->res_dict, a->n_restrict);

	return a->l_max == b->l_max && a->n_restrict == b->n_restrict &&
		sa == section_size(b, b->res_dict, b->n_restrict) &&
		memcmp(a->buf + a->res_dict, b->buf + b->res_dict, sa) == 0;
}

/* Matrices in the union: targets with a matrix on either side. */
static uint32_t
count_matrices(const side_map *a, const side_map *b)
{
	uint32_t	ia = 0,
				ib = 0,
				n = 0;

	while (ia < a->v->n_mat || ib < b->v->n_mat)
	{
		uint32_t	ta = mat_target(a, ia),
					tb = mat_target(b, ib);

		ia += ta <= tb;
		ib += tb <= ta;
		n++;
	}
	return n;
}

typedef struct out_buf
{
	uint8_t    *buf;			/* room + CAV bytes */
	size_t		room;
	size_t		cap;			/* CAV bytes allocated */
	size_t		len;			/* CAV bytes written */
} out_buf;

static cq_code
reserve(out_buf *o, size_t more, cq_error *err)
{
	size_t		cap = o->cap;
	uint8_t    *q;

	if (o->len + more <= o->cap)
		return CQ_OK;
	while (cap < o->len + more)
		cap *= 2;
	q = cq_realloc(o->buf, o->room + cap);
	if (q == NULL)
		return cq_fail(err, CQ_ENOMEM, "out of memory merging CAVs");
	o->buf = q;
	o->cap = cap;
	return CQ_OK;
}

/* The matrix table and the entries, from o->len = start of the table. */
static cq_code
write_matrices(out_buf *o, const side_map *a, const side_map *b,
			   uint32_t n_mat, uint32_t n_src_out, cq_error *err)
{
	size_t		table = o->len;
	size_t		entries = table + (size_t) n_mat * CAV_REC_SIZE;
	uint32_t	ia = 0,
				ib = 0;

	o->len = entries;
	for (uint32_t k = 0; k < n_mat; k++)
	{
		uint32_t	ta = mat_target(a, ia),
					tb = mat_target(b, ib),
					nnz_in = 0,
					nnz;
		uint64_t	occ = 0;
		uint8_t    *rec,
				   *end;
		cq_code		rc;

		if (ta <= tb)
		{
			nnz_in += cq_le_get_u32(cav_view_rec(a->v, ia) + CAV_REC_NNZ);
			occ += cq_le_get_u64(cav_view_rec(a->v, ia) + CAV_REC_OCC);
		}
		if (tb <= ta)
		{
			nnz_in += cq_le_get_u32(cav_view_rec(b->v, ib) + CAV_REC_NNZ);
			occ += cq_le_get_u64(cav_view_rec(b->v, ib) + CAV_REC_OCC);
		}
		if (occ > INT64_MAX)
			return cq_fail(err, CQ_EINVAL, "occurrence count overflow merging CAVs");
		rc = reserve(o, (size_t) nnz_in * ENTRY_MAX_BYTES, err);
		if (rc)
			return rc;
		end = merge_entries(a, ta <= tb ? ia : UINT32_MAX, b, tb <= ta ? ib : UINT32_MAX,
							n_src_out, o->buf + o->room + o->len, &nnz);
		rec = o->buf + o->room + table + (size_t) k * CAV_REC_SIZE;
		cq_le_put_u32(rec + CAV_REC_TGT, ta < tb ? ta : tb);
		cq_le_put_u32(rec + CAV_REC_NNZ, nnz);
		cq_le_put_u64(rec + CAV_REC_OCC, occ);
		cq_le_put_u64(rec + CAV_REC_START, o->len - entries);
		o->len = end - (o->buf + o->room);
		ia += ta <= tb;
		ib += tb <= ta;
	}
	return CQ_OK;
}

static void
put_header(uint8_t *p, const cav_view *a, const cav_view *b, uint32_t n_src,
		   uint32_t n_tgt, uint32_t n_mat)
{
	memcpy(p, a->buf, CAV_HEADER_SIZE);	/* magic, version, l_max, n_res */
	cq_le_put_u32(p + CAV_H_NSRC, n_src);
	cq_le_put_u32(p + CAV_H_NTGT, n_tgt);
	cq_le_put_u32(p + CAV_H_NMAT, n_mat);
	cq_le_put_u64(p + CAV_H_NPAIRS, a->n_pairs + b->n_pairs);
}

cq_code
cav_merge_serialized(const cav_view *a, const cav_view *b, size_t room,
					 uint8_t **out, size_t *len, cq_error *err)
{
	side_map	ma = {a, NULL, NULL},
				mb = {b, NULL, NULL};
	out_buf		o = {NULL, room, 0, 0};
	uint32_t	n_src,
				n_tgt,
				n_mat;
	size_t		src_bytes,
				tgt_bytes,
				res_size;
	cq_code		rc = CQ_OK;

	*out = NULL;
	*len = 0;
	if (!same_options(a, b))
		return cq_fail(err, CQ_EMISMATCH,
						"CAVs built with different options (l_max %u vs %u, or restricted targets)",
						a->l_max, b->l_max);
	ma.src = cq_alloc(((size_t) a->n_src + 1) * sizeof(uint32_t));
	ma.tgt = cq_alloc(((size_t) a->n_tgt + 1) * sizeof(uint32_t));
	mb.src = cq_alloc(((size_t) b->n_src + 1) * sizeof(uint32_t));
	mb.tgt = cq_alloc(((size_t) b->n_tgt + 1) * sizeof(uint32_t));
	if (!ma.src || !ma.tgt || !mb.src || !mb.tgt)
		rc = cq_fail(err, CQ_ENOMEM, "out of memory merging CAVs");
	if (rc == CQ_OK)
	{
		n_src = dict_union(a, a->src_dict, a->n_src, b, b->src_dict, b->n_src,
						   ma.src, mb.src, NULL, 0, &src_bytes);
		n_tgt = dict_union(a, a->tgt_dict, a->n_tgt, b, b->tgt_dict, b->n_tgt,
						   ma.tgt, mb.tgt, NULL, 0, &tgt_bytes);
		n_mat = count_matrices(&ma, &mb);
		res_size = section_size(a, a->res_dict, a->n_restrict);
		o.len = CAV_HEADER_SIZE + ((size_t) n_src + 1) * 4 + src_bytes +
			((size_t) n_tgt + 1) * 4 + tgt_bytes + res_size;
		o.cap = o.len + (size_t) n_mat * CAV_REC_SIZE +
			(a->len - a->entries) + (b->len - b->entries) + 64;
		o.buf = cq_alloc(room + o.cap);
		if (o.buf == NULL)
			rc = cq_fail(err, CQ_ENOMEM, "out of memory merging CAVs");
	}
	if (rc == CQ_OK)
	{
		uint8_t    *p = o.buf + room;

		put_header(p, a, b, n_src, n_tgt, n_mat);
		p += CAV_HEADER_SIZE;
		dict_union(a, a->src_dict, a->n_src, b, b->src_dict, b->n_src,
				   ma.src, mb.src, p, n_src, &src_bytes);
		p += ((size_t) n_src + 1) * 4 + src_bytes;
		dict_union(a, a->tgt_dict, a->n_tgt, b, b->tgt_dict, b->n_tgt,
				   ma.tgt, mb.tgt, p, n_tgt, &tgt_bytes);
		p += ((size_t) n_tgt + 1) * 4 + tgt_bytes;
		memcpy(p, a->buf + a->res_dict, res_size);
		rc = write_matrices(&o, &ma, &mb, n_mat, n_src, err);
	}
	cq_free(ma.src);
	cq_free(ma.tgt);
	cq_free(mb.src);
	cq_free(mb.tgt);
	if (rc)
	{
		cq_free(o.buf);
		return rc;
	}
	*out = o.buf;
	*len = o.len;
	return CQ_OK;
}
