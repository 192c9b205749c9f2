#include "metrics/bleu.h"

#include <math.h>
#include <string.h>

#include "common/mem.h"

static const char *const smooth_names[CQ_SMOOTH_COUNT] = {"none", "floor", "add-k", "exp"};

void
cq_bleu_options_init(cq_bleu_options *o)
{
	o->tokenize = CQ_TOK_13A;
	o->lowercase = false;
	o->smooth = CQ_SMOOTH_EXP;
	o->smooth_value = 0.0;
	o->effective_order = false;
	o->max_order = CQ_BLEU_ORDER;
}

const char *
cq_bleu_smooth_name(cq_bleu_smooth s)
{
	return (unsigned) s < CQ_SMOOTH_COUNT ? smooth_names[s] : "?";
}

bool
cq_bleu_smooth_from_name(const char *name, cq_bleu_smooth *s)
{
	for (int i = 0; i < CQ_SMOOTH_COUNT; i++)
		if (strcmp(name, smooth_names[i]) == 0)
		{
			*s = (cq_bleu_smooth) i;
			return true;
		}
	return false;
}

double
cq_bleu_smooth_default(cq_bleu_smooth s)
{
	return s == CQ_SMOOTH_FLOOR ? 0.1 : s == CQ_SMOOTH_ADD_K ? 1.0 : 0.0;
}

/* lowercase, rstrip, tokenize, split: sacreBLEU's BLEU._preprocess_segment
 * followed by the split of extract_all_word_ngrams.  Result in w->text[s]
 * (the tokenized string) and w->spans[s] (its tokens). */
static bool
preprocess(const cq_bleu_options *o, const char *s, size_t len, cq_metrics_work *w, int seq)
{
	const cq_cpbuf *in = cq_metrics_decode(w, s, len, o->lowercase);

	if (in == NULL)
		return false;
	if (!cq_tokenize(o->tokenize, in->v, cq_rstrip_len(in->v, in->n), &w->text[seq], &w->tmp))
		return false;
	return cq_split_whitespace(w->text[seq].v, w->text[seq].n, &w->spans[seq]);
}

static bool
prep(const void *o, const char *s, size_t len, cq_metrics_work *w, int seq)
{
	return preprocess(o, s, len, w, seq);
}

static cq_code
check_args(const cq_bleu_options *o, size_t hyp_len, const size_t *ref_lens, int nrefs, cq_error *err)
{
	cq_code		rc = cq_metrics_check_texts(hyp_len, ref_lens, nrefs, err);

	if (rc)
		return rc;
	if (o->max_order < 1 || o->max_order > CQ_BLEU_MAX_ORDER)
		return cq_fail(err, CQ_EINVAL, "max_order must be between 1 and %d, not %d",
					   CQ_BLEU_MAX_ORDER, o->max_order);
	return CQ_OK;
}

cq_code
cq_bleu_sentence_stats(const cq_bleu_options *o, const char *hyp, size_t hyp_len,
					   const char *const *refs, const size_t *ref_lens, int nrefs,
					   cq_metrics_work *w, cq_bleu_stats *out, cq_error *err)
{
	const uint32_t *ref_ids[CQ_NGRAM_MAX_REFS];
	size_t		ref_n[CQ_NGRAM_MAX_REFS];
	int64_t		h;
	cq_code		rc = check_args(o, hyp_len, ref_lens, nrefs, err);

	if (rc != CQ_OK)
		return rc;
	rc = cq_metrics_prepare(w, prep, o, hyp, hyp_len, refs, ref_lens, nrefs, err);
	if (rc != CQ_OK)
		return rc;
	if (!cq_intern_tokens(w->text, w->spans, nrefs + 1, w->ids, &w->intern))
		return cq_fail(err, CQ_ENOMEM, "out of memory");

	memset(out, 0, sizeof(*out));
	h = (int64_t) w->spans[0].n;
	out->hyp_len = h;
	out->ref_len = -1;
	for (int r = 0; r < nrefs; r++)
	{
		int64_t		len = (int64_t) w->spans[r + 1].n,
					d = len > h ? len - h : h - len,
					best = out->ref_len > h ? out->ref_len - h : h - out->ref_len;

		if (out->ref_len < 0 || d < best || (d == best && len < out->ref_len))
			out->ref_len = len;
		ref_ids[r] = w->ids[r + 1].v;
		ref_n[r] = w->ids[r + 1].n;
	}
	if (!cq_ngram_matches(w->ids[0].v, w->ids[0].n, ref_ids, ref_n, nrefs,
						  o->max_order, out->correct, &w->ngram))
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	for (int n = 1; n <= o->max_order; n++)
		out->total[n - 1] = h - n + 1 > 0 ? h - n + 1 : 0;
	return CQ_OK;
}

void
cq_bleu_stats_add(cq_bleu_stats *acc, const cq_bleu_stats *s)
{
	acc->hyp_len += s->hyp_len;
	acc->ref_len += s->ref_len;
	for (int n = 0; n < CQ_BLEU_MAX_ORDER; n++)
	{
		acc->correct[n] += s->correct[n];
		acc->total[n] += s->total[n];
	}
}

/* sacreBLEU's my_log: the log of a zero precision is a large negative number
 * (not -inf), so the score is 0 rather than NaN. */
static double
log_or_floor(double x)
{
	return x == 0.0 ? -9999999999.0 : log(x);
}

/*
 * sacreBLEU's BLEU.compute_bleu, operation for operation in double precision
 * (so the last bits agree too): no match at all gives 0; add-k adds k to the
 * matches and totals of orders 2 and up; an order without n-grams ends the
 * product (and, with effective order, the orders averaged over); an order
 * without matches gets precision 100 / (2^i total) (exp, the i-th such order)
 * or 100 k / total (floor); the log-precisions are summed left to right.
 */
double
cq_bleu_score(const cq_bleu_options *o, const cq_bleu_stats *s, double *bp_out, double *prec_out)
{
	double		prec[CQ_BLEU_MAX_ORDER] = {0},
				bp = 1.0,
				smooth_mteval = 1.0,
				sum = 0.0,
				score;
	bool		any = false;
	int			eff_order = o->max_order;

	if (s->hyp_len < s->ref_len)
		bp = s->hyp_len > 0 ? exp(1.0 - (double) s->ref_len / (double) s->hyp_len) : 0.0;
	for (int n = 0; n < o->max_order; n++)
		any |= s->correct[n] != 0;
	if (any)
	{
		for (int n = 1; n <= o->max_order; n++)
		{
			double		correct = (double) s->correct[n - 1],
						total = (double) s->total[n - 1];

			if (o->smooth == CQ_SMOOTH_ADD_K && n > 1)
			{
				correct += o->smooth_value;
				total += o->smooth_value;
			}
			if (total == 0.0)
				break;
			if (o->effective_order)
				eff_order = n;
			if (correct == 0.0)
			{
				if (o->smooth == CQ_SMOOTH_EXP)
				{
					smooth_mteval *= 2.0;
					prec[n - 1] = 100.0 / (smooth_mteval * total);
				}
				else if (o->smooth == CQ_SMOOTH_FLOOR)
					prec[n - 1] = 100.0 * o->smooth_value / total;
			}
			else
				prec[n - 1] = 100.0 * correct / total;
		}
		for (int n = 0; n < eff_order; n++)
			sum += log_or_floor(prec[n]);
		score = bp * exp(sum / eff_order);
	}
	else
		score = 0.0;
	if (bp_out)
		*bp_out = bp;
	if (prec_out)
		memcpy(prec_out, prec, o->max_order * sizeof(double));
	return score;
}

cq_code
cq_bleu_tokenized(const cq_bleu_options *o, const char *s, size_t len,
				  cq_metrics_work *w, char **out, size_t *out_len, cq_error *err)
{
	cq_cpbuf   *joined;
	cq_code		rc = check_args(o, len, &len, 1, err);

	*out = NULL;
	if (rc != CQ_OK)
		return rc;
	rc = cq_metrics_prepare(w, prep, o, s, len, NULL, NULL, 0, err);
	if (rc != CQ_OK)
		return rc;
	/* ' '.join(tokens), built in the scratch buffer */
	joined = &w->tmp;
	joined->n = 0;
	if (!cq_cpbuf_reserve(joined, w->text[0].n + 1))
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	for (size_t i = 0; i < w->spans[0].n; i++)
	{
		const cq_span *t = &w->spans[0].v[i];

		if (i > 0)
			cq_cpbuf_put(joined, ' ');
		memcpy(joined->v + joined->n, w->text[0].v + t->off, t->len * sizeof(uint32_t));
		joined->n += t->len;
	}
	*out = cq_utf8_from_cps(joined->v, joined->n, out_len);
	return *out ? CQ_OK : cq_fail(err, CQ_ENOMEM, "out of memory");
}

int
cq_bleu_nstats(const cq_bleu_options *o)
{
	return 2 + 2 * o->max_order;
}

void
cq_bleu_stats_pack(const cq_bleu_options *o, const cq_bleu_stats *s, int64_t *row)
{
	row[0] = s->hyp_len;
	row[1] = s->ref_len;
	for (int n = 0; n < o->max_order; n++)
	{
		row[2 + n] = s->correct[n];
		row[2 + o->max_order + n] = s->total[n];
	}
}

void
cq_bleu_stats_unpack(const cq_bleu_options *o, const int64_t *row, cq_bleu_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->hyp_len = row[0];
	s->ref_len = row[1];
	for (int n = 0; n < o->max_order; n++)
	{
		s->correct[n] = row[2 + n];
		s->total[n] = row[2 + o->max_order + n];
	}
}

double
cq_bleu_score_row(const int64_t *row, const void *options)
{
	cq_bleu_stats s;

	cq_bleu_stats_unpack(options, row, &s);
	return cq_bleu_score(options, &s, NULL, NULL);
}
