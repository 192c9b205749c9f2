#include "cav/dict.h"

#include "common/mem.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a, then a final mix so the low bits are usable as a slot index. */
static uint32_t
hash_bytes(const char *s, size_t len)
{
	uint64_t	h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t) s[i]) * 1099511628211ULL;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return (uint32_t) h;
}

void
cav_dict_free(cav_dict *d, cav_budget *b)
{
	cav_budget_release(b, d->slots, (size_t) d->n_slots * sizeof(uint32_t));
	cav_budget_release(b, d->hash, (size_t) d->cap_ids * sizeof(uint32_t));
	cav_budget_release(b, d->off, ((size_t) d->cap_ids + 1) * sizeof(uint64_t));
	cav_budget_release(b, d->bytes, d->cap_bytes);
	memset(d, 0, sizeof(*d));
}

static uint32_t
probe(const cav_dict *d, const char *s, size_t len, uint32_t h, uint32_t *slot)
{
	uint32_t	mask = d->n_slots - 1;
	uint32_t	i = h & mask;

	for (;; i = (i + 1) & mask)
	{
		uint32_t	id1 = d->slots[i];

		if (id1 == 0)
		{
			*slot = i;
			return CAV_NO_ID;
		}
		if (d->hash[id1 - 1] == h)
		{
			size_t		l;
			const char *t = cav_dict_str(d, id1 - 1, &l);

			if (l == len && memcmp(t, s, len) == 0)
			{
				*slot = i;
				return id1 - 1;
			}
		}
	}
}

uint32_t
cav_dict_find(const cav_dict *d, const char *s, size_t len)
{
	uint32_t	slot;

	if (d->n_slots == 0)
		return CAV_NO_ID;
	return probe(d, s, len, hash_bytes(s, len), &slot);
}

/* Keep the table at most half full. */
static cq_code
grow_slots(cav_dict *d, cav_budget *b, cq_error *err)
{
	uint32_t	n = d->n_slots ? d->n_slots * 2 : 64;
	uint32_t   *slots = NULL;
	cq_code		rc;

	if (d->n_slots >= (1u << 31))
		return cq_fail(err, CQ_ELIMIT, "CAV dictionary too large");
	rc = cav_budget_resize(b, (void **) &slots, 0, (size_t) n * sizeof(uint32_t), err);
	if (rc)
		return rc;
	memset(slots, 0, (size_t) n * sizeof(uint32_t));
	for (uint32_t id = 0; id < d->n; id++)
	{
		uint32_t	i = d->hash[id] & (n - 1);

		while (slots[i])
			i = (i + 1) & (n - 1);
		slots[i] = id + 1;
	}
	cav_budget_release(b, d->slots, (size_t) d->n_slots * sizeof(uint32_t));
	d->slots = slots;
	d->n_slots = n;
	return CQ_OK;
}

static cq_code
reserve(cav_dict *d, cav_budget *b, size_t len, cq_error *err)
{
	cq_code		rc;

	if (d->n + 1 >= d->cap_ids)
	{
		uint32_t	cap = d->cap_ids ? d->cap_ids * 2 : 64;

		if (d->cap_ids >= (1u << 30))
			return cq_fail(err, CQ_ELIMIT, "CAV dictionary too large");
		rc = cav_budget_resize(b, (void **) &d->hash, (size_t) d->cap_ids * sizeof(uint32_t),
							   (size_t) cap * sizeof(uint32_t), err);
		if (rc)
			return rc;
		rc = cav_budget_resize(b, (void **) &d->off, ((size_t) d->cap_ids + 1) * sizeof(uint64_t),
							   ((size_t) cap + 1) * sizeof(uint64_t), err);
		if (rc)
			return rc;
		if (d->cap_ids == 0)
			d->off[0] = 0;
		d->cap_ids = cap;
	}
	if (d->off[d->n] + len > d->cap_bytes)
	{
		size_t		cap = d->cap_bytes ? d->cap_bytes : 1024;

		while (cap < d->off[d->n] + len)
			cap *= 2;
		rc = cav_budget_resize(b, (void **) &d->bytes, d->cap_bytes, cap, err);
		if (rc)
			return rc;
		d->cap_bytes = cap;
	}
	if ((size_t) (d->n + 1) * 2 > d->n_slots)
		return grow_slots(d, b, err);
	return CQ_OK;
}

cq_code
cav_dict_intern(cav_dict *d, cav_budget *b, const char *s, size_t len,
				uint32_t *id, bool *added, cq_error *err)
{
	uint32_t	h = hash_bytes(s, len);
	uint32_t	slot,
				found;
	cq_code		rc;

	if (d->n_slots)
	{
		found = probe(d, s, len, h, &slot);
		if (found != CAV_NO_ID)
		{
			*id = found;
			if (added)
				*added = false;
			return CQ_OK;
		}
	}
	rc = reserve(d, b, len, err);
	if (rc)
		return rc;
	probe(d, s, len, h, &slot);	/* the table may have been rebuilt */
	memcpy(d->bytes + d->off[d->n], s, len);
	d->off[d->n + 1] = d->off[d->n] + len;
	d->hash[d->n] = h;
	d->slots[slot] = d->n + 1;
	*id = d->n++;
	if (added)
		*added = true;
	return CQ_OK;
}

int
cav_bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int			c = memcmp(a, b, alen < blen ? alen : blen);

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

typedef struct str_ref
{
	const char *s;
	size_t		len;
	uint32_t	id;
} str_ref;

static int
cmp_refs(const void *x, const void *y)
{
	const str_ref *a = x,
			   *b = y;

	return cav_bytes_cmp(a->s, a->len, b->s, b->len);
}

uint32_t *
cav_dict_ranks(const cav_dict *d, uint32_t **order)
{
	str_ref    *refs = cq_alloc((size_t) d->n * sizeof(str_ref));
	uint32_t   *rank = cq_alloc((size_t) d->n * sizeof(uint32_t));
	uint32_t   *ids = order ? cq_alloc((size_t) d->n * sizeof(uint32_t)) : NULL;

	if (!refs || !rank || (order && !ids))
	{
		cq_free(refs);
		cq_free(rank);
		cq_free(ids);
		return NULL;
	}
	for (uint32_t i = 0; i < d->n; i++)
	{
		refs[i].s = cav_dict_str(d, i, &refs[i].len);
		refs[i].id = i;
	}
	qsort(refs, d->n, sizeof(str_ref), cmp_refs);
	for (uint32_t i = 0; i < d->n; i++)
	{
		rank[refs[i].id] = i;
		if (ids)
			ids[i] = refs[i].id;
	}
	cq_free(refs);
	if (order)
		*order = ids;
	return rank;
}
