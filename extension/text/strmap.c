#include "text/strmap.h"

#include <string.h>

#include "common/mem.h"
#include "common/error.h"

/* FNV-1a, then a final mix so the low bits used for slots are well spread. */
static uint64_t
hash_bytes(const char *s, size_t len)
{
	uint64_t	h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char) s[i]) * 1099511628211ULL;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 32);
}

cq_code
cq_strmap_init(cq_strmap *m, size_t expected)
{
	memset(m, 0, sizeof(*m));
	m->cap = 16;
	while (m->cap < expected * 2)
		m->cap <<= 1;
	m->slots = cq_alloc0(m->cap * sizeof(uint32_t));
	return m->slots ? CQ_OK : CQ_ENOMEM;
}

void
cq_strmap_free(cq_strmap *m)
{
	cq_free(m->slots);
	cq_free(m->key_off);
	cq_free(m->key_len);
	cq_free(m->hash);
	cq_free(m->vals);
	cq_free(m->arena);
	memset(m, 0, sizeof(*m));
}

static int64_t
probe(const cq_strmap *m, const char *key, size_t len, uint64_t h, size_t *slot)
{
	size_t		mask = m->cap - 1;
	size_t		s = h & mask;

	for (;;)
	{
		uint32_t	e = m->slots[s];

		if (e == 0)
		{
			*slot = s;
			return -1;
		}
		e--;
		if (m->hash[e] == h && m->key_len[e] == len &&
			memcmp(m->arena + m->key_off[e], key, len) == 0)
		{
			*slot = s;
			return e;
		}
		s = (s + 1) & mask;
	}
}

int64_t
cq_strmap_find(const cq_strmap *m, const char *key, size_t len)
{
	size_t		slot;

	return probe(m, key, len, hash_bytes(key, len), &slot);
}

/* Double the slot table (load factor stays below 1/2). */
static cq_code
grow_slots(cq_strmap *m)
{
	size_t		cap = m->cap * 2;
	uint32_t   *slots = cq_alloc0(cap * sizeof(uint32_t));

	if (!slots)
		return CQ_ENOMEM;
	for (size_t e = 0; e < m->n; e++)
	{
		size_t		s = m->hash[e] & (cap - 1);

		while (slots[s])
			s = (s + 1) & (cap - 1);
		slots[s] = (uint32_t) e + 1;
	}
	cq_free(m->slots);
	m->slots = slots;
	m->cap = cap;
	return CQ_OK;
}

static cq_code
grow_entries(cq_strmap *m)
{
	size_t		nc = m->n_cap ? m->n_cap * 2 : 16;
	size_t	   *ko = cq_realloc(m->key_off, nc * sizeof(size_t));

	if (!ko)
		return CQ_ENOMEM;
	m->key_off = ko;
	uint32_t   *kl = cq_realloc(m->key_len, nc * sizeof(uint32_t));

	if (!kl)
		return CQ_ENOMEM;
	m->key_len = kl;
	uint64_t   *h = cq_realloc(m->hash, nc * sizeof(uint64_t));

	if (!h)
		return CQ_ENOMEM;
	m->hash = h;
	int64_t    *v = cq_realloc(m->vals, nc * sizeof(int64_t));

	if (!v)
		return CQ_ENOMEM;
	m->vals = v;
	m->n_cap = nc;
	return CQ_OK;
}

static cq_code
reserve_arena(cq_strmap *m, size_t extra)
{
	size_t		need = m->arena_len + extra;

	if (need <= m->arena_cap)
		return CQ_OK;
	size_t		cap = m->arena_cap ? m->arena_cap : 256;

	while (cap < need)
		cap *= 2;
	char	   *a = cq_realloc(m->arena, cap);

	if (!a)
		return CQ_ENOMEM;
	m->arena = a;
	m->arena_cap = cap;
	return CQ_OK;
}

cq_code
cq_strmap_intern(cq_strmap *m, const char *key, size_t len, int64_t *index, int *inserted)
{
	uint64_t	h = hash_bytes(key, len);
	size_t		slot;
	int64_t		e = probe(m, key, len, h, &slot);

	if (inserted)
		*inserted = 0;
	if (e >= 0)
	{
		*index = e;
		return CQ_OK;
	}
	if (len > UINT32_MAX || m->n >= UINT32_MAX - 1)
		return CQ_ELIMIT;
	if ((m->n + 1) * 2 > m->cap)
	{
		if (grow_slots(m) != CQ_OK)
			return CQ_ENOMEM;
		probe(m, key, len, h, &slot);
	}
	if (m->n == m->n_cap && grow_entries(m) != CQ_OK)
		return CQ_ENOMEM;
	if (reserve_arena(m, len + 1) != CQ_OK)
		return CQ_ENOMEM;
	e = (int64_t) m->n++;
	memcpy(m->arena + m->arena_len, key, len);
	m->arena[m->arena_len + len] = '\0';
	m->key_off[e] = m->arena_len;
	m->key_len[e] = (uint32_t) len;
	m->hash[e] = h;
	m->vals[e] = 0;
	m->arena_len += len + 1;
	m->slots[slot] = (uint32_t) e + 1;
	if (inserted)
		*inserted = 1;
	*index = e;
	return CQ_OK;
}
