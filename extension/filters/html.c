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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* The length of the tag name at i + 1 ("<" + letter at i). */
static size_t
tag_name_length(const int32_t *cp, size_t n, size_t i)
{
	size_t		p = i + 2;

	while (p < n && cp[p] != '\t' && cp[p] != '\n' && cp[p] != '\r' && cp[p] != '\f' &&
		   cp[p] != ' ' && cp[p] != '/' && cp[p] != '>' && cp[p] != 0)
		p++;
	return p - i - 1;
}

/*
 * html.parser's check_for_whole_start_tag at i ("<" + letter); *end is
 * where a TAG or a TAG_BOGUS ends.
 */
static tag_result
start_tag(const int32_t *cp, size_t n, size_t i, size_t *end)
{
	size_t		p = i + 1 + tag_name_length(cp, n, i);	/* [a-zA-Z][^\t\n\r\f />\x00]* */

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
	{
		*end = p + (cp[p] == '>' ? 1 : 2);
		return TAG;
	}
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

/*
 * The start tags html.parser reads in t, in order: visit(ctx, name, len)
 * for each (name = the code points after "<"); it returns false to stop.
 * Returns false when visit stopped the walk, true when t was read to its
 * end or to where html.parser stops reading tags.
 */
typedef bool (*tag_visit) (void *ctx, const int32_t *name, size_t len);

static bool
walk_tags(const cq_utext *t, tag_visit visit, void *ctx)
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
					if (!visit(ctx, cp + i + 1, tag_name_length(cp, n, i)))
						return false;
					i = end;
					break;
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
				return true;
		}
		else
			i++;
	}
	return true;
}

static bool
stop_at_first(void *ctx, const int32_t *name, size_t len)
{
	(void) name;
	(void) len;
	*(bool *) ctx = true;
	return false;
}

bool
cq_html_tags(const cq_utext *t)
{
	bool		found = false;

	walk_tags(t, stop_at_first, &found);
	return found;
}

/*
 * The elements compared: the HTML of formatting and layout that web pages
 * and localisation strings carry.  Other names in angle brackets are
 * mostly placeholders ("<file>", "<name>", "<object>"), which translators
 * translate: counting them would call most command-line help strings
 * mismatched (1,035 of the 1,439 pairs with a tag in the shared corpora).
 * Sorted, for bsearch.
 */
static const char *const markup_elements[] = {
	"a", "abbr", "b", "big", "blockquote", "br", "center", "cite", "dd", "div", "dl", "dt",
	"em", "font", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "iframe", "img", "ins", "kbd",
	"li", "meta", "nobr", "noscript", "ol", "p", "pre", "s", "script", "small", "span", "strike",
	"strong", "style", "sub", "sup", "tbody", "td", "th", "thead", "tr", "tt", "u", "ul", "wbr"
};

static int
cmp_name(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *) elem);
}

/* A side's markup elements, by their index in markup_elements. */
#define MAX_TAGS 64
typedef struct tag_list
{
	uint64_t	h[MAX_TAGS];
	size_t		n;
	bool		overflow;
} tag_list;

static bool
collect_tag(void *ctx, const int32_t *name, size_t len)
{
	tag_list   *l = ctx;
	char		folded[16];
	const char *const *e;

	if (len >= sizeof(folded))
		return true;			/* longer than any name listed */
	for (size_t k = 0; k < len; k++)
	{
		int32_t		c = name[k];

		if (c >= 'A' && c <= 'Z')
			c += 'a' - 'A';
		if (c <= 0 || c > 127)
			return true;
		folded[k] = (char) c;
	}
	folded[len] = '\0';
	e = bsearch(folded, markup_elements, sizeof(markup_elements) / sizeof(markup_elements[0]),
				sizeof(markup_elements[0]), cmp_name);
	if (e == NULL)
		return true;
	if (l->n == MAX_TAGS)
	{
		l->overflow = true;
		return false;
	}
	l->h[l->n++] = (uint64_t) (e - markup_elements);
	return true;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

bool
cq_html_same_tags(const cq_utext *src, const cq_utext *tgt)
{
	tag_list	a = {.n = 0},
				b = {.n = 0};

	walk_tags(src, collect_tag, &a);
	walk_tags(tgt, collect_tag, &b);
	if (a.overflow || b.overflow || a.n != b.n)
		return false;
	qsort(a.h, a.n, sizeof(uint64_t), cmp_u64);
	qsort(b.h, b.n, sizeof(uint64_t), cmp_u64);
	return memcmp(a.h, b.h, a.n * sizeof(uint64_t)) == 0;
}
