/*
 * The core's host hooks: allocation bound to palloc in the current memory
 * context (the glue decides the lifetime by choosing the context before
 * calling the core, and an ERROR anywhere frees what the core held), and the
 * interrupt hook, so a cancel reaches a long core computation.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "common/interrupt.h"
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

/*
 * Polled by the core between row blocks, layers and search steps: a cancel,
 * statement_timeout or terminate raises its ERROR (or FATAL) here and
 * leaves the core by longjmp; everything the core held is palloc'd.
 */
static void
core_interrupt(void)
{
	CHECK_FOR_INTERRUPTS();
}

void
corpq_install_allocator(void)
{
	static const cq_allocator palloc_allocator = {pg_alloc, pg_realloc, pg_release};

	cq_set_allocator(&palloc_allocator);
	cq_set_interrupt_hook(core_interrupt);
}
