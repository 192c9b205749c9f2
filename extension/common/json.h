/*
 * A minimal JSON reader for flat configuration objects:
 *   { "key": number | "string" | true | false | null, ... }
 * Nested objects and arrays are rejected (configs have none); strings keep
 * their escapes decoded (\" \\ \/ \b \f \n \r \t; \uXXXX below 0x80 only).
 * Errors carry the byte offset.
 */
#ifndef CQ_JSON_H
#define CQ_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

typedef enum cq_json_type
{
	CQ_JSON_NULL,
	CQ_JSON_BOOL,
	CQ_JSON_NUMBER,
	CQ_JSON_STRING
} cq_json_type;

typedef struct cq_json_member
{
	char	   *key;
	cq_json_type type;
	bool		boolean;
	double		number;
	char	   *string;			/* CQ_JSON_STRING only */
} cq_json_member;

typedef struct cq_json_object
{
	int			n;
	cq_json_member *members;
} cq_json_object;

/*
 * Parse text[0..len) into *out (cq_json_free it).  CQ_EINVAL for text that
 * is not such an object, CQ_ENOMEM; the message starts "at byte N: ".
 */
cq_code		cq_json_parse_object(const char *text, size_t len,
								 cq_json_object *out, cq_error *err);
void		cq_json_free(cq_json_object *obj);

/* The member with this key, or NULL (the last one wins on duplicates). */
const cq_json_member *cq_json_get(const cq_json_object *obj, const char *key);

#endif
