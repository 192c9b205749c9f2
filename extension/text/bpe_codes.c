/* Reading and writing subword-nmt codes files. */
#include "text/bpe.h"

#include <stdio.h>
#include <string.h>

#include "common/mem.h"

static int
strip_char(char c)
{
	return c == '\r' || c == '\n' || c == ' ';
}

/*
 * The version named by a "#version: X" header line: its last
 * whitespace-separated field with trailing ".0" groups removed, as
 * learn_bpe.py compares it.  0 if unsupported.
 */
static int
header_version(const char *line, size_t n)
{
	size_t		e = n,
				s;

	while (e > 0 && cq_is_space((unsigned char) line[e - 1]))
		e--;
	s = e;
	while (s > 0 && !cq_is_space((unsigned char) line[s - 1]) && line[s - 1] != ':')
		s--;
	for (;;)
	{
		size_t		z = e;

		while (z > s && line[z - 1] == '0')
			z--;
		if (z < e && z > s && line[z - 1] == '.')
			e = z - 1;
		else
			break;
	}
	if (e - s == 3 && memcmp(line + s, "0.1", 3) == 0)
		return 1;
	if (e - s == 3 && memcmp(line + s, "0.2", 3) == 0)
		return 2;
	return 0;
}

/* One merge line [s, e) of the codes file. */
static cq_code
parse_merge_line(cq_bpe *bpe, const char *s, const char *e, int lineno,
				 cq_error *err)
{
	while (s < e && strip_char(*s))
		s++;
	while (e > s && strip_char(e[-1]))
		e--;
	const char *sp = memchr(s, ' ', e - s);

	if (!sp || sp == s || sp + 1 == e || memchr(sp + 1, ' ', e - sp - 1))
		return cq_fail(err, CQ_EINVAL,
							"invalid line %d in BPE codes: expected two symbols separated by one space",
							lineno);
	cq_code		rc = cq_bpe_add_merge(bpe, s, sp - s, sp + 1, e - sp - 1, err);

	/* the merge's own message, with the line it came from */
	if (rc != CQ_OK && err)
	{
		char		m[CQ_ERROR_MESSAGE_SIZE];

		snprintf(m, sizeof(m), "line %d: %.200s", lineno, err->msg);
		memcpy(err->msg, m, sizeof(m));
	}
	return rc;
}

cq_code
cq_bpe_parse_codes(cq_bpe *bpe, const char *codes, size_t len, cq_error *err)
{
	const char *p = codes,
			   *end = codes + len;
	int			version = 1,
				lineno = 1;
	size_t		i;

	for (i = 0; i < len && cq_is_space((unsigned char) codes[i]); i++)
		;
	if (i == len)
		return cq_fail(err, CQ_EINVAL, "BPE codes are empty");

	const char *nl = memchr(p, '\n', len);
	const char *first_end = nl ? nl : end;

	if (len >= 9 && memcmp(p, "#version:", 9) == 0)
	{
		version = header_version(p, first_end - p);
		if (version == 0)
			return cq_fail(err, CQ_EINVAL,
								"unsupported BPE codes version in line 1 (expected 0.1 or 0.2)");
		p = nl ? nl + 1 : end;
		lineno = 2;
	}
	if (cq_bpe_init(bpe, version) != CQ_OK)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	/* trailing newlines end the file, as apply_bpe.py's rstrip('\n') */
	while (end > p && end[-1] == '\n')
		end--;
	while (p < end)
	{
		const char *e = memchr(p, '\n', end - p);

		if (!e)
			e = end;
		cq_code		rc = parse_merge_line(bpe, p, e, lineno, err);

		if (rc != CQ_OK)
		{
			cq_bpe_free(bpe);
			return rc;
		}
		p = e + 1;
		lineno++;
	}
	return CQ_OK;
}

char *
cq_bpe_write_codes(const cq_bpe *bpe, size_t *out_len)
{
	static const char header[] = "#version: 0.2\n";
	size_t		total = bpe->version == 2 ? sizeof(header) - 1 : 0;

	for (int32_t i = 0; i < bpe->n_merges; i++)
		total += bpe->syms.key_len[bpe->left[i]] + bpe->syms.key_len[bpe->right[i]] + 2;
	char	   *s = cq_alloc(total + 1);

	if (!s)
		return NULL;
	size_t		p = 0,
				n;
	const char *k;

	if (bpe->version == 2)
	{
		memcpy(s, header, sizeof(header) - 1);
		p = sizeof(header) - 1;
	}
	for (int32_t i = 0; i < bpe->n_merges; i++)
	{
		k = cq_strmap_key(&bpe->syms, bpe->left[i], &n);
		memcpy(s + p, k, n);
		p += n;
		s[p++] = ' ';
		k = cq_strmap_key(&bpe->syms, bpe->right[i], &n);
		memcpy(s + p, k, n);
		p += n;
		s[p++] = '\n';
	}
	s[p] = '\0';
	if (out_len)
		*out_len = p;
	return s;
}
