/* Writing a state in the canonical layout (FORMAT.md). */
#include "cav/state_impl.h"

#include "cav/format.h"
#include "common/le.h"
#include "common/mem.h"
#include "common/varint.h"

#include <string.h>

typedef struct canon
{
	uint32_t   *src_rank;
	uint32_t   *src_order;		/* source ids by rank */
	uint32_t   *tgt_rank;
	uint32_t   *tgt_order;		/* target ids by rank */
	uint32_t   *res_order;
	cav_cell   *sorted;			/* one matrix, canonical keys */
	cav_cell   *tmp;			/* radix sort buffer, as large */
	uint8_t    *enc;			/* encoded entries of every matrix */
	size_t		enc_len;
	size_t		enc_cap;
	uint64_t   *starts;			/* [n_tgt] start of each matrix in enc */
} canon;

static void
canon_free(canon *c)
{
	cq_free(c->src_rank);
	cq_free(c->src_order);
	cq_free(c->tgt_rank);
	cq_free(c->tgt_order);
	cq_free(c->res_order);
	cq_free(c->sorted);
	cq_free(c->tmp);
	cq_free(c->enc);
	cq_free(c->starts);
}

/*
 * LSD radix sort of cells by key, 11 bits a pass, only as many passes as
 * the largest key needs (keys are row << 16 | distance, about 34 bits).
 * Leaves the result in *a (swapping the buffers when needed).
 */
static void
radix_sort(cav_cell **a, cav_cell **tmp, uint32_t n, uint64_t max_key)
{
	for (int shift = 0; shift < 64 && (max_key >> shift); shift += 11)
	{
		uint32_t	count[2048] = {0};
		cav_cell   *from = *a,
				   *to = *tmp;

		for (uint32_t i = 0; i < n; i++)
			count[(from[i].key >> shift) & 2047]++;
		for (uint32_t d = 0, sum = 0; d < 2048; d++)
		{
			uint32_t	c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (uint32_t i = 0; i < n; i++)
			to[count[(from[i].key >> shift) & 2047]++] = from[i];
		*a = to;
		*tmp = from;
	}
}

/* Sort one matrix by canonical (row, distance) and append its encoding. */
static cq_code
encode_matrix(const cav_state *st, canon *c, const cav_cells *m, cq_error *err)
{
	uint32_t	n = 0,
				prev = 0;
	uint64_t	max_key = 0;
	size_t		worst = (size_t) m->n * 30;
	uint8_t    *p;

	for (uint32_t i = 0; i < m->cap; i++)
	{
		uint64_t	key = m->cells[i].key;
		uint32_t	row;

		if (key == CAV_CELL_EMPTY)
			continue;
		row = (uint32_t) (key >> 16);
		row = row & CAV_TGT_BIT ? st->src.n + c->tgt_rank[row & ~CAV_TGT_BIT]
			: c->src_rank[row];
		c->sorted[n].key = (uint64_t) row << 16 | (key & 0xffff);
		c->sorted[n++].count = m->cells[i].count;
		if (c->sorted[n - 1].key > max_key)
			max_key = c->sorted[n - 1].key;
	}
	radix_sort(&c->sorted, &c->tmp, n, max_key);
	if (c->enc_len + worst > c->enc_cap)
	{
		size_t		cap = c->enc_cap ? c->enc_cap : 4096;
		uint8_t    *q;

		while (cap < c->enc_len + worst)
			cap *= 2;
		q = cq_realloc(c->enc, cap);
		if (q == NULL)
			return cq_fail(err, CQ_ENOMEM, "out of memory serialising a CAV");
		c->enc = q;
		c->enc_cap = cap;
	}
	p = c->enc + c->enc_len;
	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	row = (uint32_t) (c->sorted[i].key >> 16);

		p = cq_varint_put(p, row - prev);
		p = cq_varint_put(p, c->sorted[i].key & 0xffff);
		p = cq_varint_put(p, (uint64_t) c->sorted[i].count);
		prev = row;
	}
	c->enc_len = p - c->enc;
	return CQ_OK;
}

static cq_code
prepare(const cav_state *st, canon *c, uint32_t *n_mat, cq_error *err)
{
	uint32_t	max_nnz = 1;

	c->src_rank = cav_dict_ranks(&st->src, &c->src_order);
	c->tgt_rank = cav_dict_ranks(&st->tgt, &c->tgt_order);
	c->res_order = NULL;
	if (st->res.n)
		cq_free(cav_dict_ranks(&st->res, &c->res_order));
	for (uint32_t t = 0; t < st->tgt.n; t++)
		if (st->mats[t].n > max_nnz)
			max_nnz = st->mats[t].n;
	c->sorted = cq_alloc((size_t) max_nnz * sizeof(cav_cell));
	c->tmp = cq_alloc((size_t) max_nnz * sizeof(cav_cell));
	c->starts = cq_alloc(((size_t) st->tgt.n + 1) * sizeof(uint64_t));
	if (!c->src_rank || !c->src_order || !c->tgt_rank || !c->tgt_order ||
		!c->sorted || !c->tmp || !c->starts ||
		(st->res.n && !c->res_order))
		return cq_fail(err, CQ_ENOMEM, "out of memory serialising a CAV");
	*n_mat = 0;
	for (uint32_t r = 0; r < st->tgt.n; r++)
	{
		const cav_cells *m = &st->mats[c->tgt_order[r]];
		cq_code		rc;

		if (m->occ == 0)
			continue;
		c->starts[r] = c->enc_len;
		rc = encode_matrix(st, c, m, err);
		if (rc)
			return rc;
		(*n_mat)++;
	}
	return CQ_OK;
}

/* u32 offsets[n+1] then the bytes, strings in the given order. */
static uint8_t *
put_dict(uint8_t *p, const cav_dict *d, const uint32_t *order)
{
	uint8_t    *bytes = p + ((size_t) d->n + 1) * 4;
	uint32_t	off = 0;

	for (uint32_t r = 0; r < d->n; r++)
	{
		size_t		len;
		const char *s = cav_dict_str(d, order[r], &len);

		cq_le_put_u32(p + (size_t) r * 4, off);
		memcpy(bytes + off, s, len);
		off += (uint32_t) len;
	}
	cq_le_put_u32(p + (size_t) d->n * 4, off);
	return bytes + off;
}

static size_t
dict_size(const cav_dict *d)
{
	return ((size_t) d->n + 1) * 4 + (d->n ? d->off[d->n] : 0);
}

static void
put_header(uint8_t *p, const cav_state *st, uint32_t n_mat)
{
	memcpy(p + CAV_H_MAGIC, CAV_MAGIC, 4);
	cq_le_put_u16(p + CAV_H_VERSION, CAV_VERSION);
	cq_le_put_u16(p + CAV_H_RESERVED16, 0);
	cq_le_put_u32(p + CAV_H_LMAX, st->l_max);
	cq_le_put_u32(p + CAV_H_NSRC, st->src.n);
	cq_le_put_u32(p + CAV_H_NTGT, st->tgt.n);
	cq_le_put_u32(p + CAV_H_NRES, st->res.n);
	cq_le_put_u32(p + CAV_H_NMAT, n_mat);
	cq_le_put_u32(p + CAV_H_RESERVED32, 0);
	cq_le_put_u64(p + CAV_H_NPAIRS, st->n_pairs);
}

static uint8_t *
put_table(uint8_t *p, const cav_state *st, const canon *c)
{
	for (uint32_t r = 0; r < st->tgt.n; r++)
	{
		const cav_cells *m = &st->mats[c->tgt_order[r]];

		if (m->occ == 0)
			continue;
		cq_le_put_u32(p + CAV_REC_TGT, r);
		cq_le_put_u32(p + CAV_REC_NNZ, m->n);
		cq_le_put_u64(p + CAV_REC_OCC, m->occ);
		cq_le_put_u64(p + CAV_REC_START, c->starts[r]);
		p += CAV_REC_SIZE;
	}
	return p;
}

cq_code
cav_serialize(const cav_state *st, size_t room, uint8_t **out, size_t *len,
			  cq_error *err)
{
	canon		c = {0};
	uint32_t	n_mat = 0;
	size_t		total;
	uint8_t    *buf,
			   *p;
	cq_code		rc;

	*out = NULL;
	*len = 0;
	if (st->failed)
		return cq_fail(err, CQ_EINTERNAL, "CAV state unusable after an earlier error");
	rc = prepare(st, &c, &n_mat, err);
	if (rc)
	{
		canon_free(&c);
		return rc;
	}
	total = CAV_HEADER_SIZE + dict_size(&st->src) + dict_size(&st->tgt) +
		dict_size(&st->res) + (size_t) n_mat * CAV_REC_SIZE + c.enc_len;
	buf = cq_alloc(room + total);
	if (buf == NULL)
	{
		canon_free(&c);
		return cq_fail(err, CQ_ENOMEM, "out of memory serialising a CAV");
	}
	p = buf + room;
	put_header(p, st, n_mat);
	p = put_dict(p + CAV_HEADER_SIZE, &st->src, c.src_order);
	p = put_dict(p, &st->tgt, c.tgt_order);
	p = put_dict(p, &st->res, c.res_order);
	p = put_table(p, st, &c);
	if (c.enc_len)
		memcpy(p, c.enc, c.enc_len);
	canon_free(&c);
	*out = buf;
	*len = total;
	return CQ_OK;
}
