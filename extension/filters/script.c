/* AlphabetRatioFilter and CharacterScoreFilter, on ICU's character properties */
#include "filters/rules.h"

#include <unicode/uchar.h>
#include <unicode/uscript.h>

double
cq_alpha_ratio(const cq_utext *t, bool exclude_whitespace)
{
	size_t		total = 0,
				alpha = 0;

	for (size_t i = 0; i < t->n; i++)
	{
		int32_t		c = t->cp[i];

		if (exclude_whitespace && cq_uni_isspace(c))
			continue;
		total++;
		if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC))
			alpha++;
	}
	return total == 0 ? 1.0 : (double) alpha / (double) total;
}

double
cq_char_script_ratio(const cq_utext *t, int script)
{
	size_t		alpha = 0,
				in_script = 0;

	for (size_t i = 0; i < t->n; i++)
	{
		int32_t		c = t->cp[i];
		UErrorCode	status = U_ZERO_ERROR;

		if (!u_hasBinaryProperty(c, UCHAR_ALPHABETIC))
			continue;
		alpha++;
		if ((int) uscript_getScript(c, &status) == script)
			in_script++;
	}
	return alpha == 0 ? 1.0 : (double) in_script / (double) alpha;
}

int
cq_script_from_name(const char *name)
{
	int32_t		v = u_getPropertyValueEnum(UCHAR_SCRIPT, name);

	return v == UCHAR_INVALID_CODE ? -1 : (int) v;
}

int
cq_script_count(void)
{
	return u_getIntPropertyMaxValue(UCHAR_SCRIPT) + 1;
}

const char *
cq_script_name(int i)
{
	return u_getPropertyValueName(UCHAR_SCRIPT, i, U_LONG_PROPERTY_NAME);
}
