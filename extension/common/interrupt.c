#include "common/interrupt.h"

#include <stddef.h>

#include "common/parallel.h"

static cq_interrupt_hook current_hook = NULL;

void
cq_set_interrupt_hook(cq_interrupt_hook hook)
{
	current_hook = hook;
}

/*
 * Never inside a part of a parallel call (common/parallel.h), on any thread:
 * the hook may longjmp, which on a worker would leave the host's stack, and on
 * the caller would free buffers the other parts still write.  The caller
 * polls between calls instead.
 */
void
cq_poll(void)
{
	if (current_hook && !cq_parallel_in_part())
		current_hook();
}
