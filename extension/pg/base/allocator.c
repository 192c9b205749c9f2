/*
 * The core's allocation hooks, bound to palloc in the current memory context:
 * the glue decides the lifetime by choosing the context before calling the
 * core, and an ERROR anywhere frees what the core held.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "common/mem.h"
#include "pg/base/base.h"

static void *
pg_alloc(size_t size)
{
	return palloc_extended(size, MCXT_ALLOC_HUGE);
}

static void *
pg_realloc(void *ptr, size_t size)
{
	return repalloc_huge(ptr, size);
}

static void
pg_release(void *ptr)
{
	pfree(ptr);
}

void
corpq_install_allocator(void)
{
	static const cq_allocator palloc_allocator = {pg_alloc, pg_realloc, pg_release};

	cq_set_allocator(&palloc_allocator);
}
