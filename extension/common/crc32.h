/*
 * CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, as zlib's crc32()),
 * the checksum of corpq weight files.  The same function as Python's
 * zlib.crc32, so the reference writer needs no code of its own.
 */
#ifndef CQ_CRC32_H
#define CQ_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Continue a running CRC (start with 0) over len bytes. */
uint32_t	cq_crc32(uint32_t crc, const void *data, size_t len);

/*
 * The CRC-32 of A followed by B from crc_a = cq_crc32(0, A), crc_b =
 * cq_crc32(0, B) and B's length, without B's bytes: so pieces of a stream
 * that arrive out of order (blocks of an image written as they fill) can be
 * checksummed each on its own and joined in order.
 */
uint32_t	cq_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

#endif
