/*
 * Byte accounting of one CAV state: every allocation the state keeps goes
 * through here, so cav_state_bytes() is exact and the caller's limit is
 * checked before the allocator is asked (an error code, never an OOM kill).
 */
#ifndef CQ_CAV_BUDGET_H
#define CQ_CAV_BUDGET_H

#include "cav/cav.h"

typedef struct cav_budget
{
	size_t		bytes;			/* held now */
	size_t		peak;
	size_t		limit;			/* 0: none */
} cav_budget;

/*
 * Resize *p from old_size to new_size bytes (new_size > 0).  On failure *p is
 * unchanged and still accounted.
 */
cq_code		cav_budget_resize(cav_budget *b, void **p, size_t old_size,
							  size_t new_size, cq_error *err);
void		cav_budget_release(cav_budget *b, void *p, size_t size);

#endif
