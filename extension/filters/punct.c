/* TerminalPunctuationFilter */
#include "filters/rules.h"

#include <math.h>

static size_t
terminal_marks(const cq_utext *t)
{
	size_t		n = 0;

	for (size_t i = 0; i < t->n; i++)
	{
		int32_t		c = t->cp[i];

		n += (c == '.' || c == '?' || c == '!' || c == 0x2026);
	}
	return n;
}

double
cq_terminal_punct_score(const cq_utext *a, const cq_utext *b)
{
	size_t		s = terminal_marks(a),
				t = terminal_marks(b);
	double		penalty = (double) (s > t ? s - t : t - s);

	if (s > 1)
		penalty += (double) (s - 1);
	if (t > 1)
		penalty += (double) (t - 1);
	/* OpusFilter's -log(penalty + 1), with 0 rather than -0 at the best */
	return penalty == 0 ? 0.0 : -log(penalty + 1);
}
