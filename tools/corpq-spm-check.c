/*
 * corpq-spm-check FILE...: the extension's SentencePiece model check
 * (extension/text/spm_check.h) as a program, for tools/corpq-convert, so a
 * converted model directory never carries a .spm that spm_import would
 * refuse.  Exit 0 when every file passes; otherwise one line "FILE: reason"
 * on stderr for each file that does not, and exit 1; 2 for a usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/spm_check.h"

/* PostgreSQL's bytea holds at most 1 GB: spm_import never sees more. */
#define MAX_FILE_BYTES ((size_t) 1 << 30)

/* The bytes of path (malloc'd), or NULL with why set. */
static unsigned char *
read_file(const char *path, size_t *len, char *why, size_t why_size)
{
	FILE	   *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t		cap = 0;

	*len = 0;
	if (f == NULL)
	{
		snprintf(why, why_size, "cannot read: %s", strerror(errno));
		return NULL;
	}
	for (;;)
	{
		size_t		n;

		if (*len == cap)
		{
			unsigned char *b;

			cap = cap ? 2 * cap : 1 << 16;
			if (cap > MAX_FILE_BYTES + 1)
				cap = MAX_FILE_BYTES + 1;
			if ((b = realloc(buf, cap)) == NULL)
			{
				snprintf(why, why_size, "out of memory");
				break;
			}
			buf = b;
		}
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
		if (n == 0)
		{
			if (ferror(f))
				snprintf(why, why_size, "cannot read: %s", strerror(errno));
			else if (*len > MAX_FILE_BYTES)
				snprintf(why, why_size, "larger than 1 GB");
			else
			{
				fclose(f);
				return buf;
			}
			break;
		}
	}
	fclose(f);
	free(buf);
	return NULL;
}

int
main(int argc, char **argv)
{
	int			bad = 0;

	if (argc < 2)
	{
		fprintf(stderr, "usage: corpq-spm-check FILE...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++)
	{
		char		why[CQ_ERROR_MESSAGE_SIZE];
		size_t		len;
		unsigned char *buf = read_file(argv[i], &len, why, sizeof(why));
		cq_error	err = {0};

		if (buf != NULL && cq_spm_check(buf, len, &err) != CQ_OK)
			snprintf(why, sizeof(why), "%s", err.msg);
		if (buf == NULL || err.code != CQ_OK)
		{
			fprintf(stderr, "%s: %s\n", argv[i], why);
			bad = 1;
		}
		free(buf);
	}
	return bad;
}
