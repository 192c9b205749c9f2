/*
 * RepetitionFilter: the first match of (\S.{min-1,max}?)(?: *\1){threshold,}
 * as the `regex` module finds it, without a regex engine.
 *
 * The engine tries start positions left to right; at each, group 1 lengths
 * from min to max + 1 code points (lazy); for each length it takes as many
 * "spaces, then the group again" repetitions as it can (greedy: fewer
 * spaces never help, since the group starts with a non-space).  The first
 * (position, length) with at least threshold repetitions is the match.
 * match_at() skips the lengths that fail at their first character, so a
 * position costs the occurrences of its character within reach, not
 * max_length comparisons.
 * `.` is anything but '\n', `\S` anything but White_Space, and the spaces
 * are U+0020 only.  The score is then Python's full.count(repeated) - 1.
 */
#include "filters/rules.h"

#include "common/mem.h"

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

/*
 * next[i] = the next position j > i with cp[j] == cp[i] (n if none): the
 * only places where a repetition of a string starting at i can begin.
 */
static bool
next_same(const int32_t *cp, size_t n, size_t *next)
{
	size_t		cap = 16,
			   *last;
	int32_t    *key;

	while (cap < 2 * n)
		cap *= 2;
	last = cq_alloc(cap * sizeof(size_t));
	key = cq_alloc(cap * sizeof(int32_t));
	if (!last || !key)
	{
		cq_free(last);
		cq_free(key);
		return false;
	}
	for (size_t h = 0; h < cap; h++)
		key[h] = -1;
	for (size_t i = n; i-- > 0;)
	{
		size_t		h = ((uint32_t) cp[i] * 2654435761u) & (cap - 1);

		while (key[h] != -1 && key[h] != cp[i])
			h = (h + 1) & (cap - 1);
		next[i] = key[h] == -1 ? n : last[h];
		key[h] = cp[i];
		last[h] = i;
	}
	cq_free(last);
	cq_free(key);
	return true;
}

/*
 * The engine tries the group lengths L at p in increasing order; for L the
 * first repetition starts at s, the first non-space at or after p + L, and
 * needs cp[s] == cp[p].  So only the positions s of p's next_same chain can
 * succeed, each for the L that put p + L inside the run of spaces before s
 * (ranges that increase with s); every other L fails at its first
 * character, as it would in the engine.
 */
static bool
match_at(const int32_t *cp, size_t n, const size_t *next, size_t p, size_t len_min,
		 size_t len_max, int threshold, int *count)
{
	size_t		limit = p + len_max;	/* no group ends after it ... */

	/* ... and a repetition starts at most after the spaces there */
	while (limit < n && cp[limit] == ' ')
		limit++;
	for (size_t s = next[p]; s < n && s <= limit; s = next[s])
	{
		size_t		spaces = 0,
					lo,
					hi;

		while (s - spaces - 1 > p && cp[s - spaces - 1] == ' ')
			spaces++;
		lo = s - p - spaces;
		hi = s - p;
		lo = lo < len_min ? len_min : lo;
		hi = hi > len_max ? len_max : hi;
		for (size_t len = lo; len <= hi; len++)
		{
			size_t		end;

			if (repeats(cp, n, p, len, &end) >= threshold)
			{
				*count = count_occurrences(cp + p, end - p, cp + p, len) - 1;
				return true;
			}
		}
	}
	return false;
}

cq_code
cq_repetition(const cq_utext *t, int min_length, int max_length, int threshold,
			  int *count, cq_error *err)
{
	const int32_t *cp = t->cp;
	size_t		n = t->n;
	size_t	   *next;
	size_t		newline = 0;	/* the first '\n' after p (n: none) */

	if (min_length < 1 || max_length < min_length - 1 || threshold < 1)
		return cq_fail(err, CQ_EINVAL,
					   "repetition needs min_length >= 1, max_length >= min_length - 1 and threshold >= 1");
	*count = 0;
	if (n == 0)
		return CQ_OK;
	next = cq_alloc(n * sizeof(size_t));
	if (!next || !next_same(cp, n, next))
	{
		cq_free(next);
		return cq_fail(err, CQ_ENOMEM, "out of memory looking for repetitions");
	}
	for (size_t p = 0; p < n; p++)
	{
		size_t		len_max = (size_t) max_length + 1;

		if (newline <= p)
			for (newline = p + 1; newline < n && cp[newline] != '\n'; newline++)
				;
		if (cq_uni_isspace(cp[p]))
			continue;
		/* `.` stops at a newline: the group cannot run into one */
		if (newline - p < len_max)
			len_max = newline - p;
		if (len_max < (size_t) min_length)
			continue;
		if (match_at(cp, n, next, p, (size_t) min_length, len_max, threshold, count))
			break;
	}
	cq_free(next);
	return CQ_OK;
}
