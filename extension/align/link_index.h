/*
 * Precomputed positions of every (e_i, f_j) pair of a bitext in a ttable, so
 * EM passes touch prob/count arrays directly instead of searching.  Pair k
 * holds m*(n+1) entries: for each target position j, the NULL row's entry
 * then source positions i = 0..n-1.  Optional: when the index would exceed
 * the caller's byte budget, idx stays NULL and callers fall back to search.
 */
#ifndef CQ_ALIGN_LINK_INDEX_H
#define CQ_ALIGN_LINK_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "align/ttable.h"

typedef struct cq_link_index
{
	int64_t    *off;			/* [n_pairs + 1] or NULL */
	uint32_t   *idx;			/* [off[n_pairs]] or NULL */
} cq_link_index;

/* Entries needed for the view (sum over pairs of m * (n + 1)). */
int64_t		cq_link_index_entries(const cq_bitext_view *v);

/* Scratch entries cq_link_index_pair needs for the largest pair (> m*(n+1)). */
int64_t		cq_link_index_max_pair(const cq_bitext_view *v);

/*
 * Builds the table, and the index with it when the index fits max_bytes
 * (else li stays empty and callers search).  Fails if the table reaches
 * 2^32 entries.
 */
cq_code		cq_ttable_build_indexed(cq_ttable *t, cq_link_index *li,
									const cq_bitext_view *v, size_t max_bytes,
									cq_error *err);

/*
 * The m*(n+1) table positions of pair k: a slice of the index when built,
 * else searched into scratch (cq_link_index_max_pair entries, 8-aligned).
 */
const uint32_t *cq_link_index_pair(const cq_link_index *li, const cq_ttable *t,
								   const cq_bitext_view *v, int64_t k,
								   uint32_t *scratch);

size_t		cq_link_index_bytes(const cq_link_index *li, int64_t n_pairs);

void		cq_link_index_free(cq_link_index *li);

#endif
