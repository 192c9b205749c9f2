/*
 * The host's interrupt hook: how a long core computation lets its host
 * cancel it.
 *
 * The core calls cq_poll() at points where stopping is safe: between row
 * blocks of a matrix product, between layers, between search steps.  A host
 * installs a hook once (the extension's glue: CHECK_FOR_INTERRUPTS(), so a
 * cancel, statement_timeout or pg_terminate_backend takes effect within a
 * few milliseconds at any batch size).  The hook may not return: like the
 * allocation hooks (common/mem.h), which raise an ERROR inside a backend,
 * it may leave the core by longjmp.  The core therefore holds, at a poll
 * point, nothing but memory from cq_alloc (freed with the host's context)
 * and caller-owned buffers; it never polls inside a BLAS call, inside
 * another thread, or while a shared structure is half-updated.
 *
 * Without a hook, cq_poll() does nothing (the unit tests, other hosts).
 */
#ifndef CQ_INTERRUPT_H
#define CQ_INTERRUPT_H

typedef void (*cq_interrupt_hook) (void);

/* Install the hook (NULL: none). */
void		cq_set_interrupt_hook(cq_interrupt_hook hook);

/* Call the hook, if any. */
void		cq_poll(void);

#endif
