#include "common/json.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"

typedef struct parser
{
	const char *s;
	size_t		len;
	size_t		pos;
	char	   *err;
	size_t		errlen;
} parser;

static bool fail(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool
fail(parser *p, const char *fmt, ...)
{
	va_list		ap;
	int			n;

	n = snprintf(p->err, p->errlen, "at byte %zu: ", p->pos);
	va_start(ap, fmt);
	if (n >= 0 && (size_t) n < p->errlen)
		vsnprintf(p->err + n, p->errlen - n, fmt, ap);
	va_end(ap);
	return false;
}

static void
skip_ws(parser *p)
{
	while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]) && p->s[p->pos])
		p->pos++;
}

static bool
expect(parser *p, char c)
{
	skip_ws(p);
	if (p->pos >= p->len || p->s[p->pos] != c)
		return fail(p, "expected '%c'", c);
	p->pos++;
	return true;
}

/* A string literal at p->pos into a fresh allocation. */
/*
 * Length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629: no
 * overlong form, no surrogate, nothing above U+10FFFF), 0 if there is none.
 */
static size_t
utf8_sequence(const unsigned char *s, size_t n)
{
	size_t		len;
	unsigned	lo = 0x80,
				hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
	{
		len = 3;
		if (s[0] == 0xe0)
			lo = 0xa0;
		else if (s[0] == 0xed)
			hi = 0x9f;
	}
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
	{
		len = 4;
		if (s[0] == 0xf0)
			lo = 0x90;
		else if (s[0] == 0xf4)
			hi = 0x8f;
	}
	else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

static bool
parse_string(parser *p, char **out)
{
	char	   *buf;
	size_t		n = 0;

	skip_ws(p);
	if (p->pos >= p->len || p->s[p->pos] != '"')
		return fail(p, "expected a string");
	p->pos++;
	buf = cq_alloc(p->len - p->pos + 1);	/* decoded is never longer */
	if (!buf)
		return fail(p, "out of memory");
	while (p->pos < p->len && p->s[p->pos] != '"')
	{
		unsigned char c = p->s[p->pos++];

		if (c < 0x20)
		{
			cq_free(buf);
			return fail(p, "control character in string");
		}
		if (c >= 0x80)
		{
			size_t		len = utf8_sequence((const unsigned char *) p->s + p->pos - 1,
											p->len - p->pos + 1);

			if (len == 0)
			{
				cq_free(buf);
				p->pos--;
				return fail(p, "invalid UTF-8 in string");
			}
			memcpy(buf + n, p->s + p->pos - 1, len);
			n += len;
			p->pos += len - 1;
			continue;
		}
		if (c == '\\')
		{
			const char *from = "\"\\/bfnrt",
					   *to = "\"\\/\b\f\n\r\t";
			const char *hit;
			unsigned	code = 0;

			if (p->pos >= p->len)
				break;
			c = p->s[p->pos++];
			if (c != 'u' && (hit = strchr(from, c)) != NULL && c)
				c = to[hit - from];
			else if (c == 'u' && p->pos + 4 <= p->len &&
					 isxdigit((unsigned char) p->s[p->pos]) &&
					 isxdigit((unsigned char) p->s[p->pos + 1]) &&
					 isxdigit((unsigned char) p->s[p->pos + 2]) &&
					 isxdigit((unsigned char) p->s[p->pos + 3]) &&
					 sscanf(p->s + p->pos, "%4x", &code) == 1 && code < 0x80 && code > 0)
			{
				p->pos += 4;
				c = (unsigned char) code;
			}
			else
			{
				cq_free(buf);
				return fail(p, "unsupported escape in string");
			}
		}
		buf[n++] = (char) c;
	}
	if (p->pos >= p->len)
	{
		cq_free(buf);
		return fail(p, "unterminated string");
	}
	p->pos++;
	buf[n] = '\0';
	*out = buf;
	return true;
}

/* Whether s is a number as RFC 8259 writes one: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool
rfc_number(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (isdigit((unsigned char) *s))
			s++;
	else
		return false;
	if (*s == '.')
	{
		if (!isdigit((unsigned char) *++s))
			return false;
		while (isdigit((unsigned char) *s))
			s++;
	}
	if (*s == 'e' || *s == 'E')
	{
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!isdigit((unsigned char) *s))
			return false;
		while (isdigit((unsigned char) *s))
			s++;
	}
	return *s == '\0';
}

static bool
parse_number(parser *p, double *out)
{
	char		tmp[64];
	size_t		n = 0;
	char	   *end;

	while (p->pos + n < p->len && n < sizeof(tmp) - 1 &&
		   strchr("0123456789+-.eE", p->s[p->pos + n]) && p->s[p->pos + n])
	{
		tmp[n] = p->s[p->pos + n];
		n++;
	}
	tmp[n] = '\0';
	if (!rfc_number(tmp))
		return fail(p, "bad number \"%s\" (JSON numbers have no leading zero, plus sign or bare point)", tmp);
	errno = 0;
	*out = strtod(tmp, &end);
	if (n == 0 || end != tmp + n || errno == ERANGE)
		return fail(p, "bad number");
	p->pos += n;
	return true;
}

static bool
match_word(parser *p, const char *w)
{
	size_t		n = strlen(w);

	if (p->pos + n <= p->len && memcmp(p->s + p->pos, w, n) == 0)
	{
		p->pos += n;
		return true;
	}
	return false;
}

static bool
parse_value(parser *p, cq_json_member *m)
{
	char		c;

	skip_ws(p);
	if (p->pos >= p->len)
		return fail(p, "expected a value");
	c = p->s[p->pos];
	if (c == '"')
	{
		m->type = CQ_JSON_STRING;
		return parse_string(p, &m->string);
	}
	if (match_word(p, "true") || match_word(p, "false"))
	{
		m->type = CQ_JSON_BOOL;
		m->boolean = (p->s[p->pos - 1] == 'e' && p->s[p->pos - 2] == 'u');
		return true;
	}
	if (match_word(p, "null"))
	{
		m->type = CQ_JSON_NULL;
		return true;
	}
	if (c == '{' || c == '[')
		return fail(p, "nested objects and arrays are not supported");
	m->type = CQ_JSON_NUMBER;
	return parse_number(p, &m->number);
}

static bool
add_member(parser *p, cq_json_object *obj, int *cap)
{
	cq_json_member *m;

	if (obj->n == *cap)
	{
		int			ncap = *cap ? *cap * 2 : 16;
		cq_json_member *grown = cq_realloc(obj->members, sizeof(*grown) * ncap);

		if (!grown)
			return fail(p, "out of memory");
		obj->members = grown;
		*cap = ncap;
	}
	m = &obj->members[obj->n];
	memset(m, 0, sizeof(*m));
	if (!parse_string(p, &m->key))
		return false;
	obj->n++;					/* owned from here on, freed on failure */
	return expect(p, ':') && parse_value(p, m);
}

bool
cq_json_parse_object(const char *text, size_t len, cq_json_object *out,
					 char *err, size_t errlen)
{
	parser		p = {text, len, 0, err, errlen};
	int			cap = 0;
	bool		ok;

	out->n = 0;
	out->members = NULL;
	ok = expect(&p, '{');
	skip_ws(&p);
	if (ok && p.pos < len && text[p.pos] == '}')
		p.pos++;
	else
		while (ok)
		{
			ok = add_member(&p, out, &cap);
			skip_ws(&p);
			if (ok && p.pos < len && text[p.pos] == ',')
			{
				p.pos++;
				continue;
			}
			if (ok)
				ok = expect(&p, '}');
			break;
		}
	skip_ws(&p);
	if (ok && p.pos != len)
		ok = fail(&p, "trailing characters after the object");
	if (!ok)
		cq_json_free(out);
	return ok;
}

void
cq_json_free(cq_json_object *obj)
{
	for (int i = 0; i < obj->n; i++)
	{
		cq_free(obj->members[i].key);
		cq_free(obj->members[i].string);
	}
	cq_free(obj->members);
	obj->members = NULL;
	obj->n = 0;
}

const cq_json_member *
cq_json_get(const cq_json_object *obj, const char *key)
{
	for (int i = obj->n - 1; i >= 0; i--)
		if (strcmp(obj->members[i].key, key) == 0)
			return &obj->members[i];
	return NULL;
}
