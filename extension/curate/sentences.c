/*
 * Sentence boundaries inside a text, for the feature sentence_diff
 * (features.h): a pair whose target carries a second sentence its source
 * lacks (appended content, a sentence splitter's miss) differs here even
 * when the lengths are ordinary.  A boundary is a terminal mark followed by
 * whitespace and then, after any opening punctuation (Spanish ¿ ¡, quotes,
 * brackets), an uppercase letter: the rule of the simple splitters corpora
 * are cut with, which abbreviations fool on both sides alike.
 */
#include "curate/features.h"

#include <unicode/uchar.h>

#include "common/cptext.h"

/* . ! ? and their full-width, Arabic, Devanagari and ellipsis forms */
static bool
is_terminal(int32_t c)
{
	return c == '.' || c == '!' || c == '?' || c == 0x2026 || c == 0x3002 ||
		c == 0xFF01 || c == 0xFF1F || c == 0x061F || c == 0x0964;
}

/* Opening punctuation that may stand before a sentence's first letter. */
static bool
is_opening(int32_t c)
{
	int8_t		type = u_charType(c);

	return type == U_START_PUNCTUATION || type == U_INITIAL_PUNCTUATION ||
		c == 0xBF || c == 0xA1 || c == '"' || c == '\'';
}

int
cq_sentence_boundaries(const cq_utext *t)
{
	int			count = 0;

	for (size_t i = 0; i + 1 < t->n; i++)
	{
		size_t		j = i + 1;

		if (!is_terminal(t->cp[i]) || !cq_py_isspace(t->cp[j]))
			continue;
		while (j < t->n && cq_py_isspace(t->cp[j]))
			j++;
		while (j < t->n && is_opening(t->cp[j]))
			j++;
		if (j < t->n && u_charType(t->cp[j]) == U_UPPERCASE_LETTER)
			count++;
	}
	return count;
}

/* A closing mark that may stand after a sentence's last mark: ." ») */
static bool
is_closing(int32_t c)
{
	int8_t		type = u_charType(c);

	return type == U_END_PUNCTUATION || type == U_FINAL_PUNCTUATION ||
		c == '"' || c == '\'';
}

int
cq_ends_sentence(const cq_utext *t)
{
	size_t		i = t->n;

	while (i > 0 && (cq_py_isspace(t->cp[i - 1]) || is_closing(t->cp[i - 1])))
		i--;
	if (i == 0)
		return 0;
	return is_terminal(t->cp[i - 1]) || t->cp[i - 1] == ':' || t->cp[i - 1] == ';' ||
		t->cp[i - 1] == 0xFF1A || t->cp[i - 1] == 0xFF1B;
}
