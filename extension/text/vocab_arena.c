/*
 * A relocatable vocabulary (vocabulary.h: cq_vocabulary_arena_bytes,
 * cq_vocabulary_flatten, cq_vocabulary_attach): the token table of a
 * vocabulary in one arena whose references are offsets, so that every
 * process mapping it (a shared memory segment) looks tokens up in place.
 *
 * The arena, every section 8-byte aligned from its start:
 *   head      magic, format, this build's sizes, the total, the map's
 *             sections (text/strmap_arena.h), and a CRC-32 of the head
 *   the map   slots, key offsets, lengths, hashes, keys (strmap_arena.h)
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/crc32.h"
#include "text/strmap_arena.h"
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
	cq_strmap_arena map;		/* the token table */
} varena_head;

/* The head of v's arena, with every offset and the total laid out. */
static varena_head
layout(const cq_vocabulary *v)
{
	varena_head h;

	memset(&h, 0, sizeof(h));
	h.magic = VARENA_MAGIC;
	h.format = VARENA_FORMAT;
	h.head_size = sizeof(varena_head);
	h.size_t_size = sizeof(size_t);
	h.total = cq_strmap_arena_layout(&v->map, sizeof(varena_head), &h.map);
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
	cq_strmap_arena_write(&v->map, &h.map, a);
	return CQ_OK;
}

cq_code
cq_vocabulary_attach(const void *base, size_t bytes, cq_vocabulary *v, cq_error *err)
{
	const unsigned char *a = base;
	varena_head h;

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
	return cq_strmap_arena_view(a, h.total, &h.map, "vocabulary", &v->map, err);
}
