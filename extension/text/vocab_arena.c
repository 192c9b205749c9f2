/*
 * A relocatable vocabulary (vocabulary.h: cq_vocabulary_arena_bytes,
 * cq_vocabulary_flatten, cq_vocabulary_attach): the token table of a
 * vocabulary in one arena whose references are offsets, so that every
 * process mapping it (a shared memory segment) looks tokens up in place.
 *
 * The arena, every section 8-byte aligned from its start:
 *   head      magic, format, this build's sizes, the sections' offsets and
 *             lengths, and a CRC-32 of the head itself
 *   slots     the map's open-addressing table, cap uint32 (entry + 1, 0 empty)
 *   offs      n uint64: each key's offset in keys
 *   lens      n uint32: each key's length
 *   hashes    n uint64: each key's hash (the map's, so probing is the same)
 *   keys      the keys' bytes, each followed by a NUL
 * The slot table is copied as it is, so every lookup probes the same slots
 * as in the flattened map and finds the same entry: the same ids.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/crc32.h"
#include "text/vocabulary.h"

#define VARENA_MAGIC UINT64_C(0x414e455241564351)	/* "CQVARENA" little-endian */
#define VARENA_FORMAT 1

typedef struct varena_head
{
	uint64_t	magic;
	uint32_t	format;
	uint32_t	head_size;		/* sizeof(varena_head) of the writer */
	uint32_t	size_t_size;	/* sizeof(size_t) of the writer */
	uint32_t	head_crc;		/* CRC-32 of the head with this field 0 */
	uint64_t	total;			/* the arena's bytes */
	uint64_t	n;				/* entries (tokens) */
	uint64_t	cap;			/* slots, a power of two above n */
	uint64_t	keys_len;		/* bytes of keys, NULs included */
	uint64_t	slots_off,
				offs_off,
				lens_off,
				hashes_off,
				keys_off;
} varena_head;

static uint64_t
up8(uint64_t n)
{
	return (n + 7) / 8 * 8;
}

/* The head of v's arena, with every offset and the total laid out. */
static varena_head
layout(const cq_vocabulary *v)
{
	const cq_strmap *m = &v->map;
	varena_head h;
	uint64_t	at;

	memset(&h, 0, sizeof(h));
	h.magic = VARENA_MAGIC;
	h.format = VARENA_FORMAT;
	h.head_size = sizeof(varena_head);
	h.size_t_size = sizeof(size_t);
	h.n = m->n;
	h.cap = m->cap;
	h.keys_len = m->arena_len;
	at = up8(sizeof(varena_head));
	h.slots_off = at;
	at = up8(at + h.cap * sizeof(uint32_t));
	h.offs_off = at;
	at = up8(at + h.n * sizeof(uint64_t));
	h.lens_off = at;
	at = up8(at + h.n * sizeof(uint32_t));
	h.hashes_off = at;
	at = up8(at + h.n * sizeof(uint64_t));
	h.keys_off = at;
	h.total = up8(at + h.keys_len);
	return h;
}

static uint32_t
head_crc(const varena_head *h)
{
	varena_head c = *h;

	c.head_crc = 0;
	return cq_crc32(0, &c, sizeof(c));
}

size_t
cq_vocabulary_arena_bytes(const cq_vocabulary *v)
{
	return (size_t) layout(v).total;
}

cq_code
cq_vocabulary_flatten(const cq_vocabulary *v, void *dst, size_t size, cq_error *err)
{
	const cq_strmap *m = &v->map;
	varena_head h = layout(v);
	unsigned char *a = dst;

	if (((uintptr_t) dst & 7) != 0)
		return cq_fail(err, CQ_EINVAL, "a vocabulary's arena must start on an 8-byte boundary");
	if (size < h.total)
		return cq_fail(err, CQ_EINVAL, "a vocabulary's arena needs %llu bytes, %zu given",
					   (unsigned long long) h.total, size);
	h.head_crc = head_crc(&h);
	memset(a, 0, (size_t) h.total);
	memcpy(a, &h, sizeof(h));
	if (h.cap)
		memcpy(a + h.slots_off, m->slots, (size_t) h.cap * sizeof(uint32_t));
	for (uint64_t e = 0; e < h.n; e++)
	{
		uint64_t	off = m->key_off[e];

		memcpy(a + h.offs_off + e * sizeof(uint64_t), &off, sizeof(off));
	}
	if (h.n)
	{
		memcpy(a + h.lens_off, m->key_len, (size_t) h.n * sizeof(uint32_t));
		memcpy(a + h.hashes_off, m->hash, (size_t) h.n * sizeof(uint64_t));
	}
	if (h.keys_len)
		memcpy(a + h.keys_off, m->arena, (size_t) h.keys_len);
	return CQ_OK;
}

/* Section [off, off + len) lies inside an arena of total bytes, 8-byte aligned. */
static bool
section_ok(uint64_t off, uint64_t len, uint64_t total)
{
	return off % 8 == 0 && off <= total && len <= total - off;
}

cq_code
cq_vocabulary_attach(const void *base, size_t bytes, cq_vocabulary *v, cq_error *err)
{
	const unsigned char *a = base;
	varena_head h;
	const uint32_t *slots;
	const uint64_t *offs;
	const uint32_t *lens;
	const char *keys;
	uint64_t	filled = 0;

	memset(v, 0, sizeof(*v));
	if (((uintptr_t) base & 7) != 0)
		return cq_fail(err, CQ_EINVAL, "a vocabulary's arena must start on an 8-byte boundary");
	if (bytes < sizeof(h))
		return cq_fail(err, CQ_EINVAL, "a vocabulary's arena is truncated");
	memcpy(&h, a, sizeof(h));
	if (h.magic != VARENA_MAGIC || h.format != VARENA_FORMAT)
		return cq_fail(err, CQ_EINVAL, "not a vocabulary arena");
	if (h.head_size != sizeof(varena_head) || h.size_t_size != sizeof(size_t) ||
		sizeof(size_t) != sizeof(uint64_t))
		return cq_fail(err, CQ_EINVAL, "a vocabulary arena of another build");
	if (h.head_crc != head_crc(&h))
		return cq_fail(err, CQ_EINVAL, "a vocabulary arena's head is damaged (checksum)");
	if (h.total > bytes)
		return cq_fail(err, CQ_EINVAL, "a vocabulary's arena is truncated (%llu bytes, %zu given)",
					   (unsigned long long) h.total, bytes);
	if (h.cap < 2 || (h.cap & (h.cap - 1)) != 0 || h.n >= h.cap || h.n >= UINT32_MAX - 1 ||
		h.cap > h.total / sizeof(uint32_t) || h.n > h.total / sizeof(uint32_t) ||
		!section_ok(h.slots_off, h.cap * sizeof(uint32_t), h.total) ||
		!section_ok(h.offs_off, h.n * sizeof(uint64_t), h.total) ||
		!section_ok(h.lens_off, h.n * sizeof(uint32_t), h.total) ||
		!section_ok(h.hashes_off, h.n * sizeof(uint64_t), h.total) ||
		!section_ok(h.keys_off, h.keys_len, h.total))
		return cq_fail(err, CQ_EINVAL, "a vocabulary arena's sections do not fit it");
	slots = (const uint32_t *) (a + h.slots_off);
	offs = (const uint64_t *) (a + h.offs_off);
	lens = (const uint32_t *) (a + h.lens_off);
	keys = (const char *) (a + h.keys_off);
	/* every slot names an entry or none, and at least one is empty: probing ends */
	for (uint64_t s = 0; s < h.cap; s++)
	{
		if (slots[s] > h.n)
			return cq_fail(err, CQ_EINVAL, "a vocabulary arena's slot %llu names no token",
						   (unsigned long long) s);
		filled += slots[s] != 0;
	}
	if (filled != h.n)
		return cq_fail(err, CQ_EINVAL, "a vocabulary arena's slots hold %llu tokens, its head says %llu",
					   (unsigned long long) filled, (unsigned long long) h.n);
	/* every key inside the keys, NUL-terminated */
	for (uint64_t e = 0; e < h.n; e++)
		if (offs[e] >= h.keys_len || lens[e] >= h.keys_len - offs[e] ||
			keys[offs[e] + lens[e]] != '\0')
			return cq_fail(err, CQ_EINVAL, "a vocabulary arena's token %llu lies outside its keys",
						   (unsigned long long) e);
	v->map.slots = (uint32_t *) slots;
	v->map.cap = (size_t) h.cap;
	v->map.n = (size_t) h.n;
	v->map.n_cap = 0;
	v->map.key_off = (size_t *) offs;
	v->map.key_len = (uint32_t *) lens;
	v->map.hash = (uint64_t *) (a + h.hashes_off);
	v->map.vals = NULL;
	v->map.arena = (char *) keys;
	v->map.arena_len = (size_t) h.keys_len;
	v->map.arena_cap = 0;
	return CQ_OK;
}
