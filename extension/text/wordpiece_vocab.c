/*
 * The WordPiece model (text/wordpiece.h): options, the tokens of vocab.txt
 * in id order, and the inverse of segmentation.
 */
#include "text/wordpiece_impl.h"

#include <string.h>

#include "common/cptext.h"
#include "common/mem.h"
#include "common/utf8.h"

static const char *const special_names[CQ_WORDPIECE_N_SPECIAL] = {
	"unk_token", "sep_token", "pad_token", "cls_token", "mask_token"
};

/* A special token is one whitespace-free UTF-8 piece of bounded length. */
static cq_code
check_special(const char *s, const char *what, cq_cpbuf *cp, cq_error *err)
{
	size_t		len = strlen(s);
	size_t		i = 0;

	if (len == 0 || len > CQ_WORDPIECE_MAX_TOKEN_BYTES)
		return cq_fail(err, CQ_EINVAL, "%s must have 1 to %d bytes", what,
					   CQ_WORDPIECE_MAX_TOKEN_BYTES);
	if (cq_wp_room(cp, len) != CQ_OK)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	while (i < len)
	{
		uint32_t	c;
		size_t		k = cq_utf8_decode((const uint8_t *) s + i, len - i, &c);

		if (k == 0)
			return cq_fail(err, CQ_EINVAL, "%s is not UTF-8", what);
		i += k;
		if (cq_py_isspace((int32_t) c))
			return cq_fail(err, CQ_EINVAL, "%s \"%s\" contains whitespace", what, s);
		cq_cpbuf_put(cp, c);
	}
	return CQ_OK;
}

static cq_code
check_options(const cq_wordpiece_options *o, cq_error *err)
{
	if (o->variant != CQ_WORDPIECE_SLOW && o->variant != CQ_WORDPIECE_FAST)
		return cq_fail(err, CQ_EINVAL, "unknown WordPiece variant %d", (int) o->variant);
	if (o->max_input_chars_per_word < 1 ||
		o->max_input_chars_per_word > CQ_WORDPIECE_MAX_WORD_CHARS)
		return cq_fail(err, CQ_EINVAL, "max_input_chars_per_word must be from 1 to %d",
					   CQ_WORDPIECE_MAX_WORD_CHARS);
	if (o->special[CQ_WORDPIECE_UNK] == NULL)
		return cq_fail(err, CQ_EINVAL, "unk_token is required");
	return CQ_OK;
}

cq_code
cq_wordpiece_new(const cq_wordpiece_options *o, cq_wordpiece **out, cq_error *err)
{
	cq_wordpiece *wp;
	cq_code		rc;

	*out = NULL;
	if ((rc = check_options(o, err)) != CQ_OK)
		return rc;
	wp = cq_alloc0(sizeof(cq_wordpiece));
	if (!wp || cq_strmap_init(&wp->vocab, 1024) != CQ_OK)
	{
		cq_free(wp);
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	}
	wp->o = *o;
	for (int k = 0; k < CQ_WORDPIECE_N_SPECIAL; k++)
	{
		if (o->special[k] == NULL)
			continue;
		rc = check_special(o->special[k], special_names[k], &wp->special_cp[k], err);
		if (rc == CQ_OK && !(wp->special_utf8[k] = cq_strndup(o->special[k], strlen(o->special[k]))))
			rc = cq_fail(err, CQ_ENOMEM, "out of memory");
		if (rc != CQ_OK)
		{
			cq_wordpiece_free(wp);
			return rc;
		}
		wp->o.special[k] = wp->special_utf8[k];
	}
	*out = wp;
	return CQ_OK;
}

void
cq_wordpiece_release_scratch(cq_wordpiece *wp)
{
	cq_cpbuf_free(&wp->text);
	cq_cpbuf_free(&wp->part);
	cq_cpbuf_free(&wp->tmp);
	cq_cpbuf_free(&wp->word);
	cq_free(wp->u16a.u);
	cq_free(wp->u16b.u);
	cq_free(wp->utf8);
	cq_free(wp->ends);
	memset(&wp->text, 0, sizeof(wp->text));
	memset(&wp->part, 0, sizeof(wp->part));
	memset(&wp->tmp, 0, sizeof(wp->tmp));
	memset(&wp->word, 0, sizeof(wp->word));
	memset(&wp->u16a, 0, sizeof(wp->u16a));
	memset(&wp->u16b, 0, sizeof(wp->u16b));
	wp->utf8 = NULL;
	wp->ends = NULL;
	wp->utf8_cap = 0;
}

void
cq_wordpiece_free(cq_wordpiece *wp)
{
	if (!wp)
		return;
	for (int k = 0; k < CQ_WORDPIECE_N_SPECIAL; k++)
	{
		cq_free(wp->special_utf8[k]);
		cq_cpbuf_free(&wp->special_cp[k]);
	}
	if (!wp->attached)
	{
		cq_strmap_free(&wp->vocab);
		cq_free(wp->line);
	}
	cq_cpbuf_free(&wp->text);
	cq_cpbuf_free(&wp->part);
	cq_cpbuf_free(&wp->tmp);
	cq_cpbuf_free(&wp->word);
	cq_free(wp->u16a.u);
	cq_free(wp->u16b.u);
	cq_free(wp->utf8);
	cq_free(wp->ends);
	cq_free(wp);
}

/* Append a token: CQ_OK, CQ_ELIMIT (count or length) or CQ_ENOMEM. */
static cq_code
add_token(cq_wordpiece *wp, const char *tok, size_t len)
{
	int64_t		e;
	cq_code		rc;

	if (wp->attached)
		return CQ_EINVAL;
	if (wp->n_lines >= CQ_WORDPIECE_MAX_TOKENS || len > CQ_WORDPIECE_MAX_TOKEN_BYTES)
		return CQ_ELIMIT;
	if (wp->n_lines == wp->cap_lines)
	{
		size_t		cap = wp->cap_lines ? 2 * wp->cap_lines : 1024;
		uint32_t   *l = cq_realloc(wp->line, cap * sizeof(uint32_t));

		if (!l)
			return CQ_ENOMEM;
		wp->line = l;
		wp->cap_lines = cap;
	}
	/* a repeated token stays one entry: matching only asks whether it is one */
	rc = cq_strmap_intern(&wp->vocab, tok, len, &e, NULL);
	if (rc != CQ_OK)
		return rc;
	wp->line[wp->n_lines++] = (uint32_t) e;
	if (len > wp->longest)
		wp->longest = len;
	return CQ_OK;
}

/* The error of add_token for the token called what ("token 7", "line 8"). */
static cq_code
add_failed(const cq_wordpiece *wp, cq_code rc, const char *what, size_t at, size_t len,
		   cq_error *err)
{
	if (rc == CQ_ENOMEM)
		return cq_fail(err, rc, "out of memory");
	if (rc == CQ_EINVAL)
		return cq_fail(err, rc, "an attached WordPiece model is read-only");
	if (wp->n_lines >= CQ_WORDPIECE_MAX_TOKENS)
		return cq_fail(err, rc, "more than %d tokens", CQ_WORDPIECE_MAX_TOKENS);
	return cq_fail(err, rc, "%s %zu: a token of %zu bytes, more than %d", what, at, len,
				   CQ_WORDPIECE_MAX_TOKEN_BYTES);
}

cq_code
cq_wordpiece_add(cq_wordpiece *wp, const char *tok, size_t len, cq_error *err)
{
	cq_code		rc = add_token(wp, tok, len);

	return rc == CQ_OK ? CQ_OK : add_failed(wp, rc, "token", wp->n_lines, len, err);
}

cq_code
cq_wordpiece_parse(cq_wordpiece *wp, const char *vocab, size_t len, cq_error *err)
{
	size_t		start = 0;

	while (start < len)
	{
		size_t		end = start;
		cq_code		rc;

		while (end < len && vocab[end] != '\n' && vocab[end] != '\r')
			end++;
		rc = add_token(wp, vocab + start, end - start);
		if (rc != CQ_OK)
			return add_failed(wp, rc, "line", wp->n_lines + 1, end - start, err);
		/* "\r\n" is one line end, as "\n" and "\r" alone */
		start = end + (end + 1 < len && vocab[end] == '\r' && vocab[end + 1] == '\n' ? 2 : 1);
	}
	return CQ_OK;
}

cq_code
cq_wordpiece_ready(const cq_wordpiece *wp, cq_error *err)
{
	const char *unk = wp->o.special[CQ_WORDPIECE_UNK];

	if (cq_strmap_find(&wp->vocab, unk, strlen(unk)) < 0)
		return cq_fail(err, CQ_EINVAL, "the unknown token \"%s\" is not in the vocabulary (%zu tokens)",
					   unk, wp->n_lines);
	return CQ_OK;
}

cq_code
cq_wordpiece_load(const cq_wordpiece_options *o, const char *vocab, size_t len,
				  cq_wordpiece **out, cq_error *err)
{
	cq_wordpiece *wp;
	cq_code		rc = cq_wordpiece_new(o, &wp, err);

	*out = NULL;
	if (rc == CQ_OK && (rc = cq_wordpiece_parse(wp, vocab, len, err)) == CQ_OK)
		rc = cq_wordpiece_ready(wp, err);
	if (rc != CQ_OK)
	{
		cq_wordpiece_free(wp);
		return rc;
	}
	*out = wp;
	return CQ_OK;
}

int32_t
cq_wordpiece_size(const cq_wordpiece *wp)
{
	return (int32_t) wp->n_lines;
}

const char *
cq_wordpiece_token(const cq_wordpiece *wp, int32_t id, size_t *len)
{
	return cq_strmap_key(&wp->vocab, wp->line[id], len);
}

/* Bytes of Python-whitespace characters at the start of s[0..len). */
static size_t
leading_space(const char *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		uint32_t	c;
		size_t		k = cq_utf8_next_or_fffd((const uint8_t *) s + i, len - i, &c);

		if (!cq_py_isspace((int32_t) c))
			return i;
		i += k;
	}
	return len;
}

/*
 * Length of s[0..len) without its trailing Python-whitespace characters: the
 * end of the last other character, read forwards (a whitespace character
 * starts with a lead byte, which no ill-formed subpart before it takes in,
 * so this is the boundary reading backwards would find).
 */
static size_t
without_trailing_space(const char *s, size_t len)
{
	size_t		i = 0,
				end = 0;

	while (i < len)
	{
		uint32_t	c;

		i += cq_utf8_next_or_fffd((const uint8_t *) s + i, len - i, &c);
		if (!cq_py_isspace((int32_t) c))
			end = i;
	}
	return end;
}

size_t
cq_wordpiece_undo_inplace(char *s, size_t len)
{
	size_t		w = 0;
	size_t		lead;

	for (size_t r = 0; r < len;)
	{
		if (r + 3 <= len && s[r] == ' ' && s[r + 1] == '#' && s[r + 2] == '#')
			r += 3;
		else
			s[w++] = s[r++];
	}
	w = without_trailing_space(s, w);
	lead = leading_space(s, w);
	memmove(s, s + lead, w - lead);
	return w - lead;
}
