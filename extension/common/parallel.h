/*
 * A small persistent thread pool for the core's row-independent kernels.
 *
 * Decoding and scoring multiply one batch at a time with nn/ops/rowgemm.c,
 * whose products are milliseconds long: a thread started per call would cost
 * as much as it saves, and OpenBLAS's pool does not run our kernels.  So a
 * process that asks for more than one thread (a background job, or a session
 * that raised corpq.threads) gets workers that start on first use and then
 * sleep between calls.
 *
 * The contract a caller keeps: a part touches only the buffers it is given
 * (no cq_alloc, no cq_poll, no error hook: those may longjmp or belong to the
 * host's one thread), and parts of one call write disjoint memory.  The pool
 * then only changes which core computes an element, never its arithmetic, so
 * a kernel whose elements are independent gives the same bits on any number
 * of threads.  Workers run with every signal blocked: the host's handlers
 * stay on its own thread.
 */
#ifndef CQ_PARALLEL_H
#define CQ_PARALLEL_H

#include <stdbool.h>

/* One part of a call: part in [0, nparts). */
typedef void (*cq_parallel_fn) (void *arg, int part, int nparts);

/* Threads this process may use (1: none but the caller's; clamped to 1..256). */
void		cq_parallel_set_threads(int n);
int			cq_parallel_threads(void);

/*
 * Run fn(arg, part, nparts) once for every part, spread over the caller and
 * the workers (all on the caller when no worker could start, when threads
 * are 1, or when called from inside a part); returns when every part is done.
 */
void		cq_parallel_run(cq_parallel_fn fn, void *arg, int nparts);

/* Whether this thread is running a part (cq_poll does nothing then). */
bool		cq_parallel_in_part(void);

#endif
