/*
 * An open-addressing hash map from byte strings to dense entry indices.
 *
 * Entries are numbered 0, 1, ... in insertion order, so a map doubles as an
 * interning table (symbol id = entry index) and as a counter (vals[i]).
 * Keys are copied into one arena and kept NUL-terminated; a pointer returned
 * by cq_strmap_key() is valid only until the next insertion.
 */
#ifndef CQ_STRMAP_H
#define CQ_STRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef struct cq_strmap
{
	uint32_t   *slots;			/* [cap] entry index + 1, 0 = empty */
	size_t		cap;			/* power of two */
	size_t		n;				/* entries */
	size_t		n_cap;
	size_t	   *key_off;		/* [n] offset of the key in arena */
	uint32_t   *key_len;		/* [n] */
	uint64_t   *hash;			/* [n] */
	int64_t    *vals;			/* [n] the caller's value per entry */
	char	   *arena;
	size_t		arena_len;
	size_t		arena_cap;
} cq_strmap;

/* An empty map with room for about expected keys; CQ_ENOMEM. */
cq_code		cq_strmap_init(cq_strmap *m, size_t expected);
void		cq_strmap_free(cq_strmap *m);

/* Entry index of the key, or -1. */
int64_t		cq_strmap_find(const cq_strmap *m, const char *key, size_t len);

/*
 * *index = the key's entry index, the key inserted (with vals 0) if absent;
 * *inserted (may be NULL) says which.  CQ_ENOMEM, or CQ_ELIMIT for a key
 * of 4 GB or the 2^32-1th entry.
 */
cq_code		cq_strmap_intern(cq_strmap *m, const char *key, size_t len,
							 int64_t *index, int *inserted);

static inline const char *
cq_strmap_key(const cq_strmap *m, size_t i, size_t *len)
{
	if (len)
		*len = m->key_len[i];
	return m->arena + m->key_off[i];
}

#endif
