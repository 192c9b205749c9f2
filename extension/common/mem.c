#include "common/mem.h"

#include <stdlib.h>
#include <string.h>

static void *
libc_realloc(void *ptr, size_t size)
{
	return realloc(ptr, size);
}

static const cq_allocator libc_allocator = {malloc, libc_realloc, free};
static cq_allocator current = {malloc, libc_realloc, free};

void
cq_set_allocator(const cq_allocator *a)
{
	current = a ? *a : libc_allocator;
}

void *
cq_alloc(size_t size)
{
	return current.alloc(size ? size : 1);
}

void *
cq_alloc0(size_t size)
{
	void	   *p = cq_alloc(size);

	if (p)
		memset(p, 0, size ? size : 1);
	return p;
}

void *
cq_realloc(void *ptr, size_t size)
{
	if (ptr == NULL)
		return cq_alloc(size);
	return current.realloc(ptr, size ? size : 1);
}

void
cq_free(void *ptr)
{
	if (ptr)
		current.release(ptr);
}

char *
cq_strndup(const char *s, size_t n)
{
	char	   *d = cq_alloc(n + 1);

	if (d)
	{
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}
