/*
 * One search step of one sentence (decode.h), with fairseq's semantics
 * (translate.h): mask the rows' log-probabilities, take candidates (beam:
 * the best 2 beam; sampling: one draw per hypothesis), finalise </s>
 * candidates, then either finish the sentence or keep `beam` hypotheses.
 * Everything here reads only this sentence's rows, in a fixed order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "nn/infer/decode.h"
#include "nn/ops/ops.h"

/* Counter word naming the sampling stream (dropout sites stay below 13 << 24). */
#define SAMPLE_STREAM 0x53414d50u

static float *
row_lp(const cq_translator *t, const cq_slot *s, int j)
{
	return t->logits + (long) (s->row0 + j) * t->ld_v;
}

/* ---- masks ---------------------------------------------------------------- */

/* Bans each token that would complete an n-gram row j already holds. */
static void
ban_repeats(const cq_translator *t, const cq_slot *s, int j, float *lp)
{
	int			n = t->o.no_repeat_ngram_size,
				len = s->step;
	const int32_t *y = s->tok + (long) j * t->T;

	if (n <= 0 || len < n - 1)
		return;
	/* n-gram y[i .. i+n-1] whose first n-1 tokens are the last n-1 of y */
	for (int i = 0; i + n - 1 < len; i++)
	{
		int			k = 0;

		while (k < n - 1 && y[i + k] == y[len - (n - 1) + k])
			k++;
		if (k == n - 1)
			lp[y[i + n - 1]] = -INFINITY;
	}
}

static void
mask_row(const cq_translator *t, const cq_slot *s, int j)
{
	int			v = t->m->cfg.tgt_vocab_size;
	float	   *lp = row_lp(t, s, j);

	for (int i = 0; i < v; i++)
		lp[i] = lp[i] != lp[i] ? -INFINITY : lp[i];
	/* the reserved tokens without text: a hypothesis's text gives back its tokens */
	lp[CQ_BOS_ID] = -INFINITY;
	lp[CQ_PAD_ID] = -INFINITY;
	lp[CQ_UNK_ID] -= (float) t->o.unk_penalty;
	if (s->step >= s->max_len)
	{
		float		eos = lp[CQ_EOS_ID];

		for (int i = 0; i < v; i++)
			lp[i] = -INFINITY;
		lp[CQ_EOS_ID] = eos;
	}
	else if (s->step < s->min_len)
		lp[CQ_EOS_ID] = -INFINITY;
	ban_repeats(t, s, j, lp);
}

/* ---- beam candidates ------------------------------------------------------- */

/*
 * Below this log-probability a token of a row with cumulative score `base`
 * cannot beat `worst`: the float cut sits a margin (1e-9 relative, far above
 * double rounding) under worst - base, so only the exact test below decides.
 */
static float
cut_below(double worst, double base)
{
	double		c = worst - base - 1e-9 * (1.0 + fabs(worst) + fabs(base));

	return nextafterf((float) c, -INFINITY);
}

/*
 * The best min(2 beam, rows V - 1) of score(row) + lp[row][token], best
 * first; equal values keep the lower (row, token) index first.
 */
static void
beam_candidates(const cq_translator *t, cq_slot *s)
{
	int			v = t->m->cfg.tgt_vocab_size,
				want = 2 * t->K,
				n = 0;
	cq_candidate *c = s->cand;

	if ((long) s->nrows * v - 1 < want)
		want = s->nrows * v - 1;
	for (int j = 0; j < s->nrows; j++)
	{
		const float *lp = row_lp(t, s, j);
		double		base = s->cum[j];
		float		cut = n == want ? cut_below(c[n - 1].score, base) : -INFINITY;

		for (int tok = 0; tok < v; tok++)
		{
			double		val;
			int			at;

			if (lp[tok] < cut)
				continue;
			val = base + lp[tok];
			if (n == want && !(val > c[n - 1].score))
				continue;
			at = n < want ? n++ : n - 1;
			while (at > 0 && val > c[at - 1].score)
			{
				c[at] = c[at - 1];
				at--;
			}
			c[at] = (cq_candidate) {j, tok, lp[tok], val};
			if (n == want)
				cut = cut_below(c[n - 1].score, base);
		}
	}
	s->n_cand = n;
}

/* ---- sampling candidates --------------------------------------------------- */

/* A uniform double in [0, 1) for hypothesis i at this step (53 bits). */
static double
uniform(const cq_translator *t, const cq_slot *s, int i)
{
	cq_philox_key key = cq_philox_key_from_seed(cq_mix64(t->o.seed ^ cq_mix64(s->src.id)));
	cq_philox_ctr r = cq_philox4x32((cq_philox_ctr) {{(uint32_t) i, (uint32_t) s->step,
	SAMPLE_STREAM, 0}}, key);

	return ((double) (r.c[0] >> 5) * 67108864.0 + (double) (r.c[1] >> 6)) *
		(1.0 / 9007199254740992.0);
}

static float
weight(float lp)
{
	return lp == -INFINITY ? 0.0f : cq_fast_expf(lp);
}

/* Descending log-probability, then ascending id: a total order. */
static int
by_prob_desc(const void *a, const void *b)
{
	const cq_ranked *x = a,
			   *y = b;

	if (x->lp != y->lp)
		return x->lp > y->lp ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * The topk tokens, most probable first.  Small k: one pass keeping the best
 * k in order (equal values keep the lower id first); large k: a sort.
 */
static int
top_k(const cq_translator *t, const float *lp, cq_ranked *r)
{
	int			v = t->m->cfg.tgt_vocab_size,
				k = t->o.topk,
				n = 0;

	if (k > 64)
	{
		for (int i = 0; i < v; i++)
			r[i] = (cq_ranked) {lp[i], i};
		qsort(r, v, sizeof(cq_ranked), by_prob_desc);
		return k;
	}
	for (int i = 0; i < v; i++)
	{
		int			at;

		if (n == k && !(lp[i] > r[n - 1].lp))
			continue;
		at = n < k ? n++ : n - 1;
		while (at > 0 && lp[i] > r[at - 1].lp)
		{
			r[at] = r[at - 1];
			at--;
		}
		r[at] = (cq_ranked) {lp[i], i};
	}
	return n;
}

/*
 * fairseq's top-p set: by descending probability, the tokens before the
 * cumulative probability reaches topp and the one that reaches it.  Once
 * the tokens of probability >= cut hold topp, no token below cut can be in
 * the set, so only those are sorted.
 */
static int
top_p(const cq_translator *t, const float *lp, cq_ranked *r)
{
	int			v = t->m->cfg.tgt_vocab_size,
				n = 0;
	float		pmax = 0.0f;
	double		cum = 0.0;

	for (int i = 0; i < v; i++)
		pmax = weight(lp[i]) > pmax ? weight(lp[i]) : pmax;
	for (float cut = pmax / 1024.0f;; cut /= 1024.0f)
	{
		double		mass = 0.0;
		bool		all = cut < 1e-30f;

		n = 0;
		for (int i = 0; i < v; i++)
			if (all || weight(lp[i]) >= cut)
			{
				r[n++] = (cq_ranked) {lp[i], i};
				mass += weight(lp[i]);
			}
		if (all || mass >= t->o.topp)
			break;
	}
	qsort(r, n, sizeof(cq_ranked), by_prob_desc);
	for (int i = 0; i < n; i++)
	{
		cum += weight(r[i].lp);
		if (cum >= t->o.topp)
			return i + 1;
	}
	return n;
}

/* Inverse CDF over r[0 .. n) weighted by exp(lp); -1 if every weight is 0. */
static int32_t
draw(const cq_ranked *r, int n, double u)
{
	double		total = 0.0,
				cum = 0.0,
				target;
	int32_t		last = -1;

	for (int i = 0; i < n; i++)
		total += weight(r[i].lp);
	if (!(total > 0.0))
		return -1;
	target = u * total;
	for (int i = 0; i < n; i++)
	{
		float		w = weight(r[i].lp);

		if (w <= 0.0f)
			continue;
		cum += w;
		last = r[i].id;
		if (cum > target)
			return r[i].id;
	}
	return last;
}

static void
sample_candidates(const cq_translator *t, cq_slot *s)
{
	int			v = t->m->cfg.tgt_vocab_size;
	cq_ranked  *r = t->ranked;

	for (int i = 0; i < t->K; i++)
	{
		int			j = s->step == 0 ? 0 : i,
					n = v;
		const float *lp = row_lp(t, s, j);
		int32_t		tok;

		if (t->o.topk > 0)
			n = top_k(t, lp, r);
		else if (t->o.topp > 0.0)
			n = top_p(t, lp, r);
		else
			for (int k = 0; k < v; k++)
				r[k] = (cq_ranked) {lp[k], k};
		tok = draw(r, n, uniform(t, s, i));
		if (tok < 0)
			s->cand[i] = (cq_candidate) {j, CQ_EOS_ID, -INFINITY, -INFINITY};
		else
			s->cand[i] = (cq_candidate) {j, tok, lp[tok], s->cum[j] + lp[tok]};
	}
	s->n_cand = t->K;
}

/* ---- finalising and moving on ---------------------------------------------- */

static bool
is_eos(const cq_candidate *c)
{
	return c->token == CQ_EOS_ID && c->score != -INFINITY;
}

static void
finalise(cq_translator *t, cq_slot *s, const cq_candidate *c)
{
	int			T = t->T,
				f = s->n_final++;
	int32_t    *tok = s->final_tok + (long) f * T;
	float	   *lp = s->final_lp + (long) f * T;

	memcpy(tok, s->tok + (long) c->row * T, sizeof(int32_t) * s->step);
	memcpy(lp, s->lp + (long) c->row * T, sizeof(float) * s->step);
	lp[s->step] = c->lp;
	s->final[f] = (cq_hypothesis) {tok, s->step, lp, c->score,
		c->score / pow(s->step + 1, t->o.lenpen),
	/* at max_len </s> is forced; the empty source's is its only choice */
	s->step < s->max_len || s->max_len == 0};
}

/* Final hypotheses by descending score; equal scores keep their order. */
static void
sort_finals(cq_slot *s)
{
	for (int i = 1; i < s->n_final; i++)
	{
		cq_hypothesis h = s->final[i];
		int			j = i;

		while (j > 0 && h.score > s->final[j - 1].score)
		{
			s->final[j] = s->final[j - 1];
			j--;
		}
		s->final[j] = h;
	}
}

static void
finish(cq_translator *t, cq_slot *s)
{
	sort_finals(s);
	s->state = SLOT_DONE;
	t->progress.sentences++;
	if (s->n_final > 0)
		t->progress.tokens += s->final[0].len + 1;
}

/*
 * fairseq's choice of the next hypotheses: the first `beam` candidates that
 * are neither </s> (finite) nor at an ignored position, then the excluded
 * ones in order (marked ignored) if there are not enough.
 */
static void
advance(cq_translator *t, cq_slot *s)
{
	int			K = t->K,
				T = t->T,
				n = 0;
	int		   *pick = t->iscratch,
			   *src = t->iscratch + K;
	bool	   *ign = t->bscratch;

	for (int pass = 0; pass < 2 && n < K; pass++)
		for (int i = 0; i < s->n_cand && n < K; i++)
		{
			bool		excluded = is_eos(&s->cand[i]) || (i < K && s->ignore[i]);

			if (excluded == (pass == 1))
			{
				pick[n] = i;
				ign[n++] = excluded;
			}
		}
	for (int j = 0; j < n; j++)
	{
		const cq_candidate *c = &s->cand[pick[j]];

		src[j] = c->row;
		memcpy(s->tok_alt + (long) j * T, s->tok + (long) c->row * T, sizeof(int32_t) * s->step);
		memcpy(s->lp_alt + (long) j * T, s->lp + (long) c->row * T, sizeof(float) * s->step);
		s->tok_alt[(long) j * T + s->step] = c->token;
		s->lp_alt[(long) j * T + s->step] = c->lp;
	}
	cq_decode_reorder(t, s, src, n);
	for (int j = 0; j < n; j++)
	{
		s->cum[j] = s->cand[pick[j]].score;
		s->ignore[j] = ign[j];
	}
	{
		int32_t    *ti = s->tok;
		float	   *tl = s->lp;

		s->tok = s->tok_alt;
		s->tok_alt = ti;
		s->lp = s->lp_alt;
		s->lp_alt = tl;
	}
	s->nrows = n;
	s->step++;
}

void
cq_search_step(cq_translator *t, cq_slot *s)
{
	for (int j = 0; j < s->nrows; j++)
		mask_row(t, s, j);
	if (t->o.search == CQ_SEARCH_SAMPLE)
		sample_candidates(t, s);
	else
		beam_candidates(t, s);
	/* only </s> among the first `beam` candidates is final */
	for (int i = 0; i < s->n_cand && i < t->K; i++)
		if (is_eos(&s->cand[i]) && !s->ignore[i] && s->n_final < t->K)
			finalise(t, s, &s->cand[i]);
	if (s->n_final == t->K || s->step >= s->max_len)
		finish(t, s);
	else
		advance(t, s);
}
