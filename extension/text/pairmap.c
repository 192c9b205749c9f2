#include "text/pairmap.h"

#include <string.h>

#include "common/mem.h"
#include "common/error.h"

static inline uint64_t
pair_key(int32_t a, int32_t b)
{
	return (((uint64_t) (uint32_t) a << 32) | (uint32_t) b) + 1;
}

static inline size_t
pair_slot(uint64_t k, size_t mask)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t) k & mask;
}

cq_code
cq_pairmap_init(cq_pairmap *m, size_t expected)
{
	m->cap = 16;
	while (m->cap < expected * 2)
		m->cap <<= 1;
	m->n = 0;
	m->keys = cq_alloc0(m->cap * sizeof(uint64_t));
	m->vals = cq_alloc(m->cap * sizeof(int32_t));
	return (m->keys && m->vals) ? CQ_OK : CQ_ENOMEM;
}

void
cq_pairmap_free(cq_pairmap *m)
{
	cq_free(m->keys);
	cq_free(m->vals);
	memset(m, 0, sizeof(*m));
}

int32_t
cq_pairmap_get(const cq_pairmap *m, int32_t a, int32_t b)
{
	uint64_t	k = pair_key(a, b);
	size_t		mask = m->cap - 1;

	for (size_t s = pair_slot(k, mask);; s = (s + 1) & mask)
	{
		if (m->keys[s] == k)
			return m->vals[s];
		if (m->keys[s] == 0)
			return -1;
	}
}

static cq_code
grow(cq_pairmap *m)
{
	size_t		cap = m->cap * 2;
	uint64_t   *keys = cq_alloc0(cap * sizeof(uint64_t));
	int32_t    *vals = cq_alloc(cap * sizeof(int32_t));

	if (!keys || !vals)
	{
		cq_free(keys);
		cq_free(vals);
		return CQ_ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
	{
		if (!m->keys[i])
			continue;
		size_t		s = pair_slot(m->keys[i], cap - 1);

		while (keys[s])
			s = (s + 1) & (cap - 1);
		keys[s] = m->keys[i];
		vals[s] = m->vals[i];
	}
	cq_free(m->keys);
	cq_free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return CQ_OK;
}

cq_code
cq_pairmap_put_new(cq_pairmap *m, int32_t a, int32_t b, int32_t val, int32_t *stored)
{
	uint64_t	k = pair_key(a, b);

	if ((m->n + 1) * 2 > m->cap && grow(m) != CQ_OK)
		return CQ_ENOMEM;

	size_t		mask = m->cap - 1;

	for (size_t s = pair_slot(k, mask);; s = (s + 1) & mask)
	{
		if (m->keys[s] == k)
		{
			val = m->vals[s];
			break;
		}
		if (m->keys[s] == 0)
		{
			m->keys[s] = k;
			m->vals[s] = val;
			m->n++;
			break;
		}
	}
	if (stored)
		*stored = val;
	return CQ_OK;
}
