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

/*
 * A work-space budget for one core call (corpq_core_budget_begin): the bytes
 * the core may still allocate; growth past it raises an ERROR naming the
 * setting, before the memory is taken.  Off (budget_what NULL) otherwise.
 */
static Size budget_left;
static const char *budget_what;
static const char *budget_setting;
static int	budget_mb;

static void
charge(Size more)
{
	const char *what = budget_what;

	if (what == NULL)
		return;
	if (more <= budget_left)
	{
		budget_left -= more;
		return;
	}
	budget_what = NULL;
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("%s needs more than %s (%d MB) of work space", what, budget_setting, budget_mb),
			 errhint("Use a shorter text, or ask a superuser to raise %s.", budget_setting)));
}

static void *
pg_alloc(size_t size)
{
	charge(size);
	return palloc_extended(size, MCXT_ALLOC_HUGE);
}

static void *
pg_realloc(void *ptr, size_t size)
{
	Size		had = GetMemoryChunkSpace(ptr);

	if (size > had)
		charge(size - had);
	return repalloc_huge(ptr, size);
}

void
corpq_core_budget_begin(int mb, const char *setting, const char *what)
{
	budget_left = (Size) mb * 1024 * 1024;
	budget_mb = mb;
	budget_setting = setting;
	budget_what = what;
}

void
corpq_core_budget_end(void)
{
	budget_what = NULL;
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
