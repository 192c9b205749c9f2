#include "metrics/tokenize.h"

#include <string.h>

#include "common/mem.h"
#include "metrics/unicode.h"

static const char *const tokenizer_names[CQ_TOK_COUNT] = {"13a", "intl", "char", "none"};

const char *
cq_tokenizer_name(cq_tokenizer t)
{
	return (unsigned) t < CQ_TOK_COUNT ? tokenizer_names[t] : "?";
}

bool
cq_tokenizer_from_name(const char *name, cq_tokenizer *t)
{
	for (int i = 0; i < CQ_TOK_COUNT; i++)
		if (strcmp(name, tokenizer_names[i]) == 0)
		{
			*t = (cq_tokenizer) i;
			return true;
		}
	return false;
}

void
cq_spans_free(cq_spans *s)
{
	cq_free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

bool
cq_spans_push(cq_spans *s, cq_span sp)
{
	if (s->n == s->cap)
	{
		size_t		cap = s->cap ? 2 * s->cap : 64;
		cq_span    *v = s->v ? cq_realloc(s->v, cap * sizeof(cq_span)) : cq_alloc(cap * sizeof(cq_span));

		if (v == NULL)
			return false;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = sp;
	return true;
}

bool
cq_split_whitespace(const uint32_t *s, size_t n, cq_spans *out)
{
	size_t		i = 0;

	out->n = 0;
	while (i < n)
	{
		size_t		start;

		while (i < n && cq_uc_isspace(s[i]))
			i++;
		if (i == n)
			break;
		start = i;
		while (i < n && !cq_uc_isspace(s[i]))
			i++;
		if (!cq_spans_push(out, (cq_span) {(uint32_t) start, (uint32_t) (i - start)}))
			return false;
	}
	return true;
}

size_t
cq_rstrip_len(const uint32_t *s, size_t n)
{
	while (n > 0 && cq_uc_isspace(s[n - 1]))
		n--;
	return n;
}

/* ---- the passes, each one re.sub() of a pattern of one or two characters -- */

typedef bool (*char_pred) (uint32_t c);

static bool
is_digit(uint32_t c)
{
	return c >= '0' && c <= '9';
}

static bool
not_digit(uint32_t c)
{
	return !is_digit(c);
}

static bool
is_dot_comma(uint32_t c)
{
	return c == '.' || c == ',';
}

static bool
is_dash(uint32_t c)
{
	return c == '-';
}

/*
 * 13a's first class [\{-\~\[-\` -\&\(-\+\:-\@\/]: ASCII punctuation and
 * symbols except ' , - . -- and the space, which the class also holds.
 * Padding a space with spaces changes no token: no later pattern matches a
 * space but as "not a digit", which every space of a run is alike, so it is
 * left out (test/ref checks the tokens against the regexps on strings full
 * of spaces).
 */
static bool
is_13a_class(uint32_t c)
{
	return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x21 && c <= 0x26) ||
		(c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == 0x2F;
}

static bool
is_punct(uint32_t c)
{
	return (cq_uc_class(c) & CQ_UC_P) != 0;
}

static bool
is_symbol(uint32_t c)
{
	return (cq_uc_class(c) & CQ_UC_S) != 0;
}

static bool
not_number(uint32_t c)
{
	return (cq_uc_class(c) & CQ_UC_N) == 0;
}

/* (x) -> " x " for every character x in the class. */
static bool
pad_each(const cq_cpbuf *in, cq_cpbuf *out, char_pred p)
{
	out->n = 0;
	if (!cq_cpbuf_reserve(out, 3 * in->n + 1))
		return false;
	for (size_t i = 0; i < in->n; i++)
	{
		if (p(in->v[i]))
		{
			cq_cpbuf_put(out, ' ');
			cq_cpbuf_put(out, in->v[i]);
			cq_cpbuf_put(out, ' ');
		}
		else
			cq_cpbuf_put(out, in->v[i]);
	}
	return true;
}

/*
 * (a)(b) -> "a b " (space_before false) or " a b" (true), for non-overlapping
 * matches found left to right, as re.sub finds them: a match consumes both
 * characters, so the second cannot start the next match.
 */
static bool
split_pairs(const cq_cpbuf *in, cq_cpbuf *out, char_pred pa, char_pred pb, bool space_before)
{
	size_t		i = 0;

	out->n = 0;
	if (!cq_cpbuf_reserve(out, 2 * in->n + 1))
		return false;
	while (i < in->n)
	{
		if (i + 1 < in->n && pa(in->v[i]) && pb(in->v[i + 1]))
		{
			if (space_before)
				cq_cpbuf_put(out, ' ');
			cq_cpbuf_put(out, in->v[i]);
			cq_cpbuf_put(out, ' ');
			cq_cpbuf_put(out, in->v[i + 1]);
			if (!space_before)
				cq_cpbuf_put(out, ' ');
			i += 2;
		}
		else
			cq_cpbuf_put(out, in->v[i++]);
	}
	return true;
}

/* str.replace(pat, rep) with ASCII pat and rep. */
static bool
replace_all(const cq_cpbuf *in, cq_cpbuf *out, const char *pat, const char *rep)
{
	size_t		pl = strlen(pat),
				rl = strlen(rep),
				i = 0;

	out->n = 0;
	if (!cq_cpbuf_reserve(out, in->n + 1))	/* rep is never longer than pat */
		return false;
	while (i < in->n)
	{
		size_t		k = 0;

		while (k < pl && i + k < in->n && in->v[i + k] == (unsigned char) pat[k])
			k++;
		if (k == pl)
		{
			for (size_t t = 0; t < rl; t++)
				cq_cpbuf_put(out, (unsigned char) rep[t]);
			i += pl;
		}
		else
			cq_cpbuf_put(out, in->v[i++]);
	}
	return true;
}

static void
swap(cq_cpbuf *a, cq_cpbuf *b)
{
	cq_cpbuf	t = *a;

	*a = *b;
	*b = t;
}

static bool
contains(const cq_cpbuf *b, uint32_t c)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i] == c)
			return true;
	return false;
}

/* 13a: mteval-v13a's normalisation, then the regexp tokenizer on " line ". */
static bool
tokenize_13a(cq_cpbuf *cur, cq_cpbuf *nxt)
{
	static const char *const plain[][2] = {{"<skipped>", ""}, {"-\n", ""}, {"\n", " "}};
	static const char *const entities[][2] = {
		{"&quot;", "\""}, {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}};

	/* a pass whose pattern cannot occur is skipped */
	for (int i = 0; i < 3; i++)
	{
		if (!contains(cur, (unsigned char) (i == 0 ? '<' : '\n')))
			continue;
		if (!replace_all(cur, nxt, plain[i][0], plain[i][1]))
			return false;
		swap(cur, nxt);
	}
	if (contains(cur, '&'))
		for (int i = 0; i < 4; i++)
		{
			if (!replace_all(cur, nxt, entities[i][0], entities[i][1]))
				return false;
			swap(cur, nxt);
		}
	/* f' {line} ' */
	nxt->n = 0;
	if (!cq_cpbuf_reserve(nxt, cur->n + 2))
		return false;
	cq_cpbuf_put(nxt, ' ');
	memcpy(nxt->v + 1, cur->v, cur->n * sizeof(uint32_t));
	nxt->n = cur->n + 1;
	cq_cpbuf_put(nxt, ' ');
	swap(cur, nxt);

	if (!pad_each(cur, nxt, is_13a_class))
		return false;
	swap(cur, nxt);
	if (contains(cur, '.') || contains(cur, ','))
	{
		if (!split_pairs(cur, nxt, not_digit, is_dot_comma, false))	/* ([^0-9])([\.,]) */
			return false;
		swap(cur, nxt);
		if (!split_pairs(cur, nxt, is_dot_comma, not_digit, true))	/* ([\.,])([^0-9]) */
			return false;
		swap(cur, nxt);
	}
	if (contains(cur, '-'))
	{
		if (!split_pairs(cur, nxt, is_digit, is_dash, false))	/* ([0-9])(-) */
			return false;
		swap(cur, nxt);
	}
	return true;
}

/* intl: punctuation split off unless between digits, symbols always. */
static bool
tokenize_intl(cq_cpbuf *cur, cq_cpbuf *nxt)
{
	if (!split_pairs(cur, nxt, not_number, is_punct, false))	/* (\P{N})(\p{P}) */
		return false;
	swap(cur, nxt);
	if (!split_pairs(cur, nxt, is_punct, not_number, true))	/* (\p{P})(\P{N}) */
		return false;
	swap(cur, nxt);
	if (!pad_each(cur, nxt, is_symbol))	/* (\p{S}) */
		return false;
	swap(cur, nxt);
	return true;
}

/* char: " ".join(line) */
static bool
tokenize_char(cq_cpbuf *cur, cq_cpbuf *nxt)
{
	nxt->n = 0;
	if (!cq_cpbuf_reserve(nxt, 2 * cur->n + 1))
		return false;
	for (size_t i = 0; i < cur->n; i++)
	{
		if (i > 0)
			cq_cpbuf_put(nxt, ' ');
		cq_cpbuf_put(nxt, cur->v[i]);
	}
	swap(cur, nxt);
	return true;
}

bool
cq_tokenize(cq_tokenizer t, const uint32_t *in, size_t n, cq_cpbuf *out, cq_cpbuf *tmp)
{
	bool		ok = true;

	out->n = 0;
	if (!cq_cpbuf_reserve(out, n + 2))
		return false;
	if (n > 0)
		memcpy(out->v, in, n * sizeof(uint32_t));
	out->n = n;
	/* the passes ping-pong between out and tmp; swap() keeps the result in out */
	switch (t)
	{
		case CQ_TOK_13A:
			ok = tokenize_13a(out, tmp);
			break;
		case CQ_TOK_INTL:
			ok = tokenize_intl(out, tmp);
			break;
		case CQ_TOK_CHAR:
			ok = tokenize_char(out, tmp);
			break;
		case CQ_TOK_NONE:
			break;
	}
	return ok;
}
