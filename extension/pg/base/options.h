/*
 * jsonb options, one table per SQL function: parse, validate, echo.
 *
 * A caller describes its options once, as an array of CorpqOption rows (one
 * per key: its type, the field of the caller's struct it fills, bounds,
 * default and what to say when the value is wrong), ended by a row whose key
 * is NULL.  The same rows then drive
 *   - the defaults (corpq_options_defaults),
 *   - parsing a jsonb object into the struct (corpq_options_parse): ERROR
 *     invalid_parameter_value for an unknown key (the hint lists the valid
 *     keys, generated from the table), for a value of the wrong type or out
 *     of bounds (naming the key and what was expected),
 *   - the resolved options as JSON (corpq_options_json), every number in the
 *     shortest form that reads back to the same double.
 * Checks that involve several keys (one option only with a given strategy,
 * defaults that depend on other keys) stay with the caller, after parsing.
 *
 * A row, written with designated initializers:
 *
 *   {.key = "p0", CORPQ_OPT_FIELD(LexOptions, p0), .type = CORPQ_OPT_NUMBER,
 *    .range = CORPQ_RANGE_OPEN_HI, .lo = 0, .hi = 1, .def = 0.08},
 *   {.key = "symmetrize", CORPQ_OPT_FIELD(LexOptions, symmetrize),
 *    .type = CORPQ_OPT_ENUM, .names = sym_names, .values = sym_values,
 *    .def = CQ_SYM_GROW_DIAG_FINAL_AND},
 *
 * The "Expected ..." text is generated from the type and the bounds ("an
 * integer from 1 to 1000", "a number in [0, 1)", "a positive number up to
 * 1000000", "true or false", "\"a\", \"b\" or \"c\"") unless the row gives
 * its own (.expected).
 */
#ifndef CORPQ_BASE_OPTIONS_H
#define CORPQ_BASE_OPTIONS_H

#include "postgres.h"

#include <math.h>

#include "lib/stringinfo.h"
#include "utils/jsonb.h"

typedef enum CorpqOptionType
{
	CORPQ_OPT_NUMBER,			/* double; a JSON number */
	CORPQ_OPT_INT,				/* int; a JSON number without a fraction */
	CORPQ_OPT_INT64,			/* int64; likewise */
	CORPQ_OPT_BOOL,				/* bool; true or false */
	CORPQ_OPT_STRING,			/* char *, palloc'd; a JSON string */
	CORPQ_OPT_ENUM				/* int (or a C enum); a JSON string, one of
								 * .names, stored as its .values entry */
} CorpqOptionType;

/* Bounds of a CORPQ_OPT_NUMBER (integers are always within [min, max]). */
typedef enum CorpqOptionRange
{
	CORPQ_RANGE_CLOSED,			/* lo <= x <= hi */
	CORPQ_RANGE_OPEN_LO,		/* lo < x <= hi */
	CORPQ_RANGE_OPEN_HI,		/* lo <= x < hi */
	CORPQ_RANGE_OPEN,			/* lo < x < hi */
	CORPQ_RANGE_POSITIVE		/* a normal positive double up to hi (DBL_MIN
								 * <= x <= hi): for values that are divided by
								 * or inverted, as a temperature tau, where a
								 * subnormal would overflow */
} CorpqOptionRange;

/* Row flags. */
#define CORPQ_OPT_UNSET		0x01	/* the default is "not given": the field
									 * holds the unset marker below; the
									 * caller resolves it after parsing, and
									 * the JSON leaves the key out while it is
									 * still unset */
#define CORPQ_OPT_ALIAS		0x02	/* another name for the field of an
									 * earlier row: parsed and listed, but
									 * neither defaulted nor echoed */

/*
 * The "not given" marker of a CORPQ_OPT_UNSET row's field, never a value the
 * parser can store there:
 *   NUMBER: NaN (a parsed number is always finite), so every finite range,
 *           -1 included, is free for the option's own values;
 *   INT, INT64, ENUM: CORPQ_OPT_UNSET_INT (-1); a row's bounds (an ENUM's
 *           values) must leave it out, which corpq_options_defaults checks;
 *   STRING: NULL.
 * Test a number field with CORPQ_OPT_IS_UNSET(field) (double, int or int64:
 * one test for all, so a double is never compared with the integer marker;
 * another type does not compile), a string with == NULL; set one with
 * CORPQ_OPT_UNSET_NUMBER or CORPQ_OPT_UNSET_INT.
 */
#define CORPQ_OPT_UNSET_INT		(-1)
#define CORPQ_OPT_UNSET_NUMBER	((double) NAN)

static inline bool
corpq_option_unset_number(double x)
{
	return isnan(x);
}

static inline bool
corpq_option_unset_int(int x)
{
	return x == CORPQ_OPT_UNSET_INT;
}

static inline bool
corpq_option_unset_int64(int64 x)
{
	return x == CORPQ_OPT_UNSET_INT;
}

#define CORPQ_OPT_IS_UNSET(x) \
	_Generic((x), \
			 double: corpq_option_unset_number, \
			 int: corpq_option_unset_int, \
			 int64: corpq_option_unset_int64) (x)

/* .offset and .size of a row, from the options struct and its field. */
#define CORPQ_OPT_FIELD(type, field) \
	.offset = offsetof(type, field), .size = sizeof(((type *) 0)->field)

typedef struct CorpqOption
{
	const char *key;			/* NULL ends the table */
	CorpqOptionType type;
	size_t		offset;			/* of the field in the options struct */
	size_t		size;			/* of the field; checked against the type */
	/* CORPQ_OPT_NUMBER */
	CorpqOptionRange range;
	double		lo;
	double		hi;
	/* CORPQ_OPT_INT, CORPQ_OPT_INT64 */
	int64		min;
	int64		max;
	/* default of a NUMBER, INT, INT64, BOOL (0 or 1) or ENUM (a value) */
	double		def;
	/* default of a STRING (NULL: none) */
	const char *def_string;
	/*
	 * CORPQ_OPT_ENUM: the accepted names, until a NULL one.  names_stride is
	 * the distance in bytes from one name to the next (0: an array of const
	 * char *), so a table of structs whose first member is the name can
	 * serve directly: .names = &table[0].name, .names_stride =
	 * sizeof(table[0]).  values[i] is stored for names[i] (NULL: i).
	 */
	const char *const *names;
	size_t		names_stride;
	const int  *values;
	/* what "Expected %s." says; NULL: generated from type and bounds */
	const char *expected;
	/* a further check of the parsed field (false: the "expected" ERROR) */
	bool		(*valid) (const void *field);
	/* the JSON has the key only when this says so (NULL: always) */
	bool		(*echo) (const void *options);
	int			flags;
} CorpqOption;

typedef struct CorpqOptionTable
{
	const char *what;			/* names the options in messages: "lexicon"
								 * gives "unknown lexicon option" */
	const CorpqOption *rows;
} CorpqOptionTable;

/* Fill every field of out with its row's default. */
void		corpq_options_defaults(const CorpqOptionTable *t, void *out);

/*
 * Defaults, then every key of options (NULL: none; otherwise it must be a
 * JSON object).  Strings are palloc'd in CurrentMemoryContext.
 */
void		corpq_options_parse(const CorpqOptionTable *t, Jsonb *options, void *out);

/* The same, from JSON text (as a job stores its resolved options). */
void		corpq_options_parse_text(const CorpqOptionTable *t, const char *json,
									 void *out);

/* The options in out as a JSON object, palloc'd; keys in table order. */
char	   *corpq_options_json(const CorpqOptionTable *t, const void *out);

/* "key1, key2, ...": the keys of the table, for hints. */
char	   *corpq_options_keys(const CorpqOptionTable *t);

/* The name of an ENUM row's value (NULL if none has it). */
const char *corpq_option_enum_name(const CorpqOption *row, int value);

/*
 * x in the shortest decimal form that reads back to the same double (null
 * when not finite): the one number format of corpq's JSON.
 */
void		corpq_json_number(StringInfo b, double x);

/* The same as a palloc'd string, for JSON assembled with format strings. */
char	   *corpq_json_number_text(double x);

/* A .valid check for strings: not empty. */
bool		corpq_option_nonempty(const void *field);

#endif
