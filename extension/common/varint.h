/*
 * Unsigned LEB128 varints (7 bits a byte, the low group first, the high bit
 * set on every byte but the last): the integers of the CAV layout
 * (cav/FORMAT.md) and of protocol buffers (a SentencePiece model,
 * text/spm_check.h).
 */
#ifndef CQ_COMMON_VARINT_H
#define CQ_COMMON_VARINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes the varint of v takes (1..10). */
static inline size_t
cq_varint_size(uint64_t v)
{
	size_t		n = 1;

	while (v >= 0x80)
	{
		v >>= 7;
		n++;
	}
	return n;
}

/* Writes the varint of v at p (cq_varint_size(v) bytes); returns the end. */
static inline uint8_t *
cq_varint_put(uint8_t *p, uint64_t v)
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
 * Reads one varint from [*p, end) into *v and moves *p past it; false,
 * leaving *p, for bytes that are not one: truncated, above 2^64-1, or
 * overlong (a trailing zero group), so that each value has exactly one
 * encoding and a CAV stays canonical (protobuf writers never emit an
 * overlong one either).
 */
static inline bool
cq_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
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

#endif
