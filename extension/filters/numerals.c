/*
 * NonZeroNumeralsFilter: the ratio of Python's difflib.SequenceMatcher
 * between the sequences of non-zero ASCII digits of the two sides.
 *
 * SequenceMatcher is not a longest common subsequence: it takes the longest
 * matching block (the first one found, scanning a left to right and, for
 * each element of a, its positions in b left to right), extends it over
 * equal neighbours, and recurses on the parts left and right of it.  Since
 * Python 2.7.1 "autojunk" drops from the index of b every element that
 * occurs more than len(b) // 100 + 1 times when len(b) >= 200 (such elements
 * can still join a block by the extension).  ratio = 2 M / (len(a) +
 * len(b)), M the total size of the blocks; 1.0 when both are empty.
 */
#include "filters/rules.h"

#include "common/mem.h"

#include <string.h>

typedef struct matcher
{
	const uint8_t *a;
	const uint8_t *b;
	size_t		na,
				nb;
	size_t		start[11];		/* positions in b of digit d are
								 * pos[start[d] .. start[d + 1]) */
	size_t	   *pos;
	size_t	   *len[2];			/* j2len of the previous and current row */
	uint64_t   *stamp[2];		/* row generation that wrote len[.][j] */
	uint64_t	gen;
} matcher;

typedef struct block
{
	size_t		i,
				j,
				size;
} block;

/* a[alo..ahi) against b[blo..bhi): a subproblem of the recursion */
typedef struct range
{
	size_t		alo,
				ahi,
				blo,
				bhi;
} range;

/* b2j, without the popular elements when autojunk applies. */
static void
index_b(matcher *m)
{
	size_t		count[10] = {0};
	size_t		fill[10];

	for (size_t j = 0; j < m->nb; j++)
		count[m->b[j]]++;
	if (m->nb >= 200)
	{
		size_t		ntest = m->nb / 100 + 1;

		for (int d = 0; d < 10; d++)
			if (count[d] > ntest)
				count[d] = 0;
	}
	m->start[0] = 0;
	for (int d = 0; d < 10; d++)
	{
		m->start[d + 1] = m->start[d] + count[d];
		fill[d] = m->start[d];
	}
	for (size_t j = 0; j < m->nb; j++)
	{
		int			d = m->b[j];

		if (fill[d] < m->start[d + 1])
			m->pos[fill[d]++] = j;
	}
}

static block
longest_match(matcher *m, size_t alo, size_t ahi, size_t blo, size_t bhi)
{
	block		best = {alo, blo, 0};

	/* a fresh, empty j2len: no stamp equals the generation before the first row */
	m->gen++;
	for (size_t i = alo; i < ahi; i++)
	{
		uint64_t	g = ++m->gen;
		size_t	   *cur = m->len[g & 1],
				   *prev = m->len[(g - 1) & 1];
		uint64_t   *cur_stamp = m->stamp[g & 1],
				   *prev_stamp = m->stamp[(g - 1) & 1];
		int			d = m->a[i];

		for (size_t p = m->start[d]; p < m->start[d + 1]; p++)
		{
			size_t		j = m->pos[p],
						k;

			if (j < blo)
				continue;
			if (j >= bhi)
				break;
			k = (j > 0 && prev_stamp[j - 1] == g - 1 ? prev[j - 1] : 0) + 1;
			cur[j] = k;
			cur_stamp[j] = g;
			if (k > best.size)
			{
				best.i = i + 1 - k;
				best.j = j + 1 - k;
				best.size = k;
			}
		}
	}
	while (best.i > alo && best.j > blo && m->a[best.i - 1] == m->b[best.j - 1])
	{
		best.i--;
		best.j--;
		best.size++;
	}
	while (best.i + best.size < ahi && best.j + best.size < bhi &&
		   m->a[best.i + best.size] == m->b[best.j + best.size])
		best.size++;
	return best;
}

/*
 * M: the total size of the matching blocks.  Python recurses through a
 * queue; the blocks found do not depend on the order, so a stack serves.
 * Every range pushed holds at least one element of a and of b that no block
 * covers yet, so at most min(na, nb) + 1 are pending at once.
 */
static size_t
matched(matcher *m, range *stack)
{
	size_t		top = 0,
				total = 0;

	stack[top++] = (range) {0, m->na, 0, m->nb};
	while (top > 0)
	{
		range		r = stack[--top];
		block		x = longest_match(m, r.alo, r.ahi, r.blo, r.bhi);

		if (x.size == 0)
			continue;
		total += x.size;
		if (r.alo < x.i && r.blo < x.j)
			stack[top++] = (range) {r.alo, x.i, r.blo, x.j};
		if (x.i + x.size < r.ahi && x.j + x.size < r.bhi)
			stack[top++] = (range) {x.i + x.size, r.ahi, x.j + x.size, r.bhi};
	}
	return total;
}

/* The non-zero ASCII digits of t, as values 1..9; returns their number. */
static size_t
nonzero_digits(const cq_utext *t, uint8_t *out)
{
	size_t		n = 0;

	for (size_t i = 0; i < t->n; i++)
		if (t->cp[i] >= '1' && t->cp[i] <= '9')
			out[n++] = (uint8_t) (t->cp[i] - '0');
	return n;
}

cq_code
cq_numerals_match(const cq_utext *a, const cq_utext *b, double *ratio, cq_error *err)
{
	matcher		m = {0};
	uint8_t    *digits;
	range	   *stack;
	size_t		small;
	void	   *mem;
	size_t		bytes;

	/* one allocation: digits of a and b, pos, len[2], stamp[2], stack */
	bytes = a->n + b->n + 8;
	bytes += (b->n + 1) * (sizeof(size_t) * 3 + sizeof(uint64_t) * 2);
	small = (a->n < b->n ? a->n : b->n) + 1;
	bytes += small * sizeof(range) + 64;
	mem = cq_alloc(bytes);
	if (!mem)
		return cq_fail(err, CQ_ENOMEM, "out of memory comparing numerals");
	digits = mem;
	m.a = digits;
	m.na = nonzero_digits(a, digits);
	m.b = digits + m.na;
	m.nb = nonzero_digits(b, digits + m.na);
	if (m.na + m.nb == 0)
	{
		cq_free(mem);
		*ratio = 1.0;
		return CQ_OK;
	}
	{
		/* the arrays after the digits, aligned for their element types */
		uintptr_t	p = ((uintptr_t) (digits + m.na + m.nb) + 7) & ~(uintptr_t) 7;

		m.pos = (size_t *) p;
		m.len[0] = m.pos + m.nb + 1;
		m.len[1] = m.len[0] + m.nb + 1;
		m.stamp[0] = (uint64_t *) (m.len[1] + m.nb + 1);
		m.stamp[1] = m.stamp[0] + m.nb + 1;
		memset(m.stamp[0], 0, 2 * (m.nb + 1) * sizeof(uint64_t));
		stack = (range *) (m.stamp[1] + m.nb + 1);
	}
	m.gen = 1;
	index_b(&m);
	*ratio = 2.0 * (double) matched(&m, stack) / (double) (m.na + m.nb);
	cq_free(mem);
	return CQ_OK;
}
