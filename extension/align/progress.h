/*
 * The progress hook of the word-alignment core: an EM pass reports every
 * `every` sentence pairs and once at its end, and the hook may stop it.
 * Failures are common/error.h's (a stopped pass returns CQ_STOPPED, the
 * model keeping its previous parameters).
 */
#ifndef CQ_ALIGN_PROGRESS_H
#define CQ_ALIGN_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

/* Returning true abandons the pass (the model keeps its previous parameters). */
typedef bool (*cq_align_progress_fn) (void *arg, int64_t pairs_done,
									  int64_t pairs_total);

typedef struct cq_align_progress
{
	cq_align_progress_fn fn;	/* NULL: no reporting */
	void	   *arg;
	int64_t		every;			/* <= 0: only at the end of the pass */
} cq_align_progress;

/* Internal: true when the hook asks to stop at pair `done`. */
bool		cq_align_progress_stop(const cq_align_progress *p, int64_t done,
								   int64_t total);

#endif
