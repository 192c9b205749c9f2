/*
 * The table-driven jsonb option parser (see options.h).
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "common/shortest_dec.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/numeric.h"

#include "pg/base/options.h"

/* ---- rows ---- */

static void *
field_of(const CorpqOption *row, const void *out)
{
	return (char *) out + row->offset;
}

static bool enum_has_value(const CorpqOption *row, int value);

/* The field's size must match the type (a wrong row would scribble). */
static void
check_row(const CorpqOption *row)
{
	size_t		size = 0;

	switch (row->type)
	{
		case CORPQ_OPT_NUMBER:
			size = sizeof(double);
			break;
		case CORPQ_OPT_INT:
		case CORPQ_OPT_ENUM:
			size = sizeof(int);
			break;
		case CORPQ_OPT_INT64:
			size = sizeof(int64);
			break;
		case CORPQ_OPT_BOOL:
			size = sizeof(bool);
			break;
		case CORPQ_OPT_STRING:
			size = sizeof(char *);
			break;
	}
	if (row->size != size)
		elog(ERROR, "option \"%s\": field of %zu bytes for a value of %zu",
			 row->key, row->size, size);
	/* an unset integer's marker may not be one of its values */
	if ((row->flags & CORPQ_OPT_UNSET) &&
		(((row->type == CORPQ_OPT_INT || row->type == CORPQ_OPT_INT64) &&
		  row->min <= CORPQ_OPT_UNSET_INT && row->max >= CORPQ_OPT_UNSET_INT) ||
		 (row->type == CORPQ_OPT_ENUM && enum_has_value(row, CORPQ_OPT_UNSET_INT))))
		elog(ERROR, "option \"%s\": its values include the unset marker %d",
			 row->key, CORPQ_OPT_UNSET_INT);
}

/* ENUM name i, or NULL past the end. */
static const char *
enum_name_at(const CorpqOption *row, int i)
{
	size_t		stride = row->names_stride ? row->names_stride : sizeof(const char *);

	return *(const char *const *) ((const char *) row->names + (size_t) i * stride);
}

static int
enum_value_at(const CorpqOption *row, int i)
{
	return row->values ? row->values[i] : i;
}

static bool
enum_has_value(const CorpqOption *row, int value)
{
	for (int i = 0; enum_name_at(row, i) != NULL; i++)
		if (enum_value_at(row, i) == value)
			return true;
	return false;
}

const char *
corpq_option_enum_name(const CorpqOption *row, int value)
{
	for (int i = 0; enum_name_at(row, i) != NULL; i++)
		if (enum_value_at(row, i) == value)
			return enum_name_at(row, i);
	return NULL;
}

static const CorpqOption *
find_row(const CorpqOptionTable *t, const char *key)
{
	for (const CorpqOption *row = t->rows; row->key; row++)
		if (strcmp(row->key, key) == 0)
			return row;
	return NULL;
}

char *
corpq_options_keys(const CorpqOptionTable *t)
{
	StringInfoData b;

	initStringInfo(&b);
	for (const CorpqOption *row = t->rows; row->key; row++)
		appendStringInfo(&b, "%s%s", row == t->rows ? "" : ", ", row->key);
	return b.data;
}

/* ---- numbers ---- */

void
corpq_json_number(StringInfo b, double x)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN];

	if (!isfinite(x))
	{
		appendStringInfoString(b, "null");
		return;
	}
	/* Ryu: the fewest digits that parse back to exactly x */
	double_to_shortest_decimal_buf(x, buf);
	appendStringInfoString(b, buf);
}

char *
corpq_json_number_text(double x)
{
	StringInfoData b;

	initStringInfo(&b);
	corpq_json_number(&b, x);
	return b.data;
}

/* ---- what a row expects ---- */

static char *
expected_text(const CorpqOption *row)
{
	StringInfoData b;

	if (row->expected)
		return pstrdup(row->expected);
	initStringInfo(&b);
	switch (row->type)
	{
		case CORPQ_OPT_NUMBER:
			if (row->range == CORPQ_RANGE_POSITIVE)
				appendStringInfo(&b, "a positive number up to %s", corpq_json_number_text(row->hi));
			else
				appendStringInfo(&b, "a number in %c%s, %s%c",
								 row->range == CORPQ_RANGE_OPEN_LO || row->range == CORPQ_RANGE_OPEN ? '(' : '[',
								 corpq_json_number_text(row->lo), corpq_json_number_text(row->hi),
								 row->range == CORPQ_RANGE_OPEN_HI || row->range == CORPQ_RANGE_OPEN ? ')' : ']');
			break;
		case CORPQ_OPT_INT:
		case CORPQ_OPT_INT64:
			appendStringInfo(&b, "an integer from " INT64_FORMAT " to " INT64_FORMAT,
							 row->min, row->max);
			break;
		case CORPQ_OPT_BOOL:
			appendStringInfoString(&b, "true or false");
			break;
		case CORPQ_OPT_STRING:
			appendStringInfoString(&b, "a string");
			break;
		case CORPQ_OPT_ENUM:
			for (int i = 0; enum_name_at(row, i) != NULL; i++)
			{
				if (i > 0)
					appendStringInfoString(&b, enum_name_at(row, i + 1) ? ", " : " or ");
				appendStringInfo(&b, "\"%s\"", enum_name_at(row, i));
			}
			break;
	}
	return b.data;
}

static void
bad_value(const CorpqOptionTable *t, const CorpqOption *row)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for %s option \"%s\"", t->what, row->key),
			 errdetail("Expected %s.", expected_text(row))));
}

/* ---- parsing one value ---- */

static bool
in_range(const CorpqOption *row, double d)
{
	if (!isfinite(d))
		return false;
	switch (row->range)
	{
		case CORPQ_RANGE_CLOSED:
			return d >= row->lo && d <= row->hi;
		case CORPQ_RANGE_OPEN_LO:
			return d > row->lo && d <= row->hi;
		case CORPQ_RANGE_OPEN_HI:
			return d >= row->lo && d < row->hi;
		case CORPQ_RANGE_OPEN:
			return d > row->lo && d < row->hi;
		case CORPQ_RANGE_POSITIVE:
			return d >= DBL_MIN && d <= row->hi;
	}
	return false;
}

static double
numeric_double(Numeric n)
{
	/* +-Inf instead of an ERROR for numbers beyond a double */
	return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
											  NumericGetDatum(n)));
}

/* An integral numeric within [min, max], exactly (no rounding through double). */
static bool
numeric_integer(Numeric n, int64 min, int64 max, int64 *out)
{
	double		d = numeric_double(n);
	Datum		back;
	int64		i;

	/* far outside: numeric_int8 below would raise its own overflow ERROR */
	if (!isfinite(d) || d < (double) min - 1 || d > (double) max + 1 ||
		fabs(d) >= 9.2e18)
		return false;
	i = DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(n)));
	back = DirectFunctionCall1(int8_numeric, Int64GetDatum(i));
	if (!DatumGetBool(DirectFunctionCall2(numeric_eq, NumericGetDatum(n), back)))
		return false;			/* it had a fraction */
	*out = i;
	return i >= min && i <= max;
}

/* Store v in the row's field; false when v does not fit the row. */
static bool
set_value(const CorpqOption *row, const JsonbValue *v, void *field)
{
	int64		i;

	switch (row->type)
	{
		case CORPQ_OPT_NUMBER:
			if (v->type != jbvNumeric || !in_range(row, numeric_double(v->val.numeric)))
				return false;
			*(double *) field = numeric_double(v->val.numeric);
			return true;
		case CORPQ_OPT_INT:
		case CORPQ_OPT_INT64:
			if (v->type != jbvNumeric || !numeric_integer(v->val.numeric, row->min, row->max, &i))
				return false;
			if (row->type == CORPQ_OPT_INT)
				*(int *) field = (int) i;
			else
				*(int64 *) field = i;
			return true;
		case CORPQ_OPT_BOOL:
			if (v->type != jbvBool)
				return false;
			*(bool *) field = v->val.boolean;
			return true;
		case CORPQ_OPT_STRING:
			if (v->type != jbvString)
				return false;
			*(char **) field = pnstrdup(v->val.string.val, v->val.string.len);
			return true;
		case CORPQ_OPT_ENUM:
			if (v->type != jbvString)
				return false;
			for (int k = 0; enum_name_at(row, k) != NULL; k++)
			{
				const char *name = enum_name_at(row, k);

				if (strlen(name) == (size_t) v->val.string.len &&
					memcmp(name, v->val.string.val, v->val.string.len) == 0)
				{
					*(int *) field = enum_value_at(row, k);
					return true;
				}
			}
			return false;
	}
	return false;
}

/* ---- the table ---- */

void
corpq_options_defaults(const CorpqOptionTable *t, void *out)
{
	for (const CorpqOption *row = t->rows; row->key; row++)
	{
		void	   *field = field_of(row, out);
		bool		unset = (row->flags & CORPQ_OPT_UNSET) != 0;
		double		def = unset ? CORPQ_OPT_UNSET_INT : row->def;

		check_row(row);
		if (row->flags & CORPQ_OPT_ALIAS)
			continue;
		switch (row->type)
		{
			case CORPQ_OPT_NUMBER:
				*(double *) field = unset ? CORPQ_OPT_UNSET_NUMBER : def;
				break;
			case CORPQ_OPT_INT:
			case CORPQ_OPT_ENUM:
				*(int *) field = (int) def;
				break;
			case CORPQ_OPT_INT64:
				*(int64 *) field = (int64) def;
				break;
			case CORPQ_OPT_BOOL:
				Assert(!unset);
				*(bool *) field = def != 0;
				break;
			case CORPQ_OPT_STRING:
				*(char **) field = !unset && row->def_string ? pstrdup(row->def_string) : NULL;
				break;
		}
	}
}

void
corpq_options_parse(const CorpqOptionTable *t, Jsonb *options, void *out)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	const CorpqOption *row = NULL;

	corpq_options_defaults(t, out);
	if (options == NULL)
		return;
	if (!JB_ROOT_IS_OBJECT(options) || JB_ROOT_IS_SCALAR(options))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s options must be a JSON object", t->what),
				 errhint("Valid options are: %s.", corpq_options_keys(t))));
	it = JsonbIteratorInit(&options->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			char	   *key = pnstrdup(v.val.string.val, v.val.string.len);

			row = find_row(t, key);
			if (row == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("unknown %s option \"%s\"", t->what, key),
						 errhint("Valid options are: %s.", corpq_options_keys(t))));
		}
		else if (tok == WJB_VALUE)
		{
			void	   *field = field_of(row, out);

			if (!set_value(row, &v, field) || (row->valid && !row->valid(field)))
				bad_value(t, row);
		}
	}
}

void
corpq_options_parse_text(const CorpqOptionTable *t, const char *json, void *out)
{
	corpq_options_parse(t, DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(json))),
						out);
}

/* The field still holds its "not given" marker. */
static bool
is_unset(const CorpqOption *row, const void *field)
{
	if (!(row->flags & CORPQ_OPT_UNSET))
		return false;
	switch (row->type)
	{
		case CORPQ_OPT_NUMBER:
			return CORPQ_OPT_IS_UNSET(*(const double *) field);
		case CORPQ_OPT_INT:
		case CORPQ_OPT_ENUM:
			return CORPQ_OPT_IS_UNSET(*(const int *) field);
		case CORPQ_OPT_INT64:
			return CORPQ_OPT_IS_UNSET(*(const int64 *) field);
		case CORPQ_OPT_STRING:
			return *(char *const *) field == NULL;
		case CORPQ_OPT_BOOL:
			break;
	}
	return false;
}

static void
append_value(StringInfo b, const CorpqOption *row, const void *field)
{
	const char *s;

	switch (row->type)
	{
		case CORPQ_OPT_NUMBER:
			corpq_json_number(b, *(const double *) field);
			break;
		case CORPQ_OPT_INT:
			appendStringInfo(b, "%d", *(const int *) field);
			break;
		case CORPQ_OPT_INT64:
			appendStringInfo(b, INT64_FORMAT, *(const int64 *) field);
			break;
		case CORPQ_OPT_BOOL:
			appendStringInfoString(b, *(const bool *) field ? "true" : "false");
			break;
		case CORPQ_OPT_STRING:
			s = *(char *const *) field;
			if (s)
				escape_json(b, s);
			else
				appendStringInfoString(b, "null");
			break;
		case CORPQ_OPT_ENUM:
			s = corpq_option_enum_name(row, *(const int *) field);
			if (s == NULL)
				elog(ERROR, "option \"%s\" holds %d, which has no name",
					 row->key, *(const int *) field);
			escape_json(b, s);
			break;
	}
}

char *
corpq_options_json(const CorpqOptionTable *t, const void *out)
{
	StringInfoData b;
	bool		first = true;

	initStringInfo(&b);
	appendStringInfoChar(&b, '{');
	for (const CorpqOption *row = t->rows; row->key; row++)
	{
		const void *field = field_of(row, out);

		check_row(row);
		if ((row->flags & CORPQ_OPT_ALIAS) || is_unset(row, field) ||
			(row->echo && !row->echo(out)))
			continue;
		if (!first)
			appendStringInfoString(&b, ", ");
		first = false;
		escape_json(&b, row->key);
		appendStringInfoString(&b, ": ");
		append_value(&b, row, field);
	}
	appendStringInfoChar(&b, '}');
	return b.data;
}

bool
corpq_option_nonempty(const void *field)
{
	const char *s = *(char *const *) field;

	return s != NULL && s[0] != '\0';
}
