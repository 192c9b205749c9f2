#include "common/json.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "common/utf8.h"

/*
 * The parse functions return false on failure, after fail() has recorded
 * the code and the message (with the byte offset) for the caller.
 */
typedef struct parser
{
	const char *s;
	size_t		len;
	size_t		pos;
	cq_code		code;
	cq_error   *err;
} parser;

static bool fail_as(parser *p, cq_code code, const char *fmt, ...)
			__attribute__((format(printf, 3, 4)));

static bool
fail_as(parser *p, cq_code code, const char *fmt, ...)
{
	va_list		ap;
	char		what[CQ_ERROR_MESSAGE_SIZE];

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	p->code = cq_fail(p->err, code, "at byte %zu: %s", p->pos, what);
	return false;
}

#define fail(p, ...) fail_as(p, CQ_EINVAL, __VA_ARGS__)

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
		return fail_as(p, CQ_ENOMEM, "out of memory");
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
			size_t		len = cq_utf8_decode((const uint8_t *) p->s + p->pos - 1,
											 p->len - p->pos + 1, NULL);

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
			return fail_as(p, CQ_ENOMEM, "out of memory");
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

cq_code
cq_json_parse_object(const char *text, size_t len, cq_json_object *out, cq_error *err)
{
	parser		p = {text, len, 0, CQ_OK, err};
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
	return ok ? CQ_OK : p.code;
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
