/*
 * Byte-level helpers of the CAV binary layout: explicit little-endian
 * integers (the layout must not depend on the host), LEB128 varints with
 * bounds checks, and UTF-8 validation.  Loads go through memcpy because a
 * varlena payload need not be aligned.
 */
#ifndef CQ_CAV_CODEC_H
#define CQ_CAV_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline void
cav_put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t) v;
	p[1] = (uint8_t) (v >> 8);
}

static inline void
cav_put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static inline void
cav_put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static inline uint16_t
cav_get_u16(const uint8_t *p)
{
	return (uint16_t) (p[0] | (p[1] << 8));
}

static inline uint32_t
cav_get_u32(const uint8_t *p)
{
	return (uint32_t) p[0] | (uint32_t) p[1] << 8 |
		(uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static inline uint64_t
cav_get_u64(const uint8_t *p)
{
	return (uint64_t) cav_get_u32(p) | (uint64_t) cav_get_u32(p + 4) << 32;
}

/* Bytes a varint of v takes (1..10). */
static inline size_t
cav_varint_size(uint64_t v)
{
	size_t		n = 1;

	while (v >= 0x80)
	{
		v >>= 7;
		n++;
	}
	return n;
}

static inline uint8_t *
cav_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80)
	{
		*p++ = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t) v;
	return p;
}

/*
 * Decode one varint from [*p, end).  Rejects truncation, values above 2^64-1
 * and overlong forms (a trailing zero group), so each value has exactly one
 * encoding -- the layout stays canonical.
 */
static inline bool
cav_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *q = *p;
	uint64_t	r = 0;

	for (int shift = 0; shift < 64; shift += 7)
	{
		uint8_t		b;

		if (q >= end)
			return false;
		b = *q++;
		if (shift == 63 && b > 1)
			return false;
		r |= (uint64_t) (b & 0x7f) << shift;
		if (!(b & 0x80))
		{
			if (b == 0 && shift > 0)
				return false;
			*p = q;
			*v = r;
			return true;
		}
	}
	return false;
}

/* Well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF), no NUL. */
bool		cav_utf8_valid(const uint8_t *s, size_t len);

#endif
