/*
 * A string map (text/strmap.h) as sections of a relocatable arena: the
 * slot table, key offsets, lengths, hashes and the keys' bytes, each 8-byte
 * aligned, referenced by offsets from the arena's start, so that every
 * process mapping the arena (a shared memory segment) looks keys up in
 * place.  The arenas that hold a map (text/vocab_arena.c: a vocabulary's
 * token table; text/wordpiece_arena.c: a WordPiece segmenter) keep the
 * descriptor in their head, under their head's checksum.
 *
 * The slot table is copied as it is, so every lookup probes the same slots
 * as in the flattened map and finds the same entry: the same indices.
 */
#ifndef CQ_TEXT_STRMAP_ARENA_H
#define CQ_TEXT_STRMAP_ARENA_H

#include <stdint.h>

#include "common/error.h"
#include "text/strmap.h"

typedef struct cq_strmap_arena
{
	uint64_t	n;				/* entries */
	uint64_t	cap;			/* slots, a power of two above n */
	uint64_t	keys_len;		/* bytes of keys, NULs included */
	uint64_t	slots_off,		/* cap uint32: entry + 1, 0 empty */
				offs_off,		/* n uint64: each key's offset in keys */
				lens_off,		/* n uint32: each key's length */
				hashes_off,		/* n uint64: each key's hash */
				keys_off;		/* the keys' bytes, each followed by a NUL */
} cq_strmap_arena;

static inline uint64_t
cq_arena_up8(uint64_t n)
{
	return (n + 7) / 8 * 8;
}

/* Whether section [off, off + len) lies inside an arena of total bytes, 8-byte aligned. */
static inline int
cq_arena_section_ok(uint64_t off, uint64_t len, uint64_t total)
{
	return off % 8 == 0 && off <= total && len <= total - off;
}

/*
 * *s = m's sections laid out from offset at (8-byte aligned); returns the
 * offset after them (8-byte aligned).
 */
uint64_t	cq_strmap_arena_layout(const cq_strmap *m, uint64_t at, cq_strmap_arena *s);

/* m's sections written into the arena at base, as s lays them out. */
void		cq_strmap_arena_write(const cq_strmap *m, const cq_strmap_arena *s, unsigned char *base);

/*
 * *m made to read s's sections of the arena at base (total bytes) in place,
 * after checking them: sections inside the arena, a power-of-two slot table
 * with an empty slot, every slot naming an entry or none, as many filled
 * slots as entries, every key inside the keys and NUL-terminated.
 * CQ_EINVAL otherwise, the message naming what ("a <what> arena's ...").
 * The map is read-only (n_cap, arena_cap 0, vals NULL): never insert into
 * it or free it.
 */
cq_code		cq_strmap_arena_view(const unsigned char *base, uint64_t total,
								 const cq_strmap_arena *s, const char *what, cq_strmap *m,
								 cq_error *err);

#endif
