/*
 * RepetitionFilter: the first match of (\S.{min-1,max}?)(?: *\1){threshold,}
 * as the `regex` module finds it, without a regex engine.
 *
 * The engine tries start positions left to right; at each, group 1 lengths
 * from min to max + 1 code points (lazy); for each length it takes as many
 * "spaces, then the group again" repetitions as it can (greedy: fewer
 * spaces never help, since the group starts with a non-space).  The first
 * (position, length) with at least threshold repetitions is the match.
 * `.` is anything but '\n', `\S` anything but White_Space, and the spaces
 * are U+0020 only.  The score is then Python's full.count(repeated) - 1.
 */
#include "filters/rules.h"

#include <string.h>

static bool
same(const int32_t *x, const int32_t *y, size_t len)
{
	return memcmp(x, y, len * sizeof(int32_t)) == 0;
}

/* Greedy repetitions of cp[p..p+len) after it; *end = end of the last one. */
static int
repeats(const int32_t *cp, size_t n, size_t p, size_t len, size_t *end)
{
	size_t		q = p + len;
	int			r = 0;

	for (;;)
	{
		size_t		s = q;

		while (s < n && cp[s] == ' ')
			s++;
		if (s + len > n || !same(cp + s, cp + p, len))
			break;
		q = s + len;
		r++;
	}
	*end = q;
	return r;
}

/* Python's str.count: non-overlapping occurrences, scanning left to right. */
static int
count_occurrences(const int32_t *hay, size_t n, const int32_t *needle, size_t len)
{
	int			c = 0;

	for (size_t i = 0; i + len <= n;)
	{
		if (same(hay + i, needle, len))
		{
			c++;
			i += len;
		}
		else
			i++;
	}
	return c;
}

cq_code
cq_repetition(const cq_utext *t, int min_length, int max_length, int threshold,
			  int *count, cq_error *err)
{
	const int32_t *cp = t->cp;
	size_t		n = t->n;

	if (min_length < 1 || max_length < min_length - 1 || threshold < 1)
		return cq_fail(err, CQ_EINVAL,
					   "repetition needs min_length >= 1, max_length >= min_length - 1 and threshold >= 1");
	*count = 0;
	for (size_t p = 0; p < n; p++)
	{
		size_t		len_max = (size_t) max_length + 1;

		bool		newline = false;

		if (cq_uni_isspace(cp[p]))
			continue;
		for (size_t k = 1; k < (size_t) min_length && p + k < n; k++)
			newline |= cp[p + k] == '\n';
		if (newline)
			continue;
		for (size_t len = (size_t) min_length; len <= len_max && p + len <= n; len++)
		{
			size_t		end;

			/* `.` stops at a newline: no longer group can cross it either */
			if (len > (size_t) min_length && cp[p + len - 1] == '\n')
				break;
			if (repeats(cp, n, p, len, &end) >= threshold)
			{
				*count = count_occurrences(cp + p, end - p, cp + p, len) - 1;
				return CQ_OK;
			}
		}
	}
	return CQ_OK;
}
