/*
 * A UTF-8 string and its code points, decoded once for every rule filter
 * that looks at it.
 *
 * The filters follow OpusFilter, which works on Python str values: lengths
 * are counted in code points and each filter's character classes are those
 * of Python's str methods or of the `regex` module, as each filter's
 * comment says.  The text comes from PostgreSQL, which has checked that it
 * is valid UTF-8; an ill-formed sequence anyway decodes as common/utf8.h
 * says, to one U+FFFD per maximal subpart.
 */
#ifndef CQ_FILTERS_UTEXT_H
#define CQ_FILTERS_UTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cptext.h"
#include "common/error.h"

typedef struct cq_utext
{
	const char *s;				/* the UTF-8 bytes (not owned) */
	size_t		bytes;
	int32_t    *cp;				/* n code points (owned, cq_alloc) */
	size_t		n;
} cq_utext;

/*
 * Decode s[0..bytes) into t (t->cp allocated with cq_alloc; free it with
 * cq_utext_free).  CQ_ENOMEM or CQ_ELIMIT (more than INT32_MAX bytes).
 */
cq_code		cq_utext_init(cq_utext *t, const char *s, size_t bytes, cq_error *err);
void		cq_utext_free(cq_utext *t);

#endif
