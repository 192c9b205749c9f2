/*
 * Dice coefficients of multisets (features.h defines each): the copy ratios
 * and the punctuation agreement.  Each side becomes a sorted array of keys
 * and one merge counts sum_x min(n_a(x), n_b(x)).
 */
#include "curate/features.h"

#include <stdlib.h>
#include <string.h>
#include <unicode/uchar.h>

#include "common/mem.h"
#include "curate/words.h"

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

/* sum_x min(n_a(x), n_b(x)) of two sorted arrays, by any order cmp. */
static size_t
common_sorted(const void *a, size_t na, const void *b, size_t nb, size_t size,
			  int (*cmp) (const void *, const void *))
{
	size_t		i = 0,
				j = 0,
				common = 0;

	while (i < na && j < nb)
	{
		int			c = cmp((const char *) a + i * size, (const char *) b + j * size);

		common += c == 0;
		i += c <= 0;
		j += c >= 0;
	}
	return common;
}

static double
dice(size_t common, size_t na, size_t nb, double none)
{
	return na + nb == 0 ? none : 2.0 * (double) common / (double) (na + nb);
}

/* Dice of two u64 key arrays (sorted here). */
static double
dice_u64(uint64_t *a, size_t na, uint64_t *b, size_t nb, double none)
{
	qsort(a, na, sizeof(uint64_t), cmp_u64);
	qsort(b, nb, sizeof(uint64_t), cmp_u64);
	return dice(common_sorted(a, na, b, nb, sizeof(uint64_t), cmp_u64), na, nb, none);
}

typedef struct word
{
	const char *s;
	size_t		len;
} word;

static int
cmp_word(const void *a, const void *b)
{
	const word *x = a,
			   *y = b;
	size_t		n = x->len < y->len ? x->len : y->len;
	int			c = memcmp(x->s, y->s, n);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The words of s as sorted (pointer, length) pairs. */
static cq_code
sorted_words(const char *s, size_t len, word **out, size_t *n, cq_error *err)
{
	cq_words	w;
	cq_code		rc = cq_words_split(s, len, &w, err);

	if (rc != CQ_OK)
		return rc;
	*n = w.n;
	*out = cq_alloc((w.n + 1) * sizeof(word));
	if (!*out)
	{
		cq_words_free(&w);
		return cq_fail(err, CQ_ENOMEM, "out of memory comparing words");
	}
	for (size_t i = 0; i < w.n; i++)
		(*out)[i] = (word) {s + w.w[i].start, w.w[i].end - w.w[i].start};
	cq_words_free(&w);
	qsort(*out, *n, sizeof(word), cmp_word);
	return CQ_OK;
}

cq_code
cq_copy_tokens(const char *a, size_t alen, const char *b, size_t blen, double *d, cq_error *err)
{
	word	   *wa = NULL,
			   *wb = NULL;
	size_t		na = 0,
				nb = 0;
	cq_code		rc = sorted_words(a, alen, &wa, &na, err);

	if (rc == CQ_OK)
		rc = sorted_words(b, blen, &wb, &nb, err);
	if (rc == CQ_OK)
		*d = dice(common_sorted(wa, na, wb, nb, sizeof(word), cmp_word), na, nb, 0.0);
	cq_free(wa);
	cq_free(wb);
	return rc;
}

/* Trigram i of t: three code points (< 2^21 each) packed without loss. */
static uint64_t
trigram(const cq_utext *t, size_t i)
{
	return (uint64_t) t->cp[i] << 42 | (uint64_t) t->cp[i + 1] << 21 | (uint64_t) t->cp[i + 2];
}

static uint64_t *
trigrams(const cq_utext *t, size_t *n)
{
	uint64_t   *g;

	*n = t->n >= 3 ? t->n - 2 : 0;
	g = cq_alloc((*n + 1) * sizeof(uint64_t));
	for (size_t i = 0; g && i < *n; i++)
		g[i] = trigram(t, i);
	return g;
}

static bool
utext_eq(const cq_utext *a, const cq_utext *b)
{
	return a->n == b->n && (a->n == 0 || memcmp(a->cp, b->cp, a->n * sizeof(int32_t)) == 0);
}

cq_code
cq_copy_chars(const cq_utext *a, const cq_utext *b, double *d, cq_error *err)
{
	size_t		na,
				nb;
	uint64_t   *ga = trigrams(a, &na),
			   *gb = trigrams(b, &nb);
	cq_code		rc = CQ_OK;

	if (!ga || !gb)
		rc = cq_fail(err, CQ_ENOMEM, "out of memory comparing characters");
	else if (na == 0 || nb == 0)
		*d = utext_eq(a, b) ? 1.0 : 0.0;
	else
		*d = dice_u64(ga, na, gb, nb, 0.0);
	cq_free(ga);
	cq_free(gb);
	return rc;
}

static uint64_t *
punctuation(const cq_utext *t, size_t *n)
{
	uint64_t   *p = cq_alloc((t->n + 1) * sizeof(uint64_t));

	*n = 0;
	for (size_t i = 0; p && i < t->n; i++)
		if (u_ispunct(t->cp[i]))
			p[(*n)++] = (uint64_t) t->cp[i];
	return p;
}

cq_code
cq_punct_dice(const cq_utext *a, const cq_utext *b, double *d, cq_error *err)
{
	size_t		na,
				nb;
	uint64_t   *pa = punctuation(a, &na),
			   *pb = punctuation(b, &nb);
	cq_code		rc = CQ_OK;

	if (!pa || !pb)
		rc = cq_fail(err, CQ_ENOMEM, "out of memory comparing punctuation");
	else
		*d = dice_u64(pa, na, pb, nb, 1.0);
	cq_free(pa);
	cq_free(pb);
	return rc;
}
