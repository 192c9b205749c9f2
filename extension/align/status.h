/*
 * Return codes, error messages and the progress hook shared by the
 * word-alignment core.  Nothing here prints or exits: a failing call fills a
 * caller-owned cq_align_error and returns its code.
 */
#ifndef CQ_ALIGN_STATUS_H
#define CQ_ALIGN_STATUS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

typedef enum cq_align_code
{
	CQ_ALIGN_OK = 0,
	CQ_ALIGN_STOPPED = 1,		/* progress hook asked to stop; model unchanged */
	CQ_ALIGN_EINVAL = -1,		/* bad argument or malformed corpus */
	CQ_ALIGN_ENOMEM = -2,		/* allocator returned NULL */
	CQ_ALIGN_ECORRUPT = -3,		/* serialised lexicon fails validation */
} cq_align_code;

typedef struct cq_align_error
{
	int			code;
	char		msg[240];
} cq_align_error;

/* The category of common/error.h a code belongs to. */
cq_code		cq_align_category(int code);

/* Record code and message (printf-style) in err (may be NULL); returns code. */
int			cq_align_fail(cq_align_error *err, int code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/*
 * Called every `every` sentence pairs inside an EM pass and once at its end;
 * returning true abandons the pass (the model keeps its previous parameters).
 */
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
