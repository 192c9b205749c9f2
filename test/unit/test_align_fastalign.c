/* fast_align and IBM Model 1 of the core on hand-worked examples. */
#include "unit.h"

#include "align/diagonal.h"
#include "align/fastalign.h"
#include "align/ibm1.h"

/*
 * Two pairs: "a b" -> "x y" and "a" -> "x" (ids a=0 b=1, x=0 y=1), lambda 4,
 * p0 0.08.  The first pass sees a flat t, so posteriors equal the prior.
 * Pair 1 (m = n = 2): for j = 1, h(1) = -|1/2 - 1/2| = 0 and h(2) = -1/2, so
 * p(a=1) = 0.92 e^2/(1+e^2) = 0.81033, p(a=2) = 0.92/(1+e^2) = 0.10967,
 * p(a=0) = 0.08; for j = 2 the two source positions swap.  Pair 2 (m = n =
 * 1): p(a=1) = 0.92, p(a=0) = 0.08.
 * Counts: NULL: x 0.16, y 0.08 -> t(x|NULL) = 2/3, t(y|NULL) = 1/3;
 *   a: x 0.81033 + 0.92, y 0.10967 (sum 1.84)
 *      -> t(x|a) = (2e^2+1)/(2(1+e^2)) = 0.94040, t(y|a) = 1/(2(1+e^2)) = 0.05960;
 *   b: x 0.10967, y 0.81033 (sum 0.92)
 *      -> t(x|b) = 1/(1+e^2) = 0.11920, t(y|b) = e^2/(1+e^2) = 0.88080.
 * Viterbi of pair 1 after the pass: x: NULL 0.08*2/3 = 0.053, a 0.81033 *
 * 0.94040 = 0.762, b 0.10967 * 0.11920 = 0.013 -> a; y: NULL 0.027,
 * a 0.0065, b 0.714 -> b.  Pharaoh "0-0 1-1".
 * Log-likelihood of the flat pass: each of the 3 tokens has p = 1e-9.
 */
static const int32_t hw_src[] = {0, 1, 0};
static const int64_t hw_src_off[] = {0, 2, 3};
static const int32_t hw_tgt[] = {0, 1, 0};
static const int64_t hw_tgt_off[] = {0, 2, 3};

static cq_bitext
hand_bitext(void)
{
	cq_bitext	b = {2, hw_src, hw_src_off, hw_tgt, hw_tgt_off, 2, 2};

	return b;
}

static double
tp(const cq_fa_model *md, int32_t e, int32_t f)
{
	return cq_ttable_prob_or(&md->tt, e, f, -1.0);
}

TEST(fastalign_one_pass_hand_worked)
{
	cq_bitext	b = hand_bitext();
	cq_fa_options o;
	cq_error err = {0};
	cq_fa_trainer *tr;
	const cq_fa_model *md;
	cq_fa_stats st;
	int32_t		a[2];
	double		e2 = exp(2.0);

	cq_fa_options_default(&o);
	o.optimize_tension = false;
	CHECK_INT_EQ(cq_fa_trainer_create(&b, &o, &tr, &err), CQ_OK);
	if (!tr)
		return;
	CHECK_INT_EQ(cq_fa_iterate(tr, NULL, &err), CQ_OK);
	md = cq_fa_trainer_model(tr);
	CHECK_NEAR(tp(md, 2, 0), 2.0 / 3.0, 1e-12);	/* row 2 is NULL */
	CHECK_NEAR(tp(md, 2, 1), 1.0 / 3.0, 1e-12);
	CHECK_NEAR(tp(md, 0, 0), (2 * e2 + 1) / (2 * (1 + e2)), 1e-12);
	CHECK_NEAR(tp(md, 0, 1), 1 / (2 * (1 + e2)), 1e-12);
	CHECK_NEAR(tp(md, 1, 0), 1 / (1 + e2), 1e-12);
	CHECK_NEAR(tp(md, 1, 1), e2 / (1 + e2), 1e-12);
	CHECK_NEAR(md->par.tension, 4.0, 0);
	cq_fa_trainer_stats(tr, &st);
	CHECK_NEAR(st.loglik, 3 * log(1e-9), 1e-9);
	CHECK_NEAR(st.posterior_p0, 0.08, 1e-12);
	CHECK_NEAR(st.n_tokens, 3, 0);
	cq_fa_viterbi(tr, 0, a);
	CHECK_INT_EQ(a[0], 0);
	CHECK_INT_EQ(a[1], 1);
	cq_fa_trainer_free(tr);
}

/* The geometric recurrence of the prior row against direct exp(). */
TEST(fastalign_diagonal_row_matches_direct)
{
	double		u[37];

	for (int n = 1; n <= 37; n += 6)
		for (int m = 1; m <= 29; m += 7)
			for (int j1 = 1; j1 <= m; j1++)
			{
				double		z = cq_diag_row(u, j1, m, n, 6.5),
							zd = 0;

				for (int i1 = 1; i1 <= n; i1++)
				{
					double		d = exp(6.5 * -fabs((double) i1 / n - (double) j1 / m));

					zd += d;
					CHECK_NEAR(u[i1 - 1], d, 1e-13);
				}
				CHECK_NEAR(z, zd, 1e-12);
			}
}

static int	stop_at;

static bool
stop_hook(void *arg, int64_t done, int64_t total)
{
	(*(int *) arg)++;
	return done == stop_at;
}

/* A stop request leaves the model at its last complete pass. */
TEST(fastalign_progress_can_stop_a_pass)
{
	cq_bitext	b = hand_bitext();
	cq_fa_options o;
	cq_error err = {0};
	cq_fa_trainer *tr;
	int			calls = 0;
	cq_align_progress p = {stop_hook, &calls, 1};
	cq_fa_stats st;

	cq_fa_options_default(&o);
	CHECK_INT_EQ(cq_fa_trainer_create(&b, &o, &tr, &err), CQ_OK);
	stop_at = 1;
	CHECK_INT_EQ(cq_fa_iterate(tr, &p, &err), CQ_STOPPED);
	CHECK(strstr(err.msg, "stopped") != NULL);
	CHECK_INT_EQ(calls, 1);
	CHECK(!cq_fa_trainer_model(tr)->probs_ready);
	cq_fa_trainer_stats(tr, &st);
	CHECK_INT_EQ(st.passes, 0);
	stop_at = -1;
	CHECK_INT_EQ(cq_fa_train(tr, &p, &err), CQ_OK);
	cq_fa_trainer_stats(tr, &st);
	CHECK_INT_EQ(st.passes, 4);	/* fast_align's -I 5 */
	CHECK_INT_EQ(calls, 1 + 4 * 2);
	cq_fa_trainer_free(tr);
}

/* Model 1 after one pass from a uniform start: posteriors are uniform. */
TEST(ibm1_one_iteration_hand_worked)
{
	cq_bitext	b = hand_bitext();
	cq_error err = {0};
	cq_ibm1    *m;
	const cq_ttable *t;
	int32_t		a[2];

	CHECK_INT_EQ(cq_ibm1_create(&b, true, 1 << 20, &m, &err), CQ_OK);
	if (!m)
		return;
	CHECK_INT_EQ(cq_ibm1_iterate(m, NULL, &err), CQ_OK);
	t = cq_ibm1_table(m);
	/*
	 * pair 1: each target word splits 1/3 over NULL, a, b; pair 2: 1/2 over
	 * NULL, a.  a: x 1/3 + 1/2, y 1/3 (sum 7/6) -> 5/7, 2/7; b: 1/2, 1/2;
	 * NULL: x 5/6, y 1/3 (sum 7/6) -> 5/7, 2/7.
	 */
	CHECK_NEAR(cq_ttable_prob_or(t, 0, 0, -1), 5.0 / 7, 1e-15);
	CHECK_NEAR(cq_ttable_prob_or(t, 0, 1, -1), 2.0 / 7, 1e-15);
	CHECK_NEAR(cq_ttable_prob_or(t, 1, 0, -1), 0.5, 1e-15);
	CHECK_NEAR(cq_ttable_prob_or(t, 2, 0, -1), 5.0 / 7, 1e-15);
	/* x: a 5/7 beats NULL 5/7? tie -> the word (NLTK's >=); y: b 1/2 */
	cq_ibm1_viterbi(m, 0, a);
	CHECK_INT_EQ(a[0], 0);
	CHECK_INT_EQ(a[1], 1);
	cq_ibm1_free(m);
}

TEST(bitext_rejects_bad_ids)
{
	int32_t		src[] = {0, 5};
	cq_bitext	b = {1, src, (const int64_t[]) {0, 2}, hw_tgt, (const int64_t[]) {0, 1}, 2, 2};
	cq_error err = {0};
	cq_fa_options o;
	cq_fa_trainer *tr = (cq_fa_trainer *) &o;

	cq_fa_options_default(&o);
	CHECK_INT_EQ(cq_fa_trainer_create(&b, &o, &tr, &err), CQ_EINVAL);
	CHECK(tr == NULL);
	CHECK_INT_EQ(err.code, CQ_EINVAL);
	CHECK(strstr(err.msg, "outside vocabulary") != NULL);
}

TEST(ibm1_stop_keeps_the_table)
{
	cq_bitext	b = hand_bitext();
	cq_error err = {0};
	cq_ibm1    *m;
	int			calls = 0;
	cq_align_progress p = {stop_hook, &calls, 1};

	CHECK_INT_EQ(cq_ibm1_create(&b, false, 0, &m, &err), CQ_OK);
	stop_at = 2;
	CHECK_INT_EQ(cq_ibm1_iterate(m, &p, &err), CQ_STOPPED);
	CHECK_INT_EQ(cq_ibm1_iterations(m), 0);
	/* still the uniform start: 1 / (2 distinct target words) */
	CHECK_NEAR(cq_ttable_prob_or(cq_ibm1_table(m), 0, 0, -1), 0.5, 0);
	cq_ibm1_free(m);
}

#include "align/lexicon.h"

/*
 * A lexicon written by hand, uniform prior (no diagonal), NULL word:
 * s->t t(f|e): e0 {f0 .9, f1 .1}, e1 {f1 .8}, NULL {f0 .5, f1 .5};
 * t->s t(e|f): f0 {e0 .7}, f1 {e0 .2, e1 .6}, NULL {e0 .5, e1 .5}.
 * Pair src [0 1], tgt [0 1], prior 1/3 per position:
 *   fwd: p(f0) = (.5 + .9 + 1e-9 (e1-f0 unseen)) / 3, p(f1) = (.5 + .1 + .8) / 3
 *   rev: p(e0) = (.5 + .7 + .2) / 3, p(e1) = (.5 + 1e-9 + .6) / 3
 * Viterbi s->t: f0 <- e0, f1 <- e1; t->s: e0 <- f0, e1 <- f1; so every
 * symmetrisation gives 0-0 1-1 and coverage 1.
 */
static void
table(cq_ttable *t, int n_e, int n_f, const int64_t *off, const int32_t *col,
	  const double *prob, int nnz)
{
	cq_ttable_alloc(t, n_e, n_f, nnz, false, NULL);
	memcpy(t->row_off, off, (n_e + 2) * sizeof(int64_t));
	memcpy(t->col, col, nnz * sizeof(int32_t));
	memcpy(t->prob, prob, nnz * sizeof(double));
}

TEST(lexicon_score_pair_hand_worked)
{
	cq_lexicon	lx = {2, 2};
	cq_fa_params par = {4.0, 0.08, false, true};
	const int32_t src[] = {0, 1}, tgt[] = {0, 1};
	cq_pair_score sc;
	cq_link		links[4];
	cq_error err = {0};

	lx.fwd.par = lx.rev.par = par;
	lx.fwd.probs_ready = lx.rev.probs_ready = true;
	table(&lx.fwd.tt, 2, 2, (const int64_t[]) {0, 2, 3, 5}, (const int32_t[]) {0, 1, 1, 0, 1},
		  (const double[]) {.9, .1, .8, .5, .5}, 5);
	table(&lx.rev.tt, 2, 2, (const int64_t[]) {0, 1, 3, 5}, (const int32_t[]) {0, 0, 1, 0, 1},
		  (const double[]) {.7, .2, .6, .5, .5}, 5);
	CHECK_INT_EQ(cq_lexicon_score_pair(&lx, src, 2, tgt, 2, CQ_SYM_GROW_DIAG_FINAL_AND,
									   links, &sc, &err), CQ_OK);
	CHECK_NEAR(sc.fwd_score, (log((1.4 + 1e-9) / 3) + log(1.4 / 3)) / 2, 1e-14);
	CHECK_NEAR(sc.rev_score, (log(1.4 / 3) + log((1.1 + 1e-9) / 3)) / 2, 1e-14);
	CHECK_NEAR(sc.align_score, (sc.fwd_score + sc.rev_score) / 2, 1e-15);
	CHECK_NEAR(sc.coverage, 1.0, 0);
	CHECK_NEAR(sc.tgt_coverage, 1.0, 0);
	/* the tails: the second token's term minus the first's (m = n = 2) */
	CHECK_NEAR(sc.tgt_tail, log(1.4 / 3) - log((1.4 + 1e-9) / 3), 1e-14);
	CHECK_NEAR(sc.src_tail, log((1.1 + 1e-9) / 3) - log(1.4 / 3), 1e-14);
	CHECK_INT_EQ(sc.n_links, 2);
	CHECK(links[0].s == 0 && links[0].t == 0 && links[1].s == 1 && links[1].t == 1);

	/*
	 * One source word against two target words, intersected: the reverse
	 * model links the source word to one target word only, so the one link
	 * covers the whole source and half of the target.
	 */
	CHECK_INT_EQ(cq_lexicon_score_pair(&lx, src, 1, tgt, 2, CQ_SYM_INTERSECT,
									   links, &sc, &err), CQ_OK);
	CHECK_INT_EQ(sc.n_links, 1);
	CHECK_NEAR(sc.coverage, 1.0, 0);
	CHECK_NEAR(sc.tgt_coverage, 0.5, 0);
	/* one source word: no head to compare (0); the target's terms are
	 * ln(.5 (.5 + .9)) and ln(.5 (.5 + .1)) (uniform prior 1/2, NULL 1/2) */
	CHECK_NEAR(sc.src_tail, 0.0, 0);
	CHECK_NEAR(sc.tgt_tail, log(.3) - log(.7), 1e-14);
	/* an empty side has no score */
	CHECK_INT_EQ(cq_lexicon_score_pair(&lx, src, 0, tgt, 2, CQ_SYM_UNION, NULL, &sc, &err), 0);
	CHECK(isnan(sc.align_score) && isnan(sc.coverage) && isnan(sc.tgt_coverage));
	CHECK(isnan(sc.src_tail) && isnan(sc.tgt_tail));
	cq_lexicon_free(&lx);
}

/* t(f | e) of the toy tables below, straight from their rows (e = 2: NULL). */
static double
toy_t(int rev, int e, int f)
{
	static const double fwd[3][2] = {{.9, .1}, {1e-9, .8}, {.5, .5}};
	static const double bwd[3][2] = {{.7, 1e-9}, {.2, .6}, {.5, .5}};

	return rev ? bwd[e][f] : fwd[e][f];
}

/* A side's tail from the definition: with the uniform prior (1 / (n + 1)
 * for each of the n words and NULL) term j is ln sum t / (n + 1); the mean
 * of the last ceil(m / 3) terms minus the mean of the others. */
static double
tail_by_definition(int rev, const int32_t *e, int n, const int32_t *f, int m)
{
	int			k = (m + 2) / 3;
	double		head = 0,
				tail = 0;

	if (m < 2)
		return 0;
	for (int j = 0; j < m; j++)
	{
		double		sum = toy_t(rev, 2, f[j]);

		for (int i = 0; i < n; i++)
			sum += toy_t(rev, e[i], f[j]);
		if (j < m - k)
			head += log(sum / (n + 1));
		else
			tail += log(sum / (n + 1));
	}
	return tail / k - head / (m - k);
}

/*
 * The tails on longer pairs against the definition, and a hand-worked one:
 * source "0" and target "0 0 1": the target's terms are ln .7, ln .7, ln .3
 * (its end explained worse than its start, as an appended word would be),
 * so tgt_tail = ln .3 - ln .7; the source has one word (src_tail 0).
 */
TEST(lexicon_score_pair_tails)
{
	cq_lexicon	lx = {2, 2};
	cq_fa_params par = {4.0, 0.08, false, true};
	const int32_t src[] = {0, 1, 0, 1}, tgt[] = {0, 1, 0, 1, 1, 1, 1},
				hand_t[] = {0, 0, 1};
	cq_pair_score sc;
	cq_link		links[16];
	cq_error err = {0};
	const int	cases[][2] = {{4, 7}, {1, 7}, {4, 2}, {2, 4}, {3, 5}, {4, 1}};

	lx.fwd.par = lx.rev.par = par;
	lx.fwd.probs_ready = lx.rev.probs_ready = true;
	table(&lx.fwd.tt, 2, 2, (const int64_t[]) {0, 2, 3, 5}, (const int32_t[]) {0, 1, 1, 0, 1},
		  (const double[]) {.9, .1, .8, .5, .5}, 5);
	table(&lx.rev.tt, 2, 2, (const int64_t[]) {0, 1, 3, 5}, (const int32_t[]) {0, 0, 1, 0, 1},
		  (const double[]) {.7, .2, .6, .5, .5}, 5);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		int			n = cases[c][0],
					m = cases[c][1];

		CHECK_INT_EQ(cq_lexicon_score_pair(&lx, src, n, tgt, m, CQ_SYM_INTERSECT,
										   links, &sc, &err), CQ_OK);
		CHECK_NEAR(sc.tgt_tail, tail_by_definition(0, src, n, tgt, m), 1e-12);
		CHECK_NEAR(sc.src_tail, tail_by_definition(1, tgt, m, src, n), 1e-12);
	}
	CHECK_INT_EQ(cq_lexicon_score_pair(&lx, src, 1, hand_t, 3, CQ_SYM_INTERSECT,
									   links, &sc, &err), CQ_OK);
	CHECK_NEAR(sc.tgt_tail, log(.3) - log(.7), 1e-14);
	CHECK_NEAR(sc.src_tail, 0.0, 0);
	cq_lexicon_free(&lx);
}

/* No pairs, or only pairs with an empty side: everything runs, nothing breaks. */
TEST(fastalign_degenerate_bitexts)
{
	const int32_t src[] = {0}, tgt[] = {0};
	const int64_t zero[] = {0}, so[] = {0, 1, 1}, to[] = {0, 0, 1};
	cq_bitext	empty = {0, src, zero, tgt, zero, 1, 1};
	cq_bitext	sides = {2, src, so, tgt, to, 1, 1};	/* "a"->"" and ""->"x" */
	cq_bitext  *bs[] = {&empty, &sides};
	cq_error err = {0};

	for (int c = 0; c < 2; c++)
	{
		cq_fa_options o;
		cq_fa_trainer *f,
				   *r;
		cq_fa_stats st;
		cq_lexdict	d;
		cq_lexicon	lx;
		int32_t		a[1] = {7};

		cq_fa_options_default(&o);
		CHECK_INT_EQ(cq_fa_trainer_create(bs[c], &o, &f, &err), CQ_OK);
		o.reverse = true;
		CHECK_INT_EQ(cq_fa_trainer_create(bs[c], &o, &r, &err), CQ_OK);
		CHECK(f && r);
		CHECK_INT_EQ(cq_fa_train(f, NULL, &err), 0);
		CHECK_INT_EQ(cq_fa_train(r, NULL, &err), 0);
		cq_fa_trainer_stats(f, &st);
		CHECK_INT_EQ(st.skipped_pairs, c ? 2 : 0);
		CHECK_NEAR(st.n_tokens, 0, 0);
		if (c)
		{
			cq_fa_viterbi(f, 1, a);	/* ""->"x": unaligned */
			CHECK_INT_EQ(a[0], -1);
		}
		CHECK_INT_EQ(cq_lexdict_from_trainers(f, r, CQ_SYM_GROW_DIAG_FINAL_AND, NULL, &d, &err), 0);
		CHECK_INT_EQ(d.nnz, 0);
		cq_lexdict_free(&d);
		CHECK_INT_EQ(cq_lexicon_from_trainers(f, r, &lx, &err), 0);
		CHECK_INT_EQ(cq_lexdict_from_trainers(f, r, CQ_SYM_UNION, NULL, &d, &err), CQ_EINVAL);
		cq_lexicon_free(&lx);
		cq_fa_trainer_free(f);
		cq_fa_trainer_free(r);
	}
}

#include "align/digamma.h"

/* psi(1) = -gamma, psi(1/2) = -gamma - 2 ln 2, psi(x + 1) = psi(x) + 1/x. */
TEST(digamma_known_values)
{
	const double gamma = 0.57721566490153286;

	CHECK_NEAR(cq_digamma(1.0), -gamma, 1e-13);
	CHECK_NEAR(cq_digamma(0.5), -gamma - 2 * log(2.0), 1e-13);
	CHECK_NEAR(cq_digamma(10.0), -gamma + 1 + 1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5 +
			   1.0 / 6 + 1.0 / 7 + 1.0 / 8 + 1.0 / 9, 1e-13);
	for (double x = 0.01; x < 50; x *= 1.7)
		CHECK_NEAR(cq_digamma(x + 1) - cq_digamma(x), 1 / x, 1e-10 * (1 + 1 / x));
}
