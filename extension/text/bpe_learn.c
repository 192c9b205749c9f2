/* Incremental BPE learning: pair index, max-heap, word rewriting. */
#include "text/bpe_learn.h"

#include <string.h>

#include "common/mem.h"

typedef struct lpair
{
	int32_t		a,
				b;				/* symbol ids */
	int64_t		count;			/* sum of word counts over occurrences */
	int64_t		pending;		/* this step's change, not yet in count */
	int32_t		heap_pos;		/* -1 when not in the heap */
	int32_t		touched;		/* step that last changed count */
	int32_t    *words;			/* words that contain it (may be stale) */
	int32_t		n_words,
				cap_words;
} lpair;

struct cq_bpe_learner
{
	cq_strmap	syms;			/* symbol string -> id */
	int64_t		min_frequency;

	size_t		n_words;
	int32_t    *sym;			/* all words' symbols, flat */
	size_t	   *start;			/* [n_words] offset in sym */
	uint32_t   *len;			/* [n_words] current symbol count */
	int64_t    *freq;			/* [n_words] */
	int32_t    *stamp;			/* [n_words] step that last rewrote it */

	lpair	   *pairs;
	size_t		n_pairs,
				cap_pairs;
	cq_pairmap	index;			/* (a, b) -> pair */
	int32_t    *heap;			/* pair ids, best first */
	size_t		n_heap;

	int32_t    *touched;		/* pairs changed by this step */
	size_t		n_touched,
				cap_touched;
	int32_t    *new_sym;		/* scratch [max word length] */
	uint8_t    *old_mark,
			   *new_mark;

	int32_t    *merge_a,
			   *merge_b;
	int32_t		n_merges,
				cap_merges;
	int32_t		step;
	int64_t		last_count;
};

/* ---- the heap: (count, left string, right string), greatest on top ---- */

static int
sym_cmp(const cq_bpe_learner *l, int32_t x, int32_t y)
{
	size_t		nx,
				ny;
	const char *sx,
			   *sy;

	if (x == y)
		return 0;
	sx = cq_strmap_key(&l->syms, x, &nx);
	sy = cq_strmap_key(&l->syms, y, &ny);
	int			c = memcmp(sx, sy, nx < ny ? nx : ny);

	return c ? c : (nx > ny) - (nx < ny);
}

static int
better(const cq_bpe_learner *l, int32_t p, int32_t q)
{
	const lpair *x = &l->pairs[p],
			   *y = &l->pairs[q];

	if (x->count != y->count)
		return x->count > y->count;
	int			c = sym_cmp(l, x->a, y->a);

	if (c == 0)
		c = sym_cmp(l, x->b, y->b);
	return c > 0;
}

static void
heap_set(cq_bpe_learner *l, size_t i, int32_t p)
{
	l->heap[i] = p;
	l->pairs[p].heap_pos = (int32_t) i;
}

static void
heap_up(cq_bpe_learner *l, size_t i)
{
	int32_t		p = l->heap[i];

	while (i > 0 && better(l, p, l->heap[(i - 1) / 2]))
	{
		heap_set(l, i, l->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(l, i, p);
}

static void
heap_down(cq_bpe_learner *l, size_t i)
{
	int32_t		p = l->heap[i];

	for (;;)
	{
		size_t		c = 2 * i + 1;

		if (c >= l->n_heap)
			break;
		if (c + 1 < l->n_heap && better(l, l->heap[c + 1], l->heap[c]))
			c++;
		if (!better(l, l->heap[c], p))
			break;
		heap_set(l, i, l->heap[c]);
		i = c;
	}
	heap_set(l, i, p);
}

/* Restore the heap for pair p after its count changed. */
static void
heap_fix(cq_bpe_learner *l, int32_t p)
{
	lpair	   *x = &l->pairs[p];

	if (x->count <= 0)
	{
		/* no word holds the pair any more: its list is all stale */
		cq_free(x->words);
		x->words = NULL;
		x->n_words = x->cap_words = 0;
	}
	if (x->heap_pos < 0)
	{
		if (x->count <= 0)
			return;
		l->heap[l->n_heap++] = p;
		heap_up(l, l->n_heap - 1);
		return;
	}
	size_t		i = x->heap_pos;

	if (x->count <= 0)
	{
		int32_t		last = l->heap[--l->n_heap];

		x->heap_pos = -1;
		if (i == l->n_heap)
			return;
		heap_set(l, i, last);
		heap_up(l, i);
		heap_down(l, l->pairs[last].heap_pos);
		return;
	}
	heap_up(l, i);
	heap_down(l, l->pairs[p].heap_pos);
}

/* ---- pairs ---- */

/* *out = the pair (a, b), created with count 0 if absent; CQ_ENOMEM. */
static cq_code
pair_get(cq_bpe_learner *l, int32_t a, int32_t b, int32_t *out)
{
	int32_t		p = cq_pairmap_get(&l->index, a, b);

	if (p >= 0)
	{
		*out = p;
		return CQ_OK;
	}
	if (l->n_pairs == l->cap_pairs)
	{
		size_t		cap = l->cap_pairs * 2;
		lpair	   *np = cq_realloc(l->pairs, cap * sizeof(lpair));
		int32_t    *nh = cq_realloc(l->heap, cap * sizeof(int32_t));

		if (np)
			l->pairs = np;
		if (nh)
			l->heap = nh;
		if (!np || !nh)
			return CQ_ENOMEM;
		l->cap_pairs = cap;
	}
	p = (int32_t) l->n_pairs;
	if (cq_pairmap_put_new(&l->index, a, b, p, NULL) != CQ_OK)
		return CQ_ENOMEM;
	l->n_pairs++;
	l->pairs[p] = (lpair) {a, b, 0, 0, -1, -1, NULL, 0, 0};
	*out = p;
	return CQ_OK;
}

static cq_code
push_i32(int32_t **arr, int32_t *n, int32_t *cap, int32_t v)
{
	if (*n == *cap)
	{
		int32_t		c = *cap ? *cap * 2 : 4;
		int32_t    *a = cq_realloc(*arr, c * sizeof(int32_t));

		if (!a)
			return CQ_ENOMEM;
		*arr = a;
		*cap = c;
	}
	(*arr)[(*n)++] = v;
	return CQ_OK;
}

/*
 * count(a, b) += delta at the end of the step; with word >= 0 also list that
 * word for the pair.  Changes wait in "pending" so that the heap, repaired
 * one pair at a time, never compares against an unrepaired key.
 */
static cq_code
pair_add(cq_bpe_learner *l, int32_t a, int32_t b, int64_t delta, int32_t word)
{
	int32_t		p;

	if (pair_get(l, a, b, &p) != CQ_OK)
		return CQ_ENOMEM;

	lpair	   *x = &l->pairs[p];

	x->pending += delta;
	if (x->touched != l->step)
	{
		x->touched = l->step;
		if (l->n_touched == l->cap_touched)
		{
			size_t		c = l->cap_touched * 2;
			int32_t    *t = cq_realloc(l->touched, c * sizeof(int32_t));

			if (!t)
				return CQ_ENOMEM;
			l->touched = t;
			l->cap_touched = c;
		}
		l->touched[l->n_touched++] = p;
	}
	if (word >= 0 && (x->n_words == 0 || x->words[x->n_words - 1] != word))
		return push_i32(&x->words, &x->n_words, &x->cap_words, word);
	return CQ_OK;
}

/* ---- construction ---- */

/*
 * Intern word's characters (+ "</w>" on the last) into out[], *count of
 * them; CQ_ENOMEM, or CQ_ELIMIT past 2^31 symbols.
 */
static cq_code
word_symbols(cq_bpe_learner *l, const char *w, size_t n, int32_t *out, uint32_t *count)
{
	uint32_t	k = 0;
	char		buf[8];

	for (size_t p = 0; p < n;)
	{
		size_t		cl = cq_utf8_char_len(w + p, w + n);
		int64_t		id;
		cq_code		rc;

		if (p + cl == n)
		{
			memcpy(buf, w + p, cl);
			memcpy(buf + cl, CQ_BPE_EOW, 4);
			rc = cq_strmap_intern(&l->syms, buf, cl + 4, &id, NULL);
		}
		else
			rc = cq_strmap_intern(&l->syms, w + p, cl, &id, NULL);
		if (rc != CQ_OK)
			return rc;
		if (id > INT32_MAX)
			return CQ_ELIMIT;
		out[k++] = (int32_t) id;
		p += cl;
	}
	*count = k;
	return CQ_OK;
}

static cq_code
alloc_arrays(cq_bpe_learner *l, size_t n_words, size_t total, size_t max_len)
{
	l->sym = cq_alloc((total ? total : 1) * sizeof(int32_t));
	l->start = cq_alloc((n_words + 1) * sizeof(size_t));
	l->len = cq_alloc((n_words + 1) * sizeof(uint32_t));
	l->freq = cq_alloc((n_words + 1) * sizeof(int64_t));
	l->stamp = cq_alloc((n_words + 1) * sizeof(int32_t));
	l->new_sym = cq_alloc((max_len + 1) * sizeof(int32_t));
	l->old_mark = cq_alloc(max_len + 1);
	l->new_mark = cq_alloc(max_len + 1);
	l->cap_pairs = 1024;
	l->pairs = cq_alloc(l->cap_pairs * sizeof(lpair));
	l->heap = cq_alloc(l->cap_pairs * sizeof(int32_t));
	l->cap_touched = 256;
	l->touched = cq_alloc(l->cap_touched * sizeof(int32_t));
	if (!l->sym || !l->start || !l->len || !l->freq || !l->stamp ||
		!l->new_sym || !l->old_mark || !l->new_mark || !l->pairs ||
		!l->heap || !l->touched)
		return CQ_ENOMEM;
	return cq_pairmap_init(&l->index, 4096);
}

static cq_code
load_words(cq_bpe_learner *l, const cq_strmap *counts)
{
	size_t		total = 0,
				max_len = 0;

	for (size_t e = 0; e < counts->n; e++)
	{
		total += counts->key_len[e];
		if (counts->key_len[e] > max_len)
			max_len = counts->key_len[e];
	}
	if (alloc_arrays(l, counts->n, total, max_len) != CQ_OK ||
		cq_strmap_init(&l->syms, 1024) != CQ_OK)
		return CQ_ENOMEM;

	size_t		off = 0;

	for (size_t e = 0; e < counts->n; e++)
	{
		size_t		n;
		const char *w = cq_strmap_key(counts, e, &n);
		uint32_t	k;
		cq_code		rc;

		if (counts->vals[e] <= 0 || n == 0)
			continue;
		rc = word_symbols(l, w, n, l->sym + off, &k);
		if (rc != CQ_OK)
			return rc;
		l->start[l->n_words] = off;
		l->len[l->n_words] = k;
		l->freq[l->n_words] = counts->vals[e];
		l->stamp[l->n_words] = -1;
		l->n_words++;
		off += k;
	}
	return CQ_OK;
}

/* The message of a failure of the learner's inner calls (bare codes). */
static cq_code
learner_error(cq_error *err, cq_code code)
{
	if (code == CQ_ELIMIT)
		return cq_fail(err, code, "the words have more than 2^31 distinct symbols");
	return cq_fail(err, code, "out of memory");
}

cq_code
cq_bpe_learner_new(const cq_strmap *counts, int64_t min_frequency, cq_bpe_learner **out,
				   cq_error *err)
{
	cq_bpe_learner *l = cq_alloc0(sizeof(cq_bpe_learner));
	cq_code		rc;

	*out = NULL;
	if (!l)
		return learner_error(err, CQ_ENOMEM);
	l->min_frequency = min_frequency;
	l->step = -1;
	rc = load_words(l, counts);
	for (size_t w = 0; rc == CQ_OK && w < l->n_words; w++)
	{
		const int32_t *s = l->sym + l->start[w];

		for (uint32_t i = 0; rc == CQ_OK && i + 1 < l->len[w]; i++)
			rc = pair_add(l, s[i], s[i + 1], l->freq[w], (int32_t) w);
	}
	if (rc != CQ_OK)
	{
		cq_bpe_learner_free(l);
		return learner_error(err, rc);
	}
	for (size_t p = 0; p < l->n_pairs; p++)
	{
		l->pairs[p].count = l->pairs[p].pending;
		l->pairs[p].pending = 0;
		heap_fix(l, (int32_t) p);
	}
	l->n_touched = 0;
	l->step = 0;
	*out = l;
	return CQ_OK;
}

void
cq_bpe_learner_free(cq_bpe_learner *l)
{
	if (!l)
		return;
	for (size_t p = 0; p < l->n_pairs; p++)
		cq_free(l->pairs[p].words);
	cq_strmap_free(&l->syms);
	cq_pairmap_free(&l->index);
	cq_free(l->sym);
	cq_free(l->start);
	cq_free(l->len);
	cq_free(l->freq);
	cq_free(l->stamp);
	cq_free(l->pairs);
	cq_free(l->heap);
	cq_free(l->touched);
	cq_free(l->new_sym);
	cq_free(l->old_mark);
	cq_free(l->new_mark);
	cq_free(l->merge_a);
	cq_free(l->merge_b);
	cq_free(l);
}

/* ---- one merge ---- */

/*
 * Replace every (a, b) in word w, left to right without overlap, by s.  Only
 * pairs that overlap a merged position change: the old ones lose the word's
 * count, the new ones (all containing s) gain it and list the word.
 */
static cq_code
rewrite_word(cq_bpe_learner *l, int32_t w, int32_t a, int32_t b, int32_t s)
{
	int32_t    *sy = l->sym + l->start[w];
	uint32_t	n = l->len[w],
				o = 0;
	int64_t		f = l->freq[w];
	cq_code		rc = CQ_OK;

	for (uint32_t i = 0; i < n; o++)
	{
		if (i + 1 < n && sy[i] == a && sy[i + 1] == b)
		{
			l->old_mark[i] = l->old_mark[i + 1] = 1;
			l->new_sym[o] = s;
			l->new_mark[o] = 1;
			i += 2;
		}
		else
		{
			l->old_mark[i] = 0;
			l->new_sym[o] = sy[i];
			l->new_mark[o] = 0;
			i++;
		}
	}
	if (o == n)
		return CQ_OK;		/* stale entry: the word no longer has it */
	for (uint32_t k = 0; rc == CQ_OK && k + 1 < n; k++)
		if (l->old_mark[k] || l->old_mark[k + 1])
			rc = pair_add(l, sy[k], sy[k + 1], -f, -1);
	for (uint32_t k = 0; rc == CQ_OK && k + 1 < o; k++)
		if (l->new_mark[k] || l->new_mark[k + 1])
			rc = pair_add(l, l->new_sym[k], l->new_sym[k + 1], f, w);
	memcpy(sy, l->new_sym, o * sizeof(int32_t));
	l->len[w] = o;
	return rc;
}

static cq_code
record_merge(cq_bpe_learner *l, int32_t a, int32_t b)
{
	if (l->n_merges == l->cap_merges)
	{
		int32_t		c = l->cap_merges ? l->cap_merges * 2 : 256;
		int32_t    *x = cq_realloc(l->merge_a, c * sizeof(int32_t));

		if (!x)
			return CQ_ENOMEM;
		l->merge_a = x;
		x = cq_realloc(l->merge_b, c * sizeof(int32_t));
		if (!x)
			return CQ_ENOMEM;
		l->merge_b = x;
		l->cap_merges = c;
	}
	l->merge_a[l->n_merges] = a;
	l->merge_b[l->n_merges] = b;
	l->n_merges++;
	return CQ_OK;
}

/* *out = left + right interned as a symbol; CQ_ENOMEM, CQ_ELIMIT. */
static cq_code
concat_symbol(cq_bpe_learner *l, int32_t a, int32_t b, int32_t *out)
{
	size_t		na,
				nb;
	const char *sa = cq_strmap_key(&l->syms, a, &na);
	const char *sb = cq_strmap_key(&l->syms, b, &nb);
	char	   *buf = cq_alloc(na + nb);
	int64_t		id;
	cq_code		rc;

	if (!buf)
		return CQ_ENOMEM;
	memcpy(buf, sa, na);
	memcpy(buf + na, sb, nb);
	rc = cq_strmap_intern(&l->syms, buf, na + nb, &id, NULL);
	cq_free(buf);
	if (rc == CQ_OK && id > INT32_MAX)
		rc = CQ_ELIMIT;
	if (rc == CQ_OK)
		*out = (int32_t) id;
	return rc;
}

cq_code
cq_bpe_learner_step(cq_bpe_learner *l, bool *learned, cq_error *err)
{
	*learned = false;
	if (l->n_heap == 0)
		return CQ_OK;

	int32_t		p = l->heap[0];
	int32_t		a = l->pairs[p].a,
				b = l->pairs[p].b;

	if (l->pairs[p].count < l->min_frequency || l->n_merges == INT32_MAX - 1)
		return CQ_OK;
	l->last_count = l->pairs[p].count;

	int32_t		s;
	cq_code		rc = concat_symbol(l, a, b, &s);

	if (rc == CQ_OK)
		rc = record_merge(l, a, b);
	if (rc != CQ_OK)
		return learner_error(err, rc);
	*learned = true;
	l->step++;
	l->n_touched = 0;

	/* take the word list: no new occurrence of (a, b) can arise */
	int32_t    *words = l->pairs[p].words;
	int32_t		n_words = l->pairs[p].n_words;

	l->pairs[p].words = NULL;
	l->pairs[p].n_words = l->pairs[p].cap_words = 0;
	for (int32_t i = 0; rc == CQ_OK && i < n_words; i++)
	{
		int32_t		w = words[i];

		if (l->stamp[w] == l->step)
			continue;
		l->stamp[w] = l->step;
		rc = rewrite_word(l, w, a, b, s);
	}
	cq_free(words);
	for (size_t i = 0; i < l->n_touched; i++)
	{
		lpair	   *x = &l->pairs[l->touched[i]];

		x->count += x->pending;
		x->pending = 0;
		heap_fix(l, l->touched[i]);
	}
	return rc == CQ_OK ? CQ_OK : learner_error(err, rc);
}

int32_t
cq_bpe_learner_n_merges(const cq_bpe_learner *l)
{
	return l->n_merges;
}

int64_t
cq_bpe_learner_last_count(const cq_bpe_learner *l)
{
	return l->last_count;
}

cq_code
cq_bpe_learner_model(const cq_bpe_learner *l, cq_bpe *out, cq_error *err)
{
	if (cq_bpe_init(out, 2) != CQ_OK)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	for (int32_t i = 0; i < l->n_merges; i++)
	{
		size_t		na,
					nb;
		const char *sa = cq_strmap_key(&l->syms, l->merge_a[i], &na);
		const char *sb = cq_strmap_key(&l->syms, l->merge_b[i], &nb);
		cq_code		rc = cq_bpe_add_merge(out, sa, na, sb, nb, err);

		if (rc != CQ_OK)
		{
			cq_bpe_free(out);
			return rc;
		}
	}
	return CQ_OK;
}

cq_code
cq_bpe_learn(const cq_strmap *counts, int32_t max_merges, int64_t min_frequency,
			 bool (*keep_going) (void *arg), void *arg,
			 cq_bpe *out, cq_error *err)
{
	cq_bpe_learner *l;
	cq_code		rc = cq_bpe_learner_new(counts, min_frequency, &l, err);
	bool		learned = true;

	if (rc != CQ_OK)
		return rc;
	while (learned && cq_bpe_learner_n_merges(l) < max_merges)
	{
		if (keep_going && !keep_going(arg))
		{
			rc = cq_fail(err, CQ_STOPPED, "BPE learning stopped after %d merges",
						 cq_bpe_learner_n_merges(l));
			break;
		}
		rc = cq_bpe_learner_step(l, &learned, err);
		if (rc != CQ_OK)
			break;
	}
	if (rc == CQ_OK)
		rc = cq_bpe_learner_model(l, out, err);
	cq_bpe_learner_free(l);
	return rc;
}
