/*
 * Growable arrays of Unicode code points (and of 32-bit items in general):
 * the metrics work on code points, as sacreBLEU works on Python str, so that
 * "a character" means the same thing in both.
 */
#ifndef CQ_METRICS_CPBUF_H
#define CQ_METRICS_CPBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cq_cpbuf
{
	uint32_t   *v;
	size_t		n,
				cap;
} cq_cpbuf;

void		cq_cpbuf_free(cq_cpbuf *b);

/* Room for at least n items in total; false when out of memory. */
bool		cq_cpbuf_reserve(cq_cpbuf *b, size_t n);

/* Append one item; the caller reserved room. */
static inline void
cq_cpbuf_put(cq_cpbuf *b, uint32_t c)
{
	b->v[b->n++] = c;
}

/*
 * Decode UTF-8 into b (replacing its contents).  Each byte of an invalid or
 * truncated sequence becomes U+FFFD, so any input decodes.
 */
bool		cq_cpbuf_from_utf8(cq_cpbuf *b, const char *s, size_t len);

/* Encode v[0..n) as UTF-8 into a new NUL-ended string (cq_alloc); NULL on OOM. */
char	   *cq_utf8_from_cps(const uint32_t *v, size_t n, size_t *len_out);

#endif
