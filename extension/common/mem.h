/*
 * Allocation hooks for the PostgreSQL-free core.
 *
 * The core never calls malloc directly: a host (the extension's glue, or the
 * unit tests) installs its allocator once.  Inside a backend the hooks map to
 * palloc in the caller's current memory context, so an ERROR raised while the
 * core runs releases everything with the context, and no core allocation
 * outlives the query unless the glue chose a longer-lived context.
 */
#ifndef CQ_MEM_H
#define CQ_MEM_H

#include <stddef.h>

typedef struct cq_allocator
{
	void	   *(*alloc) (size_t size);		/* returns NULL on failure */
	void	   *(*realloc) (void *ptr, size_t size);
	void		(*release) (void *ptr);
} cq_allocator;

/* Replace the allocator; NULL restores the C library's. */
void		cq_set_allocator(const cq_allocator *a);

void	   *cq_alloc(size_t size);
void	   *cq_alloc0(size_t size);		/* zeroed */
void	   *cq_realloc(void *ptr, size_t size);
void		cq_free(void *ptr);
char	   *cq_strndup(const char *s, size_t n);

#endif
