/* Access to the sections of a CAV buffer, shared by the validator and readers. */
#ifndef CQ_CAV_VIEW_IMPL_H
#define CQ_CAV_VIEW_IMPL_H

#include "cav/budget.h"
#include "cav/cav_view.h"
#include "cav/format.h"
#include "common/le.h"

/* String i of the dictionary section at pos holding n strings. */
static inline const char *
cav_section_str(const uint8_t *buf, size_t pos, uint32_t n, uint32_t i, size_t *len)
{
	const uint8_t *off = buf + pos;
	uint32_t	a = cq_le_get_u32(off + (size_t) i * 4),
				b = cq_le_get_u32(off + (size_t) i * 4 + 4);

	*len = b - a;
	return (const char *) (off + ((size_t) n + 1) * 4 + a);
}

/* Index of s in a sorted dictionary section, or UINT32_MAX. */
uint32_t	cav_section_find(const uint8_t *buf, size_t pos, uint32_t n,
							 const char *s, size_t len);

static inline const uint8_t *
cav_view_rec(const cav_view *v, uint32_t idx)
{
	return v->buf + v->table + (size_t) idx * CAV_REC_SIZE;
}

#endif
