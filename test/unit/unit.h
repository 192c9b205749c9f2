/*
 * A minimal unit-test harness for the PostgreSQL-free core.
 *
 * Each test file defines tests with TEST(name) { ... }; a constructor
 * registers them, so adding a file needs no edit elsewhere.  Checks record a
 * failure and continue; the runner prints one line per failed check and a
 * closing "N passed, N failed" line, and exits non-zero on any failure.
 */
#ifndef CQ_UNIT_H
#define CQ_UNIT_H

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef void (*unit_fn) (void);

void		unit_register(const char *name, const char *file, unit_fn fn);
void		unit_fail(const char *file, int line, const char *fmt, ...)
			__attribute__((format(printf, 3, 4)));

#define TEST(name) \
	static void test_##name(void); \
	__attribute__((constructor)) static void register_##name(void) \
	{ unit_register(#name, __FILE__, test_##name); } \
	static void test_##name(void)

#define CHECK(cond) \
	do { if (!(cond)) unit_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); } while (0)

#define CHECK_INT_EQ(a, b) \
	do { long long a_ = (long long) (a), b_ = (long long) (b); \
		if (a_ != b_) unit_fail(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", #a, a_, #b, b_); \
	} while (0)

#define CHECK_STR_EQ(a, b) \
	do { const char *a_ = (a), *b_ = (b); \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) \
			unit_fail(__FILE__, __LINE__, "%s == \"%s\", expected \"%s\"", #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
	} while (0)

/* |a - b| <= tol (absolute) */
#define CHECK_NEAR(a, b, tol) \
	do { double a_ = (double) (a), b_ = (double) (b); \
		if (!(fabs(a_ - b_) <= (tol))) \
			unit_fail(__FILE__, __LINE__, "%s == %.10g, expected %.10g (tol %g)", #a, a_, b_, (double) (tol)); \
	} while (0)

#endif
