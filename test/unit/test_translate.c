/*
 * The translator (nn/infer/translate.h) against the teacher-forced forward.
 *
 * With a packed model (cq_model_pack, as the extension's model cache does)
 * every product runs the row-independent kernel (nn/ops/rowgemm.h), and so does
 * attention; the incremental decoder then does the forward's arithmetic row
 * for row, so every returned token log-probability must equal the forward's
 * log p(gold) BIT FOR BIT, and a sentence must decode to the same bits in any
 * batch -- whatever OPENBLAS_CORETYPE the test runs under.  The same holds for
 * an unpacked model under the portable reference GEMM (cq_sgemm_reference:
 * one double dot product per element).  An unpacked model under OpenBLAS
 * (training's path) gets shape-dependent products (one row per step vs all
 * positions at once), so there the equality holds within TOL_OPENBLAS.
 */
#include "unit.h"

#include <stdlib.h>

#include "common/parallel.h"
#include "nn/ops/blas.h"
#include "nn/infer/forward.h"
#include "nn/ops/ops.h"
#include "nn/infer/translate.h"

/*
 * |incremental - teacher-forced| per token log-probability under OpenBLAS,
 * for weights at fairseq's initial scale (Xavier, layer-norm gains 1).  Both
 * sides compute the same float32 network; only the summation order inside
 * each GEMM and attention product differs.  A dot product of length K <= 64
 * then moves by ~sqrt(K) u |x||w| with u = 6e-8 (rounding errors of random
 * sign), 5e-7 relative; layers at this scale are close to norm-preserving,
 * so through 2 + 2 layers and a log-softmax over logits of O(1 .. 10) the
 * log-probabilities move by about 1e-6 (measured: 9.5e-7).  2e-5 leaves a
 * margin of 20; a wrong cache position, a stale key or a mis-ordered
 * hypothesis moves them by 1e-2 or more.  (The bound is the model's: with
 * every weight x2.5 the same comparison reaches 3e-4, rounding amplified by
 * the layers, while the reference-GEMM test above stays bit for bit.)
 */
#define TOL_OPENBLAS 2e-5

/*
 * A tiny random model; sharp: weights x3, for peaked distributions; other:
 * GELU, learned positions, untied output projection.
 */
static cq_model *
model_of(int vs, int vt, uint64_t seed, bool sharp, bool other)
{
	cq_model_config c;
	cq_model   *m = NULL;
	cq_error err;

	CHECK_INT_EQ(cq_config_preset("tiny", vs, vt, &c, &err), CQ_OK);
	if (other)
	{
		c.activation = CQ_ACT_GELU;
		c.positions = CQ_POS_LEARNED;
		c.tie_output = false;
	}
	c.d_model = 32;
	c.heads = 4;
	c.ffn_dim = 48;
	c.max_positions = 24;
	CHECK_INT_EQ(cq_model_new(&c, &m, &err), CQ_OK);
	cq_model_init_random(m, seed);
	/* sharper, less uniform distributions than the fairseq init */
	for (size_t i = 0; sharp && i < m->n_floats; i++)
		m->params[i] *= 3.0f;
	return m;
}

static cq_model *
model(int vs, int vt, uint64_t seed, bool sharp)
{
	return model_of(vs, vt, seed, sharp, false);
}

/* The same, frozen for inference. */
static cq_model *
packed(cq_model *m)
{
	cq_error err;

	CHECK_INT_EQ(cq_model_pack(m, &err), CQ_OK);
	return m;
}

/* What a test keeps of one translated sentence. */
#define MAXH 8
#define MAXT 32
typedef struct kept
{
	int			n_hyps;
	uint64_t	id;
	int			len[MAXH];
	int32_t		tok[MAXH][MAXT];
	float		lp[MAXH][MAXT];
	double		logprob[MAXH],
				score[MAXH];
} kept;

typedef struct sink
{
	kept	   *out;			/* by tag */
	int			emitted,
				ticks,
				cancel_after;
} sink;

static void
keep(void *arg, const cq_translation *t)
{
	sink	   *k = arg;
	kept	   *o = &k->out[t->tag];

	k->emitted++;
	o->n_hyps = t->n_hyps;
	o->id = t->id;
	for (int h = 0; h < t->n_hyps && h < MAXH; h++)
	{
		o->len[h] = t->hyps[h].len;
		memcpy(o->tok[h], t->hyps[h].tokens, sizeof(int32_t) * t->hyps[h].len);
		memcpy(o->lp[h], t->hyps[h].token_logprobs, sizeof(float) * (t->hyps[h].len + 1));
		o->logprob[h] = t->hyps[h].logprob;
		o->score[h] = t->hyps[h].score;
	}
}

static bool
tick(void *arg, const cq_translate_progress *p)
{
	sink	   *k = arg;

	k->ticks++;
	return k->cancel_after == 0 || k->ticks < k->cancel_after;
}

static cq_code
run(const cq_model *m, const cq_translate_options *o, const cq_source *srcs, int n,
	int batch, kept *out, sink *k, cq_error *err)
{
	size_t		bytes = cq_translate_bytes(m, o, srcs, n, batch);
	void	   *ws = bytes ? malloc(bytes) : NULL;
	cq_translate_io io = {keep, tick, k};
	cq_code s;

	k->out = out;
	memset(out, 0, sizeof(kept) * n);
	s = cq_translate(m, o, srcs, n, batch, ws, bytes, &io, err);
	free(ws);
	return s;
}

/* What most tests translate with: a model, sources (sources() fills them),
 * what came out and the sink and error of the run. */
typedef struct fixture
{
	cq_model   *m;
	cq_source	srcs[8];
	int32_t		ids[8][10];
	kept		out[8];
	sink		k;
	cq_error err;
} fixture;

/* Random sources of 0 .. 9 tokens (the first is empty), tags 0 .. n-1. */
static void
sources(cq_source *srcs, int32_t ids[][10], int n, int vs, unsigned seed)
{
	srand(seed);
	for (int i = 0; i < n; i++)
	{
		int			len = i == 0 ? 0 : 1 + rand() % 9;

		for (int t = 0; t < len; t++)
			ids[i][t] = 4 + rand() % (vs - 4);
		srcs[i] = (cq_source) {ids[i], len, 1000 + (uint64_t) i, i};
	}
}

/* The teacher-forced forward's per-position log p(gold) of (src, hyp). */
static void
forward_logps(const cq_model *m, const cq_source *src, const int32_t *hyp, int len,
			  float *logp, double *sent)
{
	cq_pair		p = {src->ids, src->len, hyp, len, 0};
	cq_batch_shape shape;
	cq_error err;
	float		pmax[MAXT],
				ent[MAXT];
	int			count;
	cq_forward_out out = {logp, pmax, ent, NULL, sent, &count};
	size_t		bytes;
	void	   *ws;

	CHECK_INT_EQ(cq_batch_shape_of(m, &p, 1, &shape, &err), CQ_OK);
	bytes = cq_forward_workspace_bytes(&m->cfg, &shape);
	ws = malloc(bytes);
	CHECK_INT_EQ(cq_forward(m, &p, 1, NULL, ws, bytes, &out, &err), CQ_OK);
	free(ws);
}

/* Every hypothesis of every sentence against the forward; returns max |diff|. */
static double
against_forward(const cq_model *m, const cq_translate_options *o, const cq_source *srcs,
				const kept *out, int n, bool bitwise)
{
	double		worst = 0.0;

	for (int i = 0; i < n; i++)
	{
		CHECK_INT_EQ(out[i].n_hyps, srcs[i].len == 0 ? 1 : o->nbest);
		for (int h = 0; h < out[i].n_hyps; h++)
		{
			float		logp[MAXT];
			double		sent;
			int			len = out[i].len[h];

			forward_logps(m, &srcs[i], out[i].tok[h], len, logp, &sent);
			for (int t = 0; t <= len; t++)
			{
				double		e = fabs((double) logp[t] - out[i].lp[h][t]);

				worst = e > worst ? e : worst;
				if (bitwise && memcmp(&logp[t], &out[i].lp[h][t], sizeof(float)) != 0)
					unit_fail(__FILE__, __LINE__, "sentence %d hyp %d position %d: %.9g != forward %.9g",
							  i, h, t, out[i].lp[h][t], logp[t]);
			}
			if (bitwise)
				CHECK(sent == out[i].logprob[h]);
			else
				CHECK_NEAR(out[i].logprob[h], sent, TOL_OPENBLAS * (len + 1));
			CHECK_NEAR(out[i].score[h], out[i].logprob[h] / pow(len + 1, o->lenpen), 1e-12);
			if (h > 0)
				CHECK(out[i].score[h] <= out[i].score[h - 1]);
		}
	}
	return worst;
}

static cq_translate_options
beam_options(int beam, int nbest, double lenpen)
{
	cq_translate_options o;

	cq_translate_options_default(&o);
	o.beam = beam;
	o.nbest = nbest;
	o.lenpen = lenpen;
	o.max_len_b = 12;
	o.min_len = 0;
	return o;
}

TEST(translate_log_softmax_row_has_the_forward_bits)
{
	float		l[83],
				out[83];
	double		sum = 0.0;

	srand(7);
	for (int i = 0; i < 83; i++)
		l[i] = (float) (rand() % 2000 - 1000) / 97.0f;
	cq_log_softmax_row(l, 83, out);
	for (int g = 0; g < 83; g++)
	{
		cq_row_stats s = cq_logit_row_stats(l, 83, g);

		CHECK(memcmp(&s.logp_gold, &out[g], sizeof(float)) == 0);
		sum += exp(out[g]);
	}
	CHECK_NEAR(sum, 1.0, 1e-6);
	cq_log_softmax_row(l, 83, l);	/* in place */
	CHECK(memcmp(l, out, sizeof(out)) == 0);
}

/*
 * Beams 1, 3 and 5 on six sources give the forward's bits, on a model with
 * and without shared embeddings; pack: the extension's packed weights.
 */
static void
translate_equals_forward_bitwise(bool pack)
{
	fixture		f = {.m = model(40, 45, 11, true)};
	const int	beams[3] = {1, 3, 5};

	sources(f.srcs, f.ids, 6, 40, 3);
	for (int variant = 0; variant < 2; variant++)
	{
		if (pack)
			f.m = packed(f.m);
		for (int b = 0; b < 3; b++)
		{
			cq_translate_options o = beam_options(beams[b], beams[b], b == 2 ? 0.6 : 1.0);

			CHECK_INT_EQ(run(f.m, &o, f.srcs, 6, 4, f.out, &f.k, &f.err), CQ_OK);
			against_forward(f.m, &o, f.srcs, f.out, 6, true);
		}
		cq_model_free(f.m);
		f.m = variant == 0 ? model_of(40, 45, 23, true, true) : NULL;
	}
}

/* The decoder IS the forward, bit for bit, when products are row-independent. */
TEST(translate_equals_forward_bitwise_under_reference_gemm)
{
	cq_sgemm_fn prev = cq_blas_bind(NULL);

	translate_equals_forward_bitwise(false);
	cq_blas_bind(prev);
}

/* Packed (the extension's inference path), under OpenBLAS: bit for bit. */
TEST(translate_equals_forward_bitwise_packed)
{
	translate_equals_forward_bitwise(true);
}

TEST(translate_equals_forward_within_tolerance_under_openblas)
{
	fixture		f = {.m = model(40, 45, 12, false)};
	cq_translate_options o = beam_options(4, 4, 1.0);
	double		worst;

	sources(f.srcs, f.ids, 6, 40, 4);
	CHECK_INT_EQ(run(f.m, &o, f.srcs, 6, 3, f.out, &f.k, &f.err), CQ_OK);
	worst = against_forward(f.m, &o, f.srcs, f.out, 6, false);
	if (!(worst <= TOL_OPENBLAS))
		unit_fail(__FILE__, __LINE__, "max |incremental - forward| %.3g > %g", worst, TOL_OPENBLAS);
	cq_model_free(f.m);
}

/* Greedy = argmax of the teacher-forced distribution at every position. */
TEST(translate_greedy_is_the_forward_argmax_loop)
{
	cq_sgemm_fn prev = cq_blas_bind(NULL);
	fixture		f = {.m = model(30, 33, 13, true)};
	cq_translate_options o = beam_options(1, 1, 1.0);
	int			v = f.m->cfg.tgt_vocab_size;

	o.min_len = 2;
	sources(f.srcs, f.ids, 4, 30, 5);
	CHECK_INT_EQ(run(f.m, &o, f.srcs, 4, 2, f.out, &f.k, &f.err), CQ_OK);
	for (int i = 1; i < 4; i++)
	{
		int32_t		prefix[MAXT + 1];
		int			len = f.out[i].len[0];

		memcpy(prefix, f.out[i].tok[0], sizeof(int32_t) * len);
		prefix[len] = CQ_EOS_ID;
		for (int t = 0; t <= len; t++)
		{
			float		best = -INFINITY,
						logp[MAXT];
			int32_t		arg = -1,
						y[MAXT + 1];
			double		sent;

			memcpy(y, prefix, sizeof(int32_t) * t);
			for (int tok = 0; tok < v; tok++)
			{
				if (tok == CQ_PAD_ID || (tok == CQ_EOS_ID && t < o.min_len) ||
					(tok != CQ_EOS_ID && t == 12))
					continue;
				y[t] = tok;
				/* an EOS gold at position t is the forward's last position */
				forward_logps(f.m, &f.srcs[i], y, tok == CQ_EOS_ID ? t : t + 1, logp, &sent);
				if (logp[t] > best)
				{
					best = logp[t];
					arg = tok;
				}
			}
			CHECK_INT_EQ(arg, prefix[t]);
		}
	}
	cq_model_free(f.m);
	cq_blas_bind(prev);
}

static bool
same_kept(const kept *a, const kept *b)
{
	if (a->n_hyps != b->n_hyps)
		return false;
	for (int h = 0; h < a->n_hyps; h++)
		if (a->len[h] != b->len[h] ||
			memcmp(a->tok[h], b->tok[h], sizeof(int32_t) * a->len[h]) != 0 ||
			memcmp(a->lp[h], b->lp[h], sizeof(float) * (a->len[h] + 1)) != 0 ||
			a->logprob[h] != b->logprob[h] || a->score[h] != b->score[h])
			return false;
	return true;
}

/* Alone, in batches of 2, 3 and 8, reversed: the same bits per sentence. */
static void
check_batch_invariance(const cq_translate_options *o, bool pack)
{
	cq_model   *m = model(40, 45, 14, true);
	cq_source	srcs[8],
				rev[8],
				one;
	int32_t		ids[8][10];
	kept		alone[8],
				got[8],
				single;
	sink		k = {0};
	cq_error err;
	const int	batches[3] = {2, 3, 8};

	if (pack)
		packed(m);
	sources(srcs, ids, 8, 40, 6);
	for (int i = 0; i < 8; i++)
	{
		one = srcs[i];
		one.tag = 0;
		CHECK_INT_EQ(run(m, o, &one, 1, 1, &single, &k, &err), CQ_OK);
		alone[i] = single;
		rev[7 - i] = srcs[i];
		rev[7 - i].tag = 7 - i;
	}
	for (int b = 0; b < 3; b++)
	{
		CHECK_INT_EQ(run(m, o, srcs, 8, batches[b], got, &k, &err), CQ_OK);
		for (int i = 0; i < 8; i++)
			if (!same_kept(&alone[i], &got[i]))
				unit_fail(__FILE__, __LINE__, "sentence %d differs in a batch of %d", i, batches[b]);
		CHECK_INT_EQ(run(m, o, rev, 8, batches[b], got, &k, &err), CQ_OK);
		for (int i = 0; i < 8; i++)
			if (!same_kept(&alone[i], &got[7 - i]))
				unit_fail(__FILE__, __LINE__, "sentence %d differs reversed in a batch of %d", i,
						  batches[b]);
	}
	cq_model_free(m);
}

TEST(translate_batch_invariant_under_reference_gemm)
{
	cq_sgemm_fn prev = cq_blas_bind(NULL);
	cq_translate_options o = beam_options(3, 2, 1.0);

	check_batch_invariance(&o, false);
	o.search = CQ_SEARCH_SAMPLE;
	o.topk = 5;
	o.seed = 9;
	check_batch_invariance(&o, false);
	cq_blas_bind(prev);
}

/*
 * Threads (common/parallel.h): a job's translation on 1, 2 or 3 threads gives
 * the same bits.  The model is wide enough (d 128, ffn 512, V 3000) that its
 * products pass the kernels' threading threshold, and the step's rows of
 * log-probabilities are shared out too.
 */
TEST(translate_same_bits_on_any_threads)
{
	cq_model_config c;
	cq_model   *m = NULL;
	cq_error err;
	cq_source	srcs[8];
	int32_t		ids[8][10];
	kept		got[3][8];
	sink		k = {0};
	cq_translate_options o = beam_options(3, 2, 1.0);
	int			saved = cq_parallel_threads();

	CHECK_INT_EQ(cq_config_preset("tiny", 3000, 3000, &c, &err), CQ_OK);
	c.d_model = 128;
	c.heads = 4;
	c.ffn_dim = 512;
	c.max_positions = 24;
	CHECK_INT_EQ(cq_model_new(&c, &m, &err), CQ_OK);
	cq_model_init_random(m, 21);
	for (size_t i = 0; i < m->n_floats; i++)
		m->params[i] *= 3.0f;
	packed(m);
	sources(srcs, ids, 8, 3000, 11);
	for (int pass = 0; pass < 2; pass++)
	{
		if (pass == 1)
		{
			o.search = CQ_SEARCH_SAMPLE;
			o.topk = 50;
			o.seed = 3;
		}
		for (int t = 0; t < 3; t++)
		{
			cq_parallel_set_threads(t + 1);
			CHECK_INT_EQ(run(m, &o, srcs, 8, 8, got[t], &k, &err), CQ_OK);
		}
		for (int t = 1; t < 3; t++)
			for (int i = 0; i < 8; i++)
				if (!same_kept(&got[0][i], &got[t][i]))
					unit_fail(__FILE__, __LINE__, "sentence %d differs on %d threads (%s)",
							  i, t + 1, pass ? "sampling" : "beam");
	}
	cq_parallel_set_threads(saved);
	cq_model_free(m);
}

/* The extension's inference path: packed, under OpenBLAS (any core type). */
TEST(translate_batch_invariant_packed)
{
	cq_translate_options o = beam_options(3, 2, 1.0);

	check_batch_invariance(&o, true);
	o.search = CQ_SEARCH_SAMPLE;
	o.topk = 5;
	o.seed = 9;
	check_batch_invariance(&o, true);
}

TEST(translate_sampling_topk1_is_greedy)
{
	fixture		f = {.m = model(40, 45, 15, true)};
	kept		sampled[6];
	cq_translate_options o = beam_options(1, 1, 1.0);

	sources(f.srcs, f.ids, 6, 40, 7);
	CHECK_INT_EQ(run(f.m, &o, f.srcs, 6, 6, f.out, &f.k, &f.err), CQ_OK);
	o.search = CQ_SEARCH_SAMPLE;
	o.topk = 1;
	for (uint64_t seed = 1; seed < 4; seed++)
	{
		o.seed = seed;
		CHECK_INT_EQ(run(f.m, &o, f.srcs, 6, 6, sampled, &f.k, &f.err), CQ_OK);
		for (int i = 0; i < 6; i++)
			CHECK(same_kept(&f.out[i], &sampled[i]));
	}
	cq_model_free(f.m);
}

/* Sampling: a sentence's draws depend on (seed, id), not on the run. */
TEST(translate_sampling_reproduces_and_depends_on_seed_and_id)
{
	fixture		f = {.m = model(40, 45, 16, true)};
	kept		b[6];
	cq_translate_options o = beam_options(2, 2, 1.0);
	int			differ = 0;

	o.search = CQ_SEARCH_SAMPLE;
	o.seed = 5;
	sources(f.srcs, f.ids, 6, 40, 8);
	CHECK_INT_EQ(run(f.m, &o, f.srcs, 6, 4, f.out, &f.k, &f.err), CQ_OK);
	CHECK_INT_EQ(run(f.m, &o, f.srcs, 6, 4, b, &f.k, &f.err), CQ_OK);
	for (int i = 0; i < 6; i++)
		CHECK(same_kept(&f.out[i], &b[i]));
	o.seed = 6;
	CHECK_INT_EQ(run(f.m, &o, f.srcs, 6, 4, b, &f.k, &f.err), CQ_OK);
	for (int i = 1; i < 6; i++)
		differ += !same_kept(&f.out[i], &b[i]);
	CHECK(differ >= 3);
	o.seed = 5;
	for (int i = 0; i < 6; i++)
		f.srcs[i].id += 77;
	CHECK_INT_EQ(run(f.m, &o, f.srcs, 6, 4, b, &f.k, &f.err), CQ_OK);
	differ = 0;
	for (int i = 1; i < 6; i++)
		differ += !same_kept(&f.out[i], &b[i]);
	CHECK(differ >= 3);
	cq_model_free(f.m);
}

TEST(translate_lengths_are_bounded)
{
	fixture		f = {.m = model(40, 45, 17, true)};
	cq_translate_options o = beam_options(3, 3, 1.0);

	sources(f.srcs, f.ids, 6, 40, 9);
	/* min_len above max_len: </s> only at max_len, every hypothesis that long */
	o.max_len_b = 3;
	o.min_len = 50;
	CHECK_INT_EQ(run(f.m, &o, f.srcs, 6, 3, f.out, &f.k, &f.err), CQ_OK);
	for (int i = 0; i < 6; i++)
		for (int h = 0; h < f.out[i].n_hyps; h++)
			CHECK_INT_EQ(f.out[i].len[h], f.srcs[i].len ? 3 : 0);
	/* max_len = trunc(a (|src| + 1) + b), capped by the positions */
	o.max_len_a = 1.5;
	o.max_len_b = 1;
	CHECK_INT_EQ(cq_translate_max_len(&o, &f.m->cfg, 4), 8);
	CHECK_INT_EQ(cq_translate_max_len(&o, &f.m->cfg, 0), 0);
	CHECK_INT_EQ(cq_translate_max_len(&o, &f.m->cfg, 20), 23);
	o.max_len_a = 0;
	o.max_len_b = 200;
	o.min_len = 0;
	CHECK_INT_EQ(cq_translate_max_len(&o, &f.m->cfg, 1), 23);
	CHECK_INT_EQ(run(f.m, &o, f.srcs, 6, 3, f.out, &f.k, &f.err), CQ_OK);
	for (int i = 0; i < 6; i++)
		for (int h = 0; h < f.out[i].n_hyps; h++)
			CHECK(f.out[i].len[h] <= 23);
	cq_model_free(f.m);
}

TEST(translate_empty_source_gives_eos_only)
{
	cq_model   *m = model(40, 45, 18, true);
	cq_source	src = {NULL, 0, 1, 0};
	kept		out;
	sink		k = {0};
	cq_error err;
	cq_translate_options o = beam_options(4, 4, 1.0);
	float		logp[2];
	double		sent;

	o.min_len = 3;
	CHECK_INT_EQ(run(m, &o, &src, 1, 1, &out, &k, &err), CQ_OK);
	CHECK_INT_EQ(out.n_hyps, 1);
	CHECK_INT_EQ(out.len[0], 0);
	forward_logps(m, &src, NULL, 0, logp, &sent);
	CHECK_NEAR(out.lp[0][0], logp[0], TOL_OPENBLAS);
	cq_model_free(m);
}

static bool
repeats_ngram(const int32_t *y, int len, int n)
{
	for (int i = 0; i + n <= len; i++)
		for (int j = i + 1; j + n <= len; j++)
			if (memcmp(y + i, y + j, sizeof(int32_t) * n) == 0)
				return true;
	return false;
}

TEST(translate_no_repeat_ngram)
{
	fixture		f = {.m = model(12, 14, 19, true)};	/* few tokens: repeats are likely */
	cq_translate_options o = beam_options(3, 3, 1.0);
	int			repeats = 0;

	sources(f.srcs, f.ids, 6, 12, 10);
	o.min_len = 10;
	CHECK_INT_EQ(run(f.m, &o, f.srcs, 6, 6, f.out, &f.k, &f.err), CQ_OK);
	for (int i = 0; i < 6; i++)
		repeats += repeats_ngram(f.out[i].tok[0], f.out[i].len[0], 2);
	CHECK(repeats > 0);			/* the check below can fail */
	for (int n = 1; n <= 3; n++)
	{
		o.no_repeat_ngram_size = n;
		o.max_len_b = n == 1 ? 8 : 12;	/* 10 non-special tokens */
		o.min_len = 0;
		CHECK_INT_EQ(run(f.m, &o, f.srcs, 6, 6, f.out, &f.k, &f.err), CQ_OK);
		for (int i = 0; i < 6; i++)
			for (int h = 0; h < f.out[i].n_hyps; h++)
				CHECK(!repeats_ngram(f.out[i].tok[h], f.out[i].len[h], n));
	}
	cq_model_free(f.m);
}

TEST(translate_keeps_unk)
{
	fixture		f = {.m = model(40, 45, 20, true)};
	cq_translate_options o = beam_options(2, 1, 1.0);
	int			unks = 0;

	sources(f.srcs, f.ids, 4, 40, 11);
	o.unk_penalty = -30.0;		/* a bonus: <unk> wins */
	o.max_len_b = 5;
	CHECK_INT_EQ(run(f.m, &o, f.srcs, 4, 4, f.out, &f.k, &f.err), CQ_OK);
	for (int i = 1; i < 4; i++)
		for (int t = 0; t < f.out[i].len[0]; t++)
			unks += f.out[i].tok[0][t] == CQ_UNK_ID;
	CHECK(unks > 0);
	cq_model_free(f.m);
}

TEST(translate_progress_and_cancel)
{
	fixture		f = {.m = model(40, 45, 21, true)};
	cq_translate_options o = beam_options(2, 1, 1.0);
	size_t		bytes;
	void	   *ws;
	cq_translator *t;
	cq_translation tr;
	long		tokens = 0;
	int			done = 0;

	sources(f.srcs, f.ids, 6, 40, 12);
	CHECK_INT_EQ(run(f.m, &o, f.srcs, 6, 2, f.out, &f.k, &f.err), CQ_OK);
	CHECK_INT_EQ(f.k.emitted, 6);
	for (int i = 0; i < 6; i++)
		tokens += f.out[i].len[0] + 1;
	/* the step API by hand: progress counts what came f.out */
	bytes = cq_translator_bytes(f.m, &o, 2, 9);
	ws = malloc(bytes);
	CHECK_INT_EQ(cq_translator_init(f.m, &o, 2, 9, ws, bytes, &t, &f.err), CQ_OK);
	for (int next = 0; next < 6 || cq_translator_busy(t);)
	{
		while (next < 6 && cq_translator_free_slots(t) > 0)
			CHECK_INT_EQ(cq_translator_admit(t, &f.srcs[next++], &f.err), CQ_OK);
		CHECK(cq_translator_progress(t)->active <= 2);
		CHECK_INT_EQ(cq_translator_step(t, &f.err), CQ_OK);
		while (cq_translator_next(t, &tr))
			done++;
	}
	CHECK_INT_EQ(done, 6);
	CHECK_INT_EQ(cq_translator_progress(t)->sentences, 6);
	CHECK_INT_EQ(cq_translator_progress(t)->tokens, tokens);
	CHECK(cq_translator_progress(t)->steps >= 13);
	/* a full batch refuses another sentence */
	CHECK_INT_EQ(cq_translator_admit(t, &f.srcs[1], &f.err), CQ_OK);
	CHECK_INT_EQ(cq_translator_admit(t, &f.srcs[2], &f.err), CQ_OK);
	CHECK_INT_EQ(cq_translator_admit(t, &f.srcs[3], &f.err), CQ_EINVAL);
	free(ws);
	/* cancelled after two steps: nothing more is decoded */
	f.k.cancel_after = 2;
	f.k.emitted = 0;
	f.k.ticks = 0;
	CHECK_INT_EQ(run(f.m, &o, f.srcs, 6, 2, f.out, &f.k, &f.err), CQ_STOPPED);
	CHECK_INT_EQ(f.k.ticks, 2);
	CHECK(f.k.emitted <= 2);
	cq_model_free(f.m);
}

/* Bad option i (0 .. N_BAD-1); returns a word its message must hold. */
#define N_BAD 17
static const char *
set_bad(cq_translate_options *x, int i)
{
	switch (i)
	{
		case 0: x->beam = 0; return "beam";
		case 1: x->beam = 30; return "too large";
		case 2: x->nbest = 6; return "nbest";
		case 3: x->lenpen = NAN; return "lenpen";
		case 4: x->lenpen = INFINITY; return "lenpen";
		case 5: x->max_len_b = -1; return "max_len_b";
		case 6: x->max_len_a = NAN; return "max_len_a";
		case 7: x->min_len = -1; return "min_len";
		case 8: x->temperature = 0; return "temperature";
		case 9: x->search = CQ_SEARCH_SAMPLE; x->topk = 46; return "topk";
		case 10: x->search = CQ_SEARCH_SAMPLE; x->topk = -1; return "topk";
		case 11: x->search = CQ_SEARCH_SAMPLE; x->topp = 1.5; return "topp";
		case 12: x->search = CQ_SEARCH_SAMPLE; x->topp = NAN; return "topp";
		case 13: x->search = CQ_SEARCH_SAMPLE; x->topk = 3; x->topp = 0.5; return "combined";
		case 14: x->topk = 3; return "sampling only";
		case 15: x->no_repeat_ngram_size = -2; return "no_repeat";
		default: x->unk_penalty = -INFINITY; return "unk_penalty";
	}
}

TEST(translate_rejects_bad_input)
{
	cq_model   *m = model(40, 45, 22, true);
	cq_translate_options o;
	cq_error err;
	int32_t		long_src[30] = {0},
				bad_id[2] = {5, 40};
	cq_source	too_long = {long_src, 24, 1, 0},
				bad = {bad_id, 2, 2, 0},
				fine = {bad_id, 1, 3, 0};
	kept		out;
	sink		k = {0};

	for (int i = 0; i < N_BAD; i++)
	{
		const char *word;

		cq_translate_options_default(&o);
		word = set_bad(&o, i);
		err.msg[0] = '\0';
		CHECK_INT_EQ(cq_translate_options_check(&o, &m->cfg, &err), CQ_EINVAL);
		if (!strstr(err.msg, word))
			unit_fail(__FILE__, __LINE__, "case %d: \"%s\" does not say %s", i, err.msg, word);
		CHECK_INT_EQ(run(m, &o, &fine, 1, 1, &out, &k, &err), CQ_EINVAL);
	}
	cq_translate_options_default(&o);
	CHECK_INT_EQ(run(m, &o, &too_long, 1, 1, &out, &k, &err), CQ_ELIMIT);
	CHECK(strstr(err.msg, "at most 23") != NULL);
	CHECK_INT_EQ(run(m, &o, &bad, 1, 1, &out, &k, &err), CQ_EINVAL);
	CHECK(strstr(err.msg, "vocabulary") != NULL);
	/* a workspace one byte short */
	{
		size_t		bytes = cq_translate_bytes(m, &o, &fine, 1, 1);
		void	   *ws = malloc(bytes);

		CHECK_INT_EQ(cq_translate(m, &o, &fine, 1, 1, ws, bytes - 1, NULL, &err), CQ_EINTERNAL);
		CHECK_INT_EQ(cq_translate(m, &o, &fine, 1, 1, ws, bytes, NULL, &err), CQ_OK);
		free(ws);
	}
	cq_model_free(m);
}
