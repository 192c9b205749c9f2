/*
 * The character properties sacreBLEU's preprocessing relies on, each exactly
 * as the Python library sacreBLEU calls defines it (tables generated from
 * those libraries by gen_unicode_tables.py):
 *   cq_uc_isspace      str.split() / str.rstrip() separators (str.isspace)
 *   cq_uc_class        \p{P}, \p{S}, \p{N} of the regex module (intl tokenizer)
 *   cq_uc_lower_cps    str.lower(), with its final-sigma rule
 */
#ifndef CQ_METRICS_UNICODE_H
#define CQ_METRICS_UNICODE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/cptext.h"

#define CQ_UC_P		1			/* punctuation, \p{P} */
#define CQ_UC_S		2			/* symbol, \p{S} */
#define CQ_UC_N		4			/* number, \p{N} */

bool		cq_uc_isspace_table(uint32_t c);
uint32_t	cq_uc_class_table(uint32_t c);

/* ASCII (most of the text the metrics see) from a small table, the rest by
 * binary search in the generated ranges. */
extern const uint8_t cq_uc_ascii[128];	/* class bits, and 8 for space */

static inline bool
cq_uc_isspace(uint32_t c)
{
	return c < 128 ? (cq_uc_ascii[c] & 8) != 0 : cq_uc_isspace_table(c);
}

static inline uint32_t
cq_uc_class(uint32_t c)
{
	return c < 128 ? cq_uc_ascii[c] & 7u : cq_uc_class_table(c);
}
bool		cq_uc_cased(uint32_t c);
bool		cq_uc_case_ignorable(uint32_t c);

/* str.lower() of in[0..n) into out (replacing its contents). */
bool		cq_uc_lower_cps(cq_cpbuf *out, const uint32_t *in, size_t n);

/* Bitmask per code point lo..hi-1 (for the reference check): bit 0..2 the
 * class, 3 space, 4 cased, 5 case-ignorable; lower[2 * i ..] the mapping. */
void		cq_uc_dump(uint32_t lo, uint32_t hi, uint8_t *bits, uint32_t *lower);

#endif
