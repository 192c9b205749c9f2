/* Runs every registered unit test; optional argv[1] selects tests by substring. */
#include "unit.h"

#include <stdarg.h>
#include <stdlib.h>

#define MAX_TESTS 4096

typedef struct
{
	const char *name;
	const char *file;
	unit_fn		fn;
} unit_case;

static unit_case cases[MAX_TESTS];
static int	ncases;
static int	current_failures;
static const char *current_name;

void
unit_register(const char *name, const char *file, unit_fn fn)
{
	if (ncases == MAX_TESTS)
	{
		fprintf(stderr, "too many unit tests\n");
		exit(2);
	}
	cases[ncases++] = (unit_case) {name, file, fn};
}

void
unit_fail(const char *file, int line, const char *fmt, ...)
{
	va_list		ap;

	fprintf(stderr, "FAIL %s (%s:%d): ", current_name, file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	current_failures++;
}

static int
by_file_then_name(const void *a, const void *b)
{
	const unit_case *x = a,
			   *y = b;
	int			c = strcmp(x->file, y->file);

	return c ? c : strcmp(x->name, y->name);
}

int
main(int argc, char **argv)
{
	int			passed = 0,
				failed = 0;
	const char *filter = argc > 1 ? argv[1] : NULL;

	qsort(cases, ncases, sizeof(unit_case), by_file_then_name);
	for (int i = 0; i < ncases; i++)
	{
		if (filter && !strstr(cases[i].name, filter) && !strstr(cases[i].file, filter))
			continue;
		current_name = cases[i].name;
		current_failures = 0;
		cases[i].fn();
		if (current_failures)
			failed++;
		else
			passed++;
		printf("%-4s %s\n", current_failures ? "FAIL" : "ok", cases[i].name);
	}
	printf("unit: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
