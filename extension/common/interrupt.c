#include "common/interrupt.h"

#include <stddef.h>

static cq_interrupt_hook current_hook = NULL;

void
cq_set_interrupt_hook(cq_interrupt_hook hook)
{
	current_hook = hook;
}

void
cq_poll(void)
{
	if (current_hook)
		current_hook();
}
