/*
 * Little-endian integers and float32 arrays in byte buffers: the byte order of
 * corpq's weight files (models/FORMAT.md, models/ANTAP.md) and of the CAV
 * layout (cav/FORMAT.md) on any host.
 */
#ifndef CQ_COMMON_LE_H
#define CQ_COMMON_LE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t
cq_le_get_u16(const unsigned char *p)
{
	return (uint16_t) (p[0] | p[1] << 8);
}

static inline uint32_t
cq_le_get_u32(const unsigned char *p)
{
	return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static inline uint64_t
cq_le_get_u64(const unsigned char *p)
{
	return (uint64_t) cq_le_get_u32(p) | (uint64_t) cq_le_get_u32(p + 4) << 32;
}

static inline void
cq_le_put_u16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char) v;
	p[1] = (unsigned char) (v >> 8);
}

static inline void
cq_le_put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char) (v >> (8 * i));
}

static inline void
cq_le_put_u64(unsigned char *p, uint64_t v)
{
	cq_le_put_u32(p, (uint32_t) v);
	cq_le_put_u32(p + 4, (uint32_t) (v >> 32));
}

/* n float32 values between host order and little-endian, either direction
 * (a plain copy on a little-endian host). */
static inline void
cq_le_copy_floats(void *dst, const void *src, size_t n)
{
	const unsigned char *s = src;
	unsigned char *d = dst;
	const uint32_t one = 1;

	if (*(const unsigned char *) &one == 1)
	{
		memcpy(dst, src, n * 4);
		return;
	}
	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < 4; b++)
			d[4 * i + b] = s[4 * i + 3 - b];
}

#endif
