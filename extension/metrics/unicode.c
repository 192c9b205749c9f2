#include "metrics/unicode.h"

#include "metrics/unicode_tables.h"

#define CAPITAL_SIGMA	0x03A3
#define SMALL_SIGMA		0x03C3
#define FINAL_SIGMA		0x03C2

static bool
in_ranges(const cq_uc_range *r, int n, uint32_t c)
{
	int			lo = 0,
				hi = n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (c < r[mid].lo)
			hi = mid - 1;
		else if (c > r[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/*
 * The ASCII rows of the tables: \t..\r, \x1c..\x1f and ' ' are whitespace
 * (8); the classes are those of the generated ranges (checked by the unit
 * test against cq_uc_class_table for every ASCII character).
 */
#define P CQ_UC_P
#define S CQ_UC_S
#define N CQ_UC_N
const uint8_t cq_uc_ascii[128] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8,
	8, P, P, P, S, P, P, P, P, P, P, S, P, P, P, P,	/* space ! " # $ % & ' ( ) * + , - . / */
	N, N, N, N, N, N, N, N, N, N, P, P, S, S, S, P,	/* 0-9 : ; < = > ? */
	P, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,	/* @ A-O */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, P, P, P, S, P,	/* P-Z [ \ ] ^ _ */
	S, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,	/* ` a-o */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, P, S, P, S, 0	/* p-z { | } ~ DEL */
};
#undef P
#undef S
#undef N

bool
cq_uc_isspace_table(uint32_t c)
{
	return in_ranges(cq_uc_space_ranges, cq_uc_space_ranges_n, c);
}

uint32_t
cq_uc_class_table(uint32_t c)
{
	int			lo = 0,
				hi = cq_uc_class_ranges_n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (c < cq_uc_class_ranges[mid].lo)
			hi = mid - 1;
		else if (c > cq_uc_class_ranges[mid].hi)
			lo = mid + 1;
		else
			return cq_uc_class_ranges[mid].mask;
	}
	return 0;
}

bool
cq_uc_cased(uint32_t c)
{
	return in_ranges(cq_uc_cased_ranges, cq_uc_cased_ranges_n, c);
}

bool
cq_uc_case_ignorable(uint32_t c)
{
	return in_ranges(cq_uc_case_ignorable_ranges, cq_uc_case_ignorable_ranges_n, c);
}

/* The lowercase of c (other than capital sigma): 1 or 2 code points. */
static int
lower_one(uint32_t c, uint32_t out[2])
{
	int			lo = 0,
				hi = cq_uc_lower_map_n - 1;

	if (c < 0x80)
	{
		out[0] = (c >= 'A' && c <= 'Z') ? c + 32 : c;
		return 1;
	}
	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (c < cq_uc_lower_map[mid].cp)
			hi = mid - 1;
		else if (c > cq_uc_lower_map[mid].cp)
			lo = mid + 1;
		else
		{
			out[0] = cq_uc_lower_map[mid].lower[0];
			out[1] = cq_uc_lower_map[mid].lower[1];
			return out[1] ? 2 : 1;
		}
	}
	out[0] = c;
	return 1;
}

/*
 * Unicode's Final_Sigma context, as str.lower() tests it: a cased letter
 * before the sigma and none after it, case-ignorable characters skipped.
 */
static bool
final_sigma(const uint32_t *in, size_t n, size_t i)
{
	size_t		j;

	for (j = i; j > 0 && cq_uc_case_ignorable(in[j - 1]); j--)
		;
	if (j == 0 || !cq_uc_cased(in[j - 1]))
		return false;
	for (j = i + 1; j < n && cq_uc_case_ignorable(in[j]); j++)
		;
	return j == n || !cq_uc_cased(in[j]);
}

bool
cq_uc_lower_cps(cq_cpbuf *out, const uint32_t *in, size_t n)
{
	out->n = 0;
	if (!cq_cpbuf_reserve(out, 2 * n + 1))
		return false;
	for (size_t i = 0; i < n; i++)
	{
		uint32_t	low[2];
		int			k;

		if (in[i] == CAPITAL_SIGMA)
		{
			cq_cpbuf_put(out, final_sigma(in, n, i) ? FINAL_SIGMA : SMALL_SIGMA);
			continue;
		}
		k = lower_one(in[i], low);
		for (int t = 0; t < k; t++)
			cq_cpbuf_put(out, low[t]);
	}
	return true;
}

void
cq_uc_dump(uint32_t lo, uint32_t hi, uint8_t *bits, uint32_t *lower)
{
	for (uint32_t c = lo; c < hi; c++)
	{
		uint32_t	low[2] = {0, 0};
		size_t		i = c - lo;

		bits[i] = (uint8_t) (cq_uc_class_table(c) | (cq_uc_isspace_table(c) << 3) |
							 (cq_uc_cased(c) << 4) | (cq_uc_case_ignorable(c) << 5));
		if (c == CAPITAL_SIGMA)
			low[0] = SMALL_SIGMA;
		else
			lower_one(c, low);
		lower[2 * i] = low[0];
		lower[2 * i + 1] = low[1];
	}
}
