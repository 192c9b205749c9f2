#include "metrics/chrf.h"

#include <string.h>

#include "metrics/unicode.h"

void
cq_chrf_options_init(cq_chrf_options *o)
{
	o->char_order = 6;
	o->word_order = 0;
	o->beta = 2.0;
	o->lowercase = false;
	o->whitespace = false;
	o->eps_smoothing = false;
}

int
cq_chrf_nstats(const cq_chrf_options *o)
{
	return 3 * (o->char_order + o->word_order);
}

/* string.punctuation, the set chrF's word split looks at */
static bool
is_ascii_punct(uint32_t c)
{
	return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) ||
		(c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}

/*
 * chrF++'s words (sacreBLEU's _remove_punctuation, after Popović's
 * chrF++.py): whitespace-split words, where a punctuation mark at the end of
 * a word of two or more characters, or else at its start, is cut off as a
 * word of its own.
 */
static bool
split_words(const cq_cpbuf *text, cq_spans *split, cq_spans *words)
{
	if (!cq_split_whitespace(text->v, text->n, split))
		return false;
	words->n = 0;
	for (size_t i = 0; i < split->n; i++)
	{
		cq_span		w = split->v[i];
		bool		ok;

		if (w.len > 1 && is_ascii_punct(text->v[w.off + w.len - 1]))
			ok = cq_spans_push(words, (cq_span) {w.off, w.len - 1}) &&
				cq_spans_push(words, (cq_span) {w.off + w.len - 1, 1});
		else if (w.len > 1 && is_ascii_punct(text->v[w.off]))
			ok = cq_spans_push(words, (cq_span) {w.off, 1}) &&
				cq_spans_push(words, (cq_span) {w.off + 1, w.len - 1});
		else
			ok = cq_spans_push(words, w);
		if (!ok)
			return false;
	}
	return true;
}

/* Sequence seq: the (lowercased) text, its characters without whitespace
 * (unless whitespace is kept), and its words if word n-grams are asked for. */
static bool
preprocess(const cq_chrf_options *o, const char *s, size_t len, cq_metrics_work *w, int seq)
{
	const cq_cpbuf *in = cq_metrics_decode(w, s, len, o->lowercase);
	cq_cpbuf   *text = &w->text[seq],
			   *chars = &w->chars[seq];

	if (in == NULL || !cq_cpbuf_reserve(text, in->n + 1) || !cq_cpbuf_reserve(chars, in->n + 1))
		return false;
	memcpy(text->v, in->v, in->n * sizeof(uint32_t));
	text->n = in->n;
	chars->n = 0;
	for (size_t i = 0; i < in->n; i++)
		if (o->whitespace || !cq_uc_isspace(in->v[i]))
			cq_cpbuf_put(chars, in->v[i]);
	if (o->word_order > 0)
		return split_words(text, &w->split, &w->spans[seq]);
	w->spans[seq].n = 0;
	return true;
}

static bool
prep(const void *o, const char *s, size_t len, cq_metrics_work *w, int seq)
{
	return preprocess(o, s, len, w, seq);
}

static int64_t
ngrams_of(size_t len, int n)
{
	return (int64_t) len - n + 1 > 0 ? (int64_t) len - n + 1 : 0;
}

/* [hyp, ref, match] per order; hyp counts 0 where the reference has no
 * n-gram of the order, as sacreBLEU's _get_match_statistics does. */
static void
fill_triples(int64_t *stats, int first, int orders, size_t hyp_n, size_t ref_n, const int64_t *match)
{
	for (int k = 1; k <= orders; k++)
	{
		int64_t    *t = stats + 3 * (first + k - 1);
		int64_t		r = ngrams_of(ref_n, k);

		t[0] = r > 0 ? ngrams_of(hyp_n, k) : 0;
		t[1] = r;
		t[2] = match[k - 1];
	}
}

static bool
stats_against(const cq_chrf_options *o, cq_metrics_work *w, int ref, int64_t *stats)
{
	int64_t		match[CQ_NGRAM_MAX_ORDER];
	const uint32_t *r = w->chars[ref].v;
	size_t		rn = w->chars[ref].n;

	if (!cq_ngram_matches(w->chars[0].v, w->chars[0].n, &r, &rn, 1, o->char_order, match, &w->ngram))
		return false;
	fill_triples(stats, 0, o->char_order, w->chars[0].n, rn, match);
	if (o->word_order > 0)
	{
		r = w->ids[ref].v;
		rn = w->ids[ref].n;
		if (!cq_ngram_matches(w->ids[0].v, w->ids[0].n, &r, &rn, 1, o->word_order, match, &w->ngram))
			return false;
		fill_triples(stats, o->char_order, o->word_order, w->ids[0].n, rn, match);
	}
	return true;
}

static cq_code
check_args(const cq_chrf_options *o, size_t hyp_len, const size_t *ref_lens, int nrefs, cq_error *err)
{
	cq_code		rc = cq_metrics_check_texts(hyp_len, ref_lens, nrefs, err);

	if (rc)
		return rc;
	if (o->char_order < 1 || o->char_order > CQ_CHRF_MAX_CHAR_ORDER ||
		o->word_order < 0 || o->word_order > CQ_CHRF_MAX_WORD_ORDER)
		return cq_fail(err, CQ_EINVAL, "char_order must be between 1 and %d and word_order between 0 and %d",
					   CQ_CHRF_MAX_CHAR_ORDER, CQ_CHRF_MAX_WORD_ORDER);
	return CQ_OK;
}

cq_code
cq_chrf_sentence_stats(const cq_chrf_options *o, const char *hyp, size_t hyp_len,
					   const char *const *refs, const size_t *ref_lens, int nrefs,
					   cq_metrics_work *w, int64_t *stats, cq_error *err)
{
	int64_t		cand[CQ_CHRF_MAX_STATS];
	double		best = -1.0;
	int			ns = cq_chrf_nstats(o);
	cq_code		rc = check_args(o, hyp_len, ref_lens, nrefs, err);

	if (rc != CQ_OK)
		return rc;
	rc = cq_metrics_prepare(w, prep, o, hyp, hyp_len, refs, ref_lens, nrefs, err);
	if (rc != CQ_OK)
		return rc;
	if (o->word_order > 0 &&
		!cq_intern_tokens(w->text, w->spans, nrefs + 1, w->ids, &w->intern))
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	for (int r = 0; r < nrefs; r++)
	{
		double		f;

		if (!stats_against(o, w, r + 1, cand))
			return cq_fail(err, CQ_ENOMEM, "out of memory");
		f = cq_chrf_score(o, cand);
		if (f > best)
		{
			best = f;
			memcpy(stats, cand, ns * sizeof(int64_t));
		}
	}
	return CQ_OK;
}

/*
 * sacreBLEU's CHRF._compute_f_score, operation for operation: per order the
 * precision and recall (1e-16 where undefined) and their F-beta; by default
 * the F-beta of precision and recall averaged over the orders where both
 * sides have n-grams ("effective order"), with eps_smoothing the mean of the
 * per-order F-beta over all orders.
 */
double
cq_chrf_score(const cq_chrf_options *o, const int64_t *stats)
{
	const double eps = 1e-16;
	double		factor = o->beta * o->beta,
				score = 0.0,
				avg_prec = 0.0,
				avg_rec = 0.0;
	int			order = o->char_order + o->word_order,
				effective = 0;

	for (int i = 0; i < order; i++)
	{
		int64_t		n_hyp = stats[3 * i],
					n_ref = stats[3 * i + 1],
					n_match = stats[3 * i + 2];
		double		prec = n_hyp > 0 ? (double) n_match / (double) n_hyp : eps,
					rec = n_ref > 0 ? (double) n_match / (double) n_ref : eps,
					denom = factor * prec + rec;

		score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
		if (n_hyp > 0 && n_ref > 0)
		{
			avg_prec += prec;
			avg_rec += rec;
			effective++;
		}
	}
	if (o->eps_smoothing)
		return 100 * score / order;
	if (effective == 0)
		avg_prec = avg_rec = 0.0;
	else
	{
		avg_prec /= effective;
		avg_rec /= effective;
	}
	if (avg_prec + avg_rec != 0.0)
	{
		score = (1 + factor) * avg_prec * avg_rec;
		score /= (factor * avg_prec) + avg_rec;
		return 100 * score;
	}
	return 0.0;
}

double
cq_chrf_score_row(const int64_t *stats, const void *options)
{
	return cq_chrf_score(options, stats);
}
