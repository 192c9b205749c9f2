/* LengthRatioFilter */
#include "filters/rules.h"

#include <math.h>

size_t
cq_text_length(const cq_utext *t, cq_length_unit unit)
{
	size_t		words = 0;
	bool		in_word = false;

	if (unit == CQ_UNIT_CHAR)
		return t->n;
	for (size_t i = 0; i < t->n; i++)
	{
		bool		space = cq_py_isspace(t->cp[i]);

		if (!space && !in_word)
			words++;
		in_word = !space;
	}
	return words;
}

double
cq_length_ratio(const cq_utext *a, const cq_utext *b, cq_length_unit unit)
{
	size_t		la = cq_text_length(a, unit),
				lb = cq_text_length(b, unit);
	size_t		lo = la < lb ? la : lb,
				hi = la < lb ? lb : la;

	if (lo == 0)
		return hi == 0 ? 0.0 : INFINITY;
	return (double) hi / (double) lo;
}
