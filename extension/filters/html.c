/*
 * HtmlTagFilter: would BeautifulSoup(text, 'html.parser').find() return an
 * element?  That is: does Python's html.parser tokenizer (3.11, fed the
 * whole text and closed, convert_charrefs off as bs4 sets it) read a start
 * tag?  The tokenizer is replayed here as far as it decides that:
 *
 *   "<" + ASCII letter     a start tag, if the tolerant start-tag pattern
 *                          ends at ">" or "/>" (start_tag below); broken or
 *                          unterminated tags are text
 *   "</", "<!", "<?"       end tag, comment ("<!--" to "--\s*>"), doctype,
 *                          bogus comment, processing instruction: skipped
 *                          to their ">"
 *   "&#" not a valid       html.parser stops reading tags: the rest is
 *   character reference    text (see below)
 *
 * bs4 calls feed() then close(), and the tokenizer reads in two passes: the
 * first stops at the first incomplete construct (no closing ">") or
 * invalid "&#"; the second (close) reads an incomplete construct as text up
 * to the next ">" (or "<"), and stops for good at an invalid "&#".  The
 * first pass steps over an invalid "&#" when a ';' follows somewhere (and
 * the second pass goes on from there); otherwise it stops.  `\s` is Python's
 * str.isspace().  Marked sections ("<![CDATA[") are skipped to their ">"
 * here; html.parser raises on some of them, which OpusFilter counts as "no
 * HTML" -- the one known difference.
 */
#include "filters/rules.h"

#include <stddef.h>

#define NOT_FOUND ((size_t) -1)

static bool
ascii_letter(int32_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static size_t
find_char(const int32_t *cp, size_t n, size_t from, int32_t c)
{
	for (size_t i = from; i < n; i++)
		if (cp[i] == c)
			return i;
	return NOT_FOUND;
}

/* Where scanning resumes after an incomplete construct at i (close()). */
static size_t
after_incomplete(const int32_t *cp, size_t n, size_t i)
{
	size_t		k = find_char(cp, n, i + 1, '>');

	if (k != NOT_FOUND)
		return k + 1;
	k = find_char(cp, n, i + 1, '<');
	return k != NOT_FOUND ? k : i + 1;
}

/* `(?:\s|/(?!>))*` from p */
static size_t
skip_space_slash(const int32_t *cp, size_t n, size_t p)
{
	while (p < n && (cq_py_isspace(cp[p]) ||
					 (cp[p] == '/' && !(p + 1 < n && cp[p + 1] == '>'))))
		p++;
	return p;
}

static size_t
skip_space(const int32_t *cp, size_t n, size_t p)
{
	while (p < n && cq_py_isspace(cp[p]))
		p++;
	return p;
}

/*
 * The optional value of an attribute whose name ends at p:
 * (?:\s*=+\s*('[^']*'|"[^"]*"|(?!['"])[^>\s]*)\s*)?, with the backtracking
 * the regex engine does inside it.  Returns the end, or p when it fails.
 */
static size_t
attribute_value(const int32_t *cp, size_t n, size_t p)
{
	size_t		eq = skip_space(cp, n, p),
				after_eq,
				v;

	if (eq >= n || cp[eq] != '=')
		return p;
	after_eq = eq;
	while (after_eq < n && cp[after_eq] == '=')
		after_eq++;
	v = skip_space(cp, n, after_eq);
	if (v < n && (cp[v] == '\'' || cp[v] == '"'))
	{
		size_t		close = find_char(cp, n, v + 1, cp[v]);

		if (close != NOT_FOUND)
			return skip_space(cp, n, close + 1);
		/* an unclosed quote: give back a space, then an '=' ... */
		if (v > after_eq)
			return v;			/* empty bare value, then the spaces */
		if (after_eq - eq < 2)
			return p;			/* nothing to give back: no value */
		v = after_eq - 1;		/* a bare value starting at the last '=' */
	}
	while (v < n && cp[v] != '>' && !cq_py_isspace(cp[v]))
		v++;
	return skip_space(cp, n, v);
}

typedef enum tag_result
{
	TAG,						/* a start tag */
	TAG_INCOMPLETE,				/* text up to after_incomplete() */
	TAG_BOGUS					/* text up to *end */
} tag_result;

/* html.parser's check_for_whole_start_tag at i ("<" + letter). */
static tag_result
start_tag(const int32_t *cp, size_t n, size_t i, size_t *end)
{
	size_t		p = i + 2;

	/* the name: [a-zA-Z][^\t\n\r\f />\x00]* */
	while (p < n && cp[p] != '\t' && cp[p] != '\n' && cp[p] != '\r' && cp[p] != '\f' &&
		   cp[p] != ' ' && cp[p] != '/' && cp[p] != '>' && cp[p] != 0)
		p++;
	/* [\s/]* before the first attribute */
	while (p < n && (cq_py_isspace(cp[p]) || cp[p] == '/'))
		p++;
	/* attributes, each after a quote, a space or a slash (the lookbehind) */
	while (p < n && cp[p] != '>' && cp[p] != '/' &&
		   (cp[p - 1] == '\'' || cp[p - 1] == '"' || cp[p - 1] == '/' ||
			cq_py_isspace(cp[p - 1])))
	{
		p++;					/* [^\s/>] */
		while (p < n && !cq_py_isspace(cp[p]) && cp[p] != '/' && cp[p] != '=' && cp[p] != '>')
			p++;
		p = attribute_value(cp, n, p);
		p = skip_space_slash(cp, n, p);
	}
	p = skip_space(cp, n, p);
	if (p >= n)
		return TAG_INCOMPLETE;
	if (cp[p] == '>' || (cp[p] == '/' && p + 1 < n && cp[p + 1] == '>'))
		return TAG;
	if (ascii_letter(cp[p]) || cp[p] == '=' || cp[p] == '/')
		return TAG_INCOMPLETE;
	*end = p > i ? p : i + 1;
	return TAG_BOGUS;
}

/* End of a comment "<!--" at i: after "--\s*>", or NOT_FOUND. */
static size_t
comment_end(const int32_t *cp, size_t n, size_t i)
{
	for (size_t p = i + 4; p + 1 < n; p++)
	{
		if (cp[p] == '-' && cp[p + 1] == '-')
		{
			size_t		q = skip_space(cp, n, p + 2);

			if (q < n && cp[q] == '>')
				return q + 1;
		}
	}
	return NOT_FOUND;
}

/* After the first '>' at or after from, or NOT_FOUND. */
static size_t
after_gt(const int32_t *cp, size_t n, size_t from)
{
	size_t		k = find_char(cp, n, from, '>');

	return k == NOT_FOUND ? NOT_FOUND : k + 1;
}

static bool
is_doctype(const int32_t *cp, size_t n, size_t i)
{
	static const char doctype[] = "<!doctype";

	if (i + 9 > n)
		return false;
	for (int k = 0; k < 9; k++)
	{
		int32_t		c = cp[i + k];

		if (c >= 'A' && c <= 'Z')
			c += 'a' - 'A';
		if (c != doctype[k])
			return false;
	}
	return true;
}

/* Where a "<" construct that is not a start tag ends (NOT_FOUND: incomplete). */
static size_t
markup_end(const int32_t *cp, size_t n, size_t i)
{
	int32_t		c1 = i + 1 < n ? cp[i + 1] : 0;

	if (c1 == '/')
		return after_gt(cp, n, i + 2);
	if (c1 == '?')
		return after_gt(cp, n, i + 2);
	if (c1 == '!')
	{
		if (i + 3 < n && cp[i + 2] == '-' && cp[i + 3] == '-')
			return comment_end(cp, n, i);
		if (is_doctype(cp, n, i))
			return after_gt(cp, n, i + 9);
		return after_gt(cp, n, i + 2);
	}
	return i + 1;				/* a lone '<' is text */
}

/*
 * "&#" at i: the end of a character reference &#[0-9]+ or &#[xX][0-9a-fA-F]+
 * followed by one more character (which is given back unless it is ';'), or
 * NOT_FOUND.
 */
static size_t
charref_end(const int32_t *cp, size_t n, size_t i)
{
	size_t		p = i + 2;
	size_t		digits_from;
	bool		hex = p < n && (cp[p] == 'x' || cp[p] == 'X');

	if (hex)
		p++;
	digits_from = p;
	while (p < n && ((cp[p] >= '0' && cp[p] <= '9') ||
					 (hex && ((cp[p] >= 'a' && cp[p] <= 'f') || (cp[p] >= 'A' && cp[p] <= 'F')))))
		p++;
	if (p == digits_from || p >= n)
		return NOT_FOUND;
	/* decimal digits followed by a hex letter: no match at all */
	if ((cp[p] >= 'a' && cp[p] <= 'f') || (cp[p] >= 'A' && cp[p] <= 'F'))
		return NOT_FOUND;
	return cp[p] == ';' ? p + 1 : p;
}

bool
cq_html_tags(const cq_utext *t)
{
	const int32_t *cp = t->cp;
	size_t		n = t->n;
	size_t		i = 0;
	bool		closing = false;	/* in the second pass (close()) */

	while (i < n)
	{
		int32_t		c = cp[i];

		if (c == '<' && i + 1 < n && ascii_letter(cp[i + 1]))
		{
			size_t		end = i + 1;

			switch (start_tag(cp, n, i, &end))
			{
				case TAG:
					return true;
				case TAG_INCOMPLETE:
					closing = true;
					i = after_incomplete(cp, n, i);
					break;
				case TAG_BOGUS:
					i = end;
					break;
			}
		}
		else if (c == '<' && i + 1 < n)
		{
			size_t		end = markup_end(cp, n, i);

			if (end == NOT_FOUND)
			{
				closing = true;
				end = after_incomplete(cp, n, i);
			}
			i = end;
		}
		else if (c == '&' && i + 1 < n && cp[i + 1] == '#')
		{
			size_t		end = charref_end(cp, n, i);

			if (end != NOT_FOUND)
				i = end;
			else if (!closing && find_char(cp, n, i, ';') != NOT_FOUND)
			{
				closing = true;
				i += 2;
			}
			else
				return false;
		}
		else
			i++;
	}
	return false;
}
