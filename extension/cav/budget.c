#include "cav/budget.h"

#include "common/mem.h"

cq_code
cav_budget_resize(cav_budget *b, void **p, size_t old_size, size_t new_size,
				  cq_error *err)
{
	size_t		after = b->bytes - old_size + new_size;
	void	   *q;

	if (b->limit && new_size > old_size && after > b->limit)
		return cq_fail(err, CQ_ELIMIT,
						"CAV state would need %zu bytes, above the limit of %zu",
						after, b->limit);
	q = cq_realloc(*p, new_size);
	if (q == NULL)
		return cq_fail(err, CQ_ENOMEM, "out of memory allocating %zu bytes",
						new_size);
	*p = q;
	b->bytes = after;
	if (after > b->peak)
		b->peak = after;
	return CQ_OK;
}

void
cav_budget_release(cav_budget *b, void *p, size_t size)
{
	if (p == NULL)
		return;
	cq_free(p);
	b->bytes -= size;
}
