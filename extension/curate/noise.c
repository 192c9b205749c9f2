/* Synthetic noise (noise.h has the definition of every type). */
#include "curate/noise.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/interrupt.h"
#include "common/mem.h"
#include "common/rng.h"
#include "curate/words.h"

/* Draws for a partner that differs: more than this means the inputs are
 * (nearly) all equal, which is the caller's mistake to hear about. */
#define MAX_ATTEMPTS 64
/* Neighbours looked at on each side before giving up. */
#define MAX_NEIGHBOURS 1024

/* What a draw is for: the third counter word, so draws never collide. */
enum purpose
{
	P_BASE, P_OTHER, P_CUT, P_EDIT, P_MARK
};

static const char *const names[CQ_NOISE_NTYPES] = {
	"clean", "misaligned_neighbour", "misaligned_random", "truncated_tgt",
	"truncated_src", "appended_tgt", "appended_src", "untranslated",
	"untranslated_edited", "wrong_language", "markup"
};

typedef struct gen
{
	const cq_str *src,
			   *tgt,
			   *other;
	size_t		n,
				m;
	cq_philox_key key;
	size_t	   *elig;			/* the pairs the current type can use */
	size_t		n_elig;
	cq_noise_set *out;
	cq_error   *err;
} gen;

void
cq_noise_options_default(cq_noise_options *o)
{
	static const double def[CQ_NOISE_NTYPES] = {
		0, 0.15, 0.15, 0.15, 0.15, 0.10, 0.05, 0.10, 0.10, 0.15, 0.05
	};

	o->seed = 1;
	memcpy(o->share, def, sizeof(def));
}

const char *
cq_noise_name(cq_noise_type t)
{
	return (int) t >= 0 && t < CQ_NOISE_NTYPES ? names[t] : NULL;
}

int
cq_noise_lookup(const char *name)
{
	for (int t = 0; t < CQ_NOISE_NTYPES; t++)
		if (strcmp(names[t], name) == 0)
			return t;
	return -1;
}

/* Four words at counter (k, type, purpose, attempt). */
static cq_philox_ctr
draw(const gen *g, size_t k, int t, int purpose, int attempt)
{
	cq_philox_ctr c = {{(uint32_t) k, (uint32_t) t, (uint32_t) purpose, (uint32_t) attempt}};

	return cq_philox4x32(c, g->key);
}

/* r scaled to [0, n): the high word of the 64-bit product (no modulo bias
 * worth the name for n < 2^31). */
static size_t
below(uint32_t r, size_t n)
{
	return (size_t) (((uint64_t) r * n) >> 32);
}

static bool
str_eq(cq_str a, cq_str b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.s, b.s, a.len) == 0);
}

static cq_code
own(gen *g, char *s)
{
	cq_noise_set *o = g->out;

	if (o->n_owned == o->cap_owned)
	{
		size_t		cap = o->cap_owned ? o->cap_owned * 2 : 64;
		char	  **p = cq_realloc(o->owned, cap * sizeof(char *));

		if (!p)
		{
			cq_free(s);
			return cq_fail(g->err, CQ_ENOMEM, "out of memory making noise");
		}
		o->owned = p;
		o->cap_owned = cap;
	}
	o->owned[o->n_owned++] = s;
	return CQ_OK;
}

/* a, a space, b: a new string owned by the set. */
static cq_code
concat(gen *g, cq_str a, cq_str b, cq_str *res)
{
	char	   *s = cq_alloc(a.len + b.len + 2);

	if (!s)
		return cq_fail(g->err, CQ_ENOMEM, "out of memory making noise");
	memcpy(s, a.s, a.len);
	s[a.len] = ' ';
	memcpy(s + a.len + 1, b.s, b.len);
	s[a.len + b.len + 1] = '\0';
	*res = (cq_str) {s, a.len + b.len + 1};
	return own(g, s);
}

/* Whether pair i can be the base of type t. */
static bool
eligible(const gen *g, int t, size_t i)
{
	switch (t)
	{
		case CQ_NOISE_TRUNCATED_TGT:
			return cq_words_count(g->tgt[i].s, g->tgt[i].len) >= 2;
		case CQ_NOISE_TRUNCATED_SRC:
		case CQ_NOISE_UNTRANSLATED_EDITED:
			return cq_words_count(g->src[i].s, g->src[i].len) >= 2;
		case CQ_NOISE_UNTRANSLATED:
			return !str_eq(g->src[i], g->tgt[i]);
		case CQ_NOISE_MARKUP:
			return cq_words_count(g->src[i].s, g->src[i].len) >= 1 &&
				cq_words_count(g->tgt[i].s, g->tgt[i].len) >= 1;
		default:
			return true;
	}
}

static cq_code
collect_eligible(gen *g, int t)
{
	g->n_elig = 0;
	for (size_t i = 0; i < g->n; i++)
		if (eligible(g, t, i))
			g->elig[g->n_elig++] = i;
	if (g->n_elig == 0)
		return cq_fail(g->err, CQ_EINVAL, "no pair can be made %s (%s)", names[t],
					   t == CQ_NOISE_UNTRANSLATED ? "every source equals its target"
					   : t == CQ_NOISE_MARKUP ? "no pair has a word on each side"
					   : "no side to cut or edit has 2 words");
	return CQ_OK;
}

/* A random other pair whose side (tgt or src) differs from the base's. */
static cq_code
pick_other(gen *g, size_t k, int t, size_t base, const cq_str *side, size_t *j)
{
	for (int a = 0; a < MAX_ATTEMPTS; a++)
	{
		size_t		c = below(draw(g, k, t, P_OTHER, a).c[0], g->n);

		if (c != base && !str_eq(side[c], side[base]))
		{
			*j = c;
			return CQ_OK;
		}
	}
	return cq_fail(g->err, CQ_EINVAL, "no pair with a different %s found in %d draws for %s "
				   "(are the pairs nearly all equal?)", side == g->tgt ? "target" : "source",
				   MAX_ATTEMPTS, names[t]);
}

static cq_code
pick_neighbour(gen *g, size_t base, size_t *j)
{
	for (size_t d = 1; d <= MAX_NEIGHBOURS && d < g->n; d++)
	{
		*j = base + d;
		if (*j < g->n && !str_eq(g->tgt[*j], g->tgt[base]))
			return CQ_OK;
		*j = base - d;
		if (base >= d && !str_eq(g->tgt[*j], g->tgt[base]))
			return CQ_OK;
	}
	return cq_fail(g->err, CQ_EINVAL, "clean pair %zu (counted from 1) has no neighbour with a "
				   "different target within %d pairs", base + 1, MAX_NEIGHBOURS);
}

static cq_code
pick_foreign(gen *g, size_t k, size_t base, size_t *j)
{
	for (int a = 0; a < MAX_ATTEMPTS; a++)
	{
		*j = below(draw(g, k, CQ_NOISE_WRONG_LANGUAGE, P_OTHER, a).c[0], g->m);
		if (!str_eq(g->other[*j], g->tgt[base]))
			return CQ_OK;
	}
	return cq_fail(g->err, CQ_EINVAL, "no other-language sentence differs from the targets "
				   "in %d draws", MAX_ATTEMPTS);
}

/* The first k words of s, k in [ceil(0.3 w), floor(0.7 w)] and [1, w - 1],
 * in integers so that 0.3 * 10 cannot round up to 4: a prefix of s. */
static cq_code
truncate_words(gen *g, cq_str s, uint32_t r, cq_str *res)
{
	cq_words	w;
	cq_code		rc = cq_words_split(s.s, s.len, &w, g->err);
	size_t		lo,
				hi;

	if (rc != CQ_OK)
		return rc;
	lo = (3 * w.n + 9) / 10;
	hi = 7 * w.n / 10;
	lo = lo < 1 ? 1 : lo;
	hi = hi > w.n - 1 ? w.n - 1 : hi;
	*res = (cq_str) {s.s, w.w[lo + below(r, hi - lo + 1) - 1].end};
	cq_words_free(&w);
	return CQ_OK;
}

/* One edit on the word order: drop a word (when 3 or more are left, so an
 * edited copy keeps most of the source) or swap two neighbours. */
static void
edit_once(cq_span *w, size_t *n, uint32_t r1, uint32_t r2)
{
	if (*n >= 3 && (r1 & 1))
	{
		size_t		i = below(r2, *n);

		memmove(w + i, w + i + 1, (*n - i - 1) * sizeof(cq_span));
		(*n)--;
	}
	else
	{
		size_t		i = below(r2, *n - 1);
		cq_span		tmp = w[i];

		w[i] = w[i + 1];
		w[i + 1] = tmp;
	}
}

/* The words w[0..n) of s joined by single spaces, into buf. */
static size_t
join_words(cq_str s, const cq_span *w, size_t n, char *buf)
{
	size_t		len = 0;

	for (size_t i = 0; i < n; i++)
	{
		if (i)
			buf[len++] = ' ';
		memcpy(buf + len, s.s + w[i].start, w[i].end - w[i].start);
		len += w[i].end - w[i].start;
	}
	buf[len] = '\0';
	return len;
}

/* The source with 1-2 edits; if the edits gave the source back (a swap of
 * two equal words), its last word is dropped too, so it always differs. */
static cq_code
edit_copy(gen *g, cq_str s, cq_philox_ctr r, cq_str *res)
{
	cq_words	w;
	cq_code		rc = cq_words_split(s.s, s.len, &w, g->err);
	size_t		n,
				len;
	char	   *buf;

	if (rc != CQ_OK)
		return rc;
	n = w.n;
	edit_once(w.w, &n, r.c[0] >> 1, r.c[1]);
	if (r.c[0] & 1)
		edit_once(w.w, &n, r.c[2], r.c[3]);
	buf = cq_alloc(s.len + 1);
	if (!buf)
	{
		cq_words_free(&w);
		return cq_fail(g->err, CQ_ENOMEM, "out of memory making noise");
	}
	len = join_words(s, w.w, n, buf);
	if (len == s.len && memcmp(buf, s.s, len) == 0)
		len = join_words(s, w.w, n - 1, buf);
	cq_words_free(&w);
	*res = (cq_str) {buf, len};
	return own(g, buf);
}

/* s[0..at), open, s[from..to), close, s[to..): a new string owned by the set. */
static cq_code
insert_tags(gen *g, cq_str s, size_t from, size_t to, const char *open,
			const char *close, cq_str *res)
{
	size_t		lo = strlen(open),
				lc = strlen(close),
				len = s.len + lo + lc;
	char	   *buf = cq_alloc(len + 1);

	if (!buf)
		return cq_fail(g->err, CQ_ENOMEM, "out of memory making noise");
	memcpy(buf, s.s, from);
	memcpy(buf + from, open, lo);
	memcpy(buf + from + lo, s.s + from, to - from);
	memcpy(buf + to + lo, close, lc);
	memcpy(buf + to + lo + lc, s.s + to, s.len - to);
	buf[len] = '\0';
	*res = (cq_str) {buf, len};
	return own(g, buf);
}

/*
 * Markup a crawler leaves on one side: the side wrapped in a block element,
 * a line break after a word, a word in an inline element or in a link.
 * One side only: markup on both sides is what localisation strings carry
 * (1,419 of the shared l10n corpus's 42,124 pairs, 13 with it on one side),
 * so it is no sign of noise by itself; on one side it is.
 */
static cq_code
add_markup(gen *g, cq_str s, cq_philox_ctr r, cq_str *res)
{
	static const char *const blocks[] = {"p", "li", "td", "span", "h3"};
	static const char *const inlines[] = {"b", "i", "em", "strong", "u"};
	static const char *const breaks[] = {"<br>", "<br/>", "<br />"};
	char		open[16],
				close[16];
	cq_words	w;
	cq_code		rc;
	cq_span		word;

	if (below(r.c[1], 4) == 0)
	{
		const char *e = blocks[below(r.c[2], 5)];

		snprintf(open, sizeof(open), "<%s>", e);
		snprintf(close, sizeof(close), "</%s>", e);
		return insert_tags(g, s, 0, s.len, open, close, res);
	}
	if ((rc = cq_words_split(s.s, s.len, &w, g->err)) != CQ_OK)
		return rc;
	word = w.w[below(r.c[3], w.n)];
	cq_words_free(&w);
	switch (below(r.c[1], 4))
	{
		case 1:
			return insert_tags(g, s, word.end, word.end, breaks[below(r.c[2], 3)], "", res);
		case 2:
			snprintf(open, sizeof(open), "<%s>", inlines[below(r.c[2], 5)]);
			snprintf(close, sizeof(close), "</%s>", inlines[below(r.c[2], 5)]);
			return insert_tags(g, s, word.start, word.end, open, close, res);
		default:
			return insert_tags(g, s, word.start, word.end, "<a href=\"#\">", "</a>", res);
	}
}

/* The pair's texts, given its type, base and partner. */
static cq_code
make_texts(gen *g, size_t k, int t, cq_noise_pair *p)
{
	size_t		b = (size_t) p->base,
				j = 0;
	cq_code		rc = CQ_OK;

	p->src = g->src[b];
	p->tgt = g->tgt[b];
	switch (t)
	{
		case CQ_NOISE_MISALIGNED_NEIGHBOUR:
			if ((rc = pick_neighbour(g, b, &j)) == CQ_OK)
				p->tgt = g->tgt[j];
			break;
		case CQ_NOISE_MISALIGNED_RANDOM:
			if ((rc = pick_other(g, k, t, b, g->tgt, &j)) == CQ_OK)
				p->tgt = g->tgt[j];
			break;
		case CQ_NOISE_TRUNCATED_TGT:
			return truncate_words(g, g->tgt[b], draw(g, k, t, P_CUT, 0).c[0], &p->tgt);
		case CQ_NOISE_TRUNCATED_SRC:
			return truncate_words(g, g->src[b], draw(g, k, t, P_CUT, 0).c[0], &p->src);
		case CQ_NOISE_APPENDED_TGT:
			if ((rc = pick_other(g, k, t, b, g->tgt, &j)) == CQ_OK)
				rc = concat(g, g->tgt[b], g->tgt[j], &p->tgt);
			break;
		case CQ_NOISE_APPENDED_SRC:
			if ((rc = pick_other(g, k, t, b, g->src, &j)) == CQ_OK)
				rc = concat(g, g->src[b], g->src[j], &p->src);
			break;
		case CQ_NOISE_UNTRANSLATED:
			p->tgt = g->src[b];
			return CQ_OK;
		case CQ_NOISE_UNTRANSLATED_EDITED:
			return edit_copy(g, g->src[b], draw(g, k, t, P_EDIT, 0), &p->tgt);
		case CQ_NOISE_WRONG_LANGUAGE:
			if ((rc = pick_foreign(g, k, b, &j)) == CQ_OK)
				p->tgt = g->other[j];
			break;
		case CQ_NOISE_MARKUP:
			{
				cq_philox_ctr r = draw(g, k, t, P_MARK, 0);

				return r.c[0] & 1 ? add_markup(g, g->src[b], r, &p->src)
					: add_markup(g, g->tgt[b], r, &p->tgt);
			}
	}
	p->other = rc == CQ_OK ? (int64_t) j : -1;
	return rc;
}

static cq_code
make_type(gen *g, int t, size_t count)
{
	cq_code		rc;

	if (count == 0)
		return CQ_OK;
	if ((rc = collect_eligible(g, t)) != CQ_OK)
		return rc;
	for (size_t k = 0; k < count; k++)
	{
		cq_noise_pair *p = &g->out->pairs[g->out->n];

		if (k % 1024 == 0)
			cq_poll();			/* safe: only cq_alloc memory is held */
		p->type = (cq_noise_type) t;
		p->base = (int64_t) g->elig[below(draw(g, k, t, P_BASE, 0).c[0], g->n_elig)];
		p->other = -1;
		if ((rc = make_texts(g, k, t, p)) != CQ_OK)
			return rc;
		g->out->n++;
	}
	return CQ_OK;
}

static size_t
type_count(const gen *g, const cq_noise_options *o, int t)
{
	if (t == CQ_NOISE_WRONG_LANGUAGE && g->m == 0)
		return 0;
	return (size_t) llround(o->share[t] * (double) g->n);
}

static cq_code
check_inputs(size_t n, size_t m, const cq_noise_options *o, cq_error *err)
{
	if (n < 2)
		return cq_fail(err, CQ_EINVAL, "synthetic noise needs at least 2 clean pairs, not %zu", n);
	if (n > INT32_MAX || m > INT32_MAX)
		return cq_fail(err, CQ_ELIMIT, "synthetic noise takes at most %d pairs and sentences",
					   INT32_MAX);
	for (int t = 1; t < CQ_NOISE_NTYPES; t++)
		if (!(o->share[t] >= 0 && o->share[t] <= 10))
			return cq_fail(err, CQ_EINVAL, "share of %s must be in [0, 10], not %g",
						   names[t], o->share[t]);
	return CQ_OK;
}

static cq_code
generate(gen *g, const cq_noise_options *o)
{
	size_t		total = g->n;
	cq_code		rc;

	for (int t = 1; t < CQ_NOISE_NTYPES; t++)
		total += type_count(g, o, t);
	g->out->pairs = cq_alloc(total * sizeof(cq_noise_pair));
	g->elig = cq_alloc(g->n * sizeof(size_t));
	if (!g->out->pairs || !g->elig)
		return cq_fail(g->err, CQ_ENOMEM, "out of memory for %zu noise pairs", total);
	for (size_t i = 0; i < g->n; i++)
		g->out->pairs[g->out->n++] = (cq_noise_pair) {CQ_NOISE_CLEAN, (int64_t) i, -1,
		g->src[i], g->tgt[i]};
	for (int t = 1; t < CQ_NOISE_NTYPES; t++)
		if ((rc = make_type(g, t, type_count(g, o, t))) != CQ_OK)
			return rc;
	return CQ_OK;
}

cq_code
cq_noise_generate(const cq_str *src, const cq_str *tgt, size_t n,
				  const cq_str *other, size_t m,
				  const cq_noise_options *o, cq_noise_set *out, cq_error *err)
{
	gen			g = {src, tgt, other, n, other ? m : 0,
		cq_philox_key_from_seed(o->seed), NULL, 0, out, err};
	cq_code		rc;

	memset(out, 0, sizeof(*out));
	if ((rc = check_inputs(n, g.m, o, err)) != CQ_OK)
		return rc;
	rc = generate(&g, o);
	cq_free(g.elig);
	if (rc != CQ_OK)
		cq_noise_set_free(out);
	return rc;
}

void
cq_noise_set_free(cq_noise_set *set)
{
	for (size_t i = 0; i < set->n_owned; i++)
		cq_free(set->owned[i]);
	cq_free(set->owned);
	cq_free(set->pairs);
	memset(set, 0, sizeof(*set));
}
