/*
 * A string map's sections in a relocatable arena (text/strmap_arena.h).
 */
#include <string.h>

#include "text/strmap_arena.h"

uint64_t
cq_strmap_arena_layout(const cq_strmap *m, uint64_t at, cq_strmap_arena *s)
{
	memset(s, 0, sizeof(*s));
	s->n = m->n;
	s->cap = m->cap;
	s->keys_len = m->arena_len;
	at = cq_arena_up8(at);
	s->slots_off = at;
	at = cq_arena_up8(at + s->cap * sizeof(uint32_t));
	s->offs_off = at;
	at = cq_arena_up8(at + s->n * sizeof(uint64_t));
	s->lens_off = at;
	at = cq_arena_up8(at + s->n * sizeof(uint32_t));
	s->hashes_off = at;
	at = cq_arena_up8(at + s->n * sizeof(uint64_t));
	s->keys_off = at;
	return cq_arena_up8(at + s->keys_len);
}

void
cq_strmap_arena_write(const cq_strmap *m, const cq_strmap_arena *s, unsigned char *a)
{
	if (s->cap)
		memcpy(a + s->slots_off, m->slots, (size_t) s->cap * sizeof(uint32_t));
	for (uint64_t e = 0; e < s->n; e++)
	{
		uint64_t	off = m->key_off[e];

		memcpy(a + s->offs_off + e * sizeof(uint64_t), &off, sizeof(off));
	}
	if (s->n)
	{
		memcpy(a + s->lens_off, m->key_len, (size_t) s->n * sizeof(uint32_t));
		memcpy(a + s->hashes_off, m->hash, (size_t) s->n * sizeof(uint64_t));
	}
	if (s->keys_len)
		memcpy(a + s->keys_off, m->arena, (size_t) s->keys_len);
}

cq_code
cq_strmap_arena_view(const unsigned char *a, uint64_t total, const cq_strmap_arena *s,
					 const char *what, cq_strmap *m, cq_error *err)
{
	const uint32_t *slots;
	const uint64_t *offs;
	const uint32_t *lens;
	const char *keys;
	uint64_t	filled = 0;

	memset(m, 0, sizeof(*m));
	if (sizeof(size_t) != sizeof(uint64_t))
		return cq_fail(err, CQ_EINVAL, "a %s arena of another build", what);
	if (s->cap < 2 || (s->cap & (s->cap - 1)) != 0 || s->n >= s->cap || s->n >= UINT32_MAX - 1 ||
		s->cap > total / sizeof(uint32_t) || s->n > total / sizeof(uint32_t) ||
		!cq_arena_section_ok(s->slots_off, s->cap * sizeof(uint32_t), total) ||
		!cq_arena_section_ok(s->offs_off, s->n * sizeof(uint64_t), total) ||
		!cq_arena_section_ok(s->lens_off, s->n * sizeof(uint32_t), total) ||
		!cq_arena_section_ok(s->hashes_off, s->n * sizeof(uint64_t), total) ||
		!cq_arena_section_ok(s->keys_off, s->keys_len, total))
		return cq_fail(err, CQ_EINVAL, "a %s arena's sections do not fit it", what);
	slots = (const uint32_t *) (a + s->slots_off);
	offs = (const uint64_t *) (a + s->offs_off);
	lens = (const uint32_t *) (a + s->lens_off);
	keys = (const char *) (a + s->keys_off);
	/* every slot names an entry or none, and at least one is empty: probing ends */
	for (uint64_t i = 0; i < s->cap; i++)
	{
		if (slots[i] > s->n)
			return cq_fail(err, CQ_EINVAL, "a %s arena's slot %llu names no token", what,
						   (unsigned long long) i);
		filled += slots[i] != 0;
	}
	if (filled != s->n)
		return cq_fail(err, CQ_EINVAL, "a %s arena's slots hold %llu tokens, its head says %llu",
					   what, (unsigned long long) filled, (unsigned long long) s->n);
	/* every key inside the keys, NUL-terminated */
	for (uint64_t e = 0; e < s->n; e++)
		if (offs[e] >= s->keys_len || lens[e] >= s->keys_len - offs[e] ||
			keys[offs[e] + lens[e]] != '\0')
			return cq_fail(err, CQ_EINVAL, "a %s arena's token %llu lies outside its keys", what,
						   (unsigned long long) e);
	m->slots = (uint32_t *) slots;
	m->cap = (size_t) s->cap;
	m->n = (size_t) s->n;
	m->key_off = (size_t *) offs;
	m->key_len = (uint32_t *) lens;
	m->hash = (uint64_t *) (a + s->hashes_off);
	m->arena = (char *) keys;
	m->arena_len = (size_t) s->keys_len;
	return CQ_OK;
}
