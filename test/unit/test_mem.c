#include "unit.h"
#include "common/mem.h"

#include <stdlib.h>

static int	allocs;

static void *
counting_alloc(size_t n)
{
	allocs++;
	return malloc(n);
}

static void *
counting_realloc(void *p, size_t n)
{
	return realloc(p, n);
}

static void
counting_free(void *p)
{
	allocs--;
	free(p);
}

TEST(allocator_hooks_route_every_call)
{
	cq_allocator a = {counting_alloc, counting_realloc, counting_free};
	char	   *s;
	int		   *z;

	cq_set_allocator(&a);
	s = cq_strndup("hello world", 5);
	z = cq_alloc0(4 * sizeof(int));
	CHECK_STR_EQ(s, "hello");
	CHECK(z[0] == 0 && z[3] == 0);
	z = cq_realloc(z, 64 * sizeof(int));
	CHECK_INT_EQ(allocs, 2);
	cq_free(s);
	cq_free(z);
	cq_free(NULL);
	CHECK_INT_EQ(allocs, 0);
	cq_set_allocator(NULL);
}
