/*
 * String interning for the CAV dictionaries: token bytes -> dense id in
 * order of first appearance.  Strings live in one arena (offsets, no
 * per-token allocation); an open-addressing table maps hashes to ids.
 */
#ifndef CQ_CAV_DICT_H
#define CQ_CAV_DICT_H

#include "cav/budget.h"

#include <stdbool.h>

#define CAV_NO_ID UINT32_MAX

typedef struct cav_dict
{
	uint32_t	n;
	uint32_t	cap_ids;		/* capacity of off[] (n+1 used) and hash[] */
	uint32_t	n_slots;		/* power of two, 0 before the first token */
	uint32_t   *slots;			/* id+1, 0 = empty */
	uint32_t   *hash;			/* [cap_ids] hash of each id, for rehashing */
	uint64_t   *off;			/* [cap_ids+1] string i = bytes[off[i] .. off[i+1]) */
	char	   *bytes;
	size_t		cap_bytes;
} cav_dict;

void		cav_dict_free(cav_dict *d, cav_budget *b);

/* Id of s, adding it when new (*added set accordingly, may be NULL). */
cq_code		cav_dict_intern(cav_dict *d, cav_budget *b, const char *s, size_t len,
							uint32_t *id, bool *added, cq_error *err);

/* Id of s or CAV_NO_ID. */
uint32_t	cav_dict_find(const cav_dict *d, const char *s, size_t len);

static inline const char *
cav_dict_str(const cav_dict *d, uint32_t id, size_t *len)
{
	*len = (size_t) (d->off[id + 1] - d->off[id]);
	return d->bytes + d->off[id];
}

/* Byte-order comparison of two strings (a shorter prefix sorts first). */
int			cav_bytes_cmp(const char *a, size_t alen, const char *b, size_t blen);

/*
 * rank[id] = position of string id in byte order (allocated with cq_alloc,
 * not accounted: a temporary of serialisation).  Returns NULL when out of
 * memory.  When order is not NULL it receives the inverse (ids by rank).
 */
uint32_t   *cav_dict_ranks(const cav_dict *d, uint32_t **order);

#endif
