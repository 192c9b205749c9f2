/* The alignment core's progress hook (progress.h). */
#include "align/progress.h"
#include <stddef.h>


bool
cq_align_progress_stop(const cq_align_progress *p, int64_t done, int64_t total)
{
	if (p == NULL || p->fn == NULL)
		return false;
	if (done != total && (p->every <= 0 || done % p->every != 0))
		return false;
	return p->fn(p->arg, done, total);
}
