#include "curate/words.h"

#include <stdint.h>

#include "common/mem.h"
#include "common/utf8.h"
#include "filters/utext.h"

/* Byte length of the code point at s[0..n) and whether it is a space. */
static size_t
next_cp(const char *s, size_t n, int *space)
{
	uint32_t	cp;
	size_t		len = cq_utf8_decode((const uint8_t *) s, n, &cp);

	if (len == 0)
	{
		*space = 0;				/* a malformed byte: one non-space unit */
		return 1;
	}
	*space = cq_py_isspace((int32_t) cp);
	return len;
}

static cq_code
push(cq_words *out, size_t *cap, cq_span sp, cq_error *err)
{
	if (out->n == *cap)
	{
		size_t		ncap = *cap ? *cap * 2 : 16;
		cq_span    *w = cq_realloc(out->w, ncap * sizeof(cq_span));

		if (!w)
			return cq_fail(err, CQ_ENOMEM, "out of memory splitting words");
		out->w = w;
		*cap = ncap;
	}
	out->w[out->n++] = sp;
	return CQ_OK;
}

static cq_code
fail_free(cq_words *out)
{
	cq_words_free(out);
	return CQ_ENOMEM;
}

cq_code
cq_words_split(const char *s, size_t len, cq_words *out, cq_error *err)
{
	size_t		cap = 0,
				i = 0;
	int			in_word = 0;
	cq_span		cur = {0, 0};

	out->w = NULL;
	out->n = 0;
	while (i < len)
	{
		int			space;
		size_t		step = next_cp(s + i, len - i, &space);

		if (!space && !in_word)
			cur.start = i;
		if (space && in_word)
		{
			cur.end = i;
			if (push(out, &cap, cur, err) != CQ_OK)
				return fail_free(out);
		}
		in_word = !space;
		i += step;
	}
	if (in_word)
	{
		cur.end = len;
		if (push(out, &cap, cur, err) != CQ_OK)
			return fail_free(out);
	}
	return CQ_OK;
}

void
cq_words_free(cq_words *w)
{
	cq_free(w->w);
	w->w = NULL;
	w->n = 0;
}

size_t
cq_words_count(const char *s, size_t len)
{
	size_t		n = 0,
				i = 0;
	int			in_word = 0;

	while (i < len)
	{
		int			space;

		i += next_cp(s + i, len - i, &space);
		n += !space && !in_word;
		in_word = !space;
	}
	return n;
}
