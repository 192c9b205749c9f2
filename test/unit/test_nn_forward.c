#include "unit.h"

#include <stdlib.h>

#include "common/parallel.h"
#include "nn/infer/forward.h"

static cq_model *
tiny(int vocab)
{
	cq_model_config c;
	cq_model   *m = NULL;
	cq_error err;

	CHECK_INT_EQ(cq_config_preset("tiny", vocab, vocab + 5, &c, &err), CQ_OK);
	c.max_positions = 10;
	CHECK_INT_EQ(cq_model_new(&c, &m, &err), CQ_OK);
	cq_model_init_random(m, 3);
	CHECK_INT_EQ(cq_model_pack(m, &err), CQ_OK);
	return m;
}

typedef struct outputs
{
	float		logp[64],
				pmax[64],
				ent[64];
	int32_t		arg[64];
	double		sent[8];
	int			count[8];
	cq_forward_out out;
} outputs;

static void
bind(outputs *o)
{
	o->out = (cq_forward_out) {o->logp, o->pmax, o->ent, o->arg, o->sent, o->count};
}

static cq_code
run(cq_model *m, const cq_pair *pairs, int n, const cq_dropout *dr, outputs *o,
	cq_error *err, long shrink)
{
	cq_batch_shape shape;
	cq_code s = cq_batch_shape_of(m, pairs, n, &shape, err);
	size_t		bytes;
	void	   *ws;

	if (s)
		return s;
	bytes = cq_forward_workspace_bytes(&m->cfg, &shape);
	ws = malloc(bytes);
	bind(o);
	s = cq_forward(m, pairs, n, dr, ws, bytes - shrink, &o->out, err);
	free(ws);
	return s;
}

TEST(forward_outputs_are_consistent)
{
	cq_model   *m = tiny(40);
	const int32_t s1[] = {5, 6, 7},
				t1[] = {8, 9},
				s2[] = {39};
	cq_pair		pairs[3] = {{s1, 3, t1, 2, 1}, {s2, 1, NULL, 0, 2}, {NULL, 0, t1, 1, 3}};
	outputs		o;
	cq_error err;
	long		r = 0;

	CHECK_INT_EQ(run(m, pairs, 3, NULL, &o, &err, 0), CQ_OK);
	for (int b = 0; b < 3; b++)
	{
		double		sum = 0;

		CHECK_INT_EQ(o.count[b], pairs[b].tgt_len + 1);
		for (int t = 0; t < o.count[b]; t++, r++)
		{
			sum += o.logp[r];
			CHECK(o.logp[r] < 0 && exp(o.logp[r]) <= o.pmax[r] * (1 + 1e-6));
			CHECK(o.ent[r] > 0 && o.ent[r] <= log(45.0) + 1e-5);
			CHECK(o.arg[r] >= 0 && o.arg[r] < 45);
		}
		CHECK_NEAR(o.sent[b], sum, 1e-5);
	}
	cq_model_free(m);
}

TEST(forward_rejects_bad_input)
{
	cq_model   *m = tiny(40);
	int32_t		ok[9] = {4, 4, 4, 4, 4, 4, 4, 4, 4},
				big[1] = {40},
				neg[1] = {-3},
				tbig[1] = {45};
	outputs		o;
	cq_error err;
	cq_pair		p;

	p = (cq_pair) {big, 1, ok, 1, 0};
	CHECK_INT_EQ(run(m, &p, 1, NULL, &o, &err, 0), CQ_EINVAL);
	CHECK(strstr(err.msg, "source id 40 is outside the vocabulary of 40") != NULL);
	p = (cq_pair) {neg, 1, ok, 1, 0};
	CHECK_INT_EQ(run(m, &p, 1, NULL, &o, &err, 0), CQ_EINVAL);
	p = (cq_pair) {ok, 1, tbig, 1, 0};
	CHECK_INT_EQ(run(m, &p, 1, NULL, &o, &err, 0), CQ_EINVAL);
	p = (cq_pair) {ok, 10, ok, 1, 0};	/* 10 + </s> > max_positions 10 */
	CHECK_INT_EQ(run(m, &p, 1, NULL, &o, &err, 0), CQ_EINVAL);
	CHECK(strstr(err.msg, "at most 9") != NULL);
	p = (cq_pair) {ok, 9, ok, 10, 0};
	CHECK_INT_EQ(run(m, &p, 1, NULL, &o, &err, 0), CQ_EINVAL);
	p = (cq_pair) {NULL, 2, ok, 1, 0};
	CHECK_INT_EQ(run(m, &p, 1, NULL, &o, &err, 0), CQ_EINVAL);
	CHECK_INT_EQ(run(m, &p, 0, NULL, &o, &err, 0), CQ_EINVAL);
	p = (cq_pair) {ok, 9, ok, 9, 0};
	CHECK_INT_EQ(run(m, &p, 1, NULL, &o, &err, 0), CQ_OK);
	CHECK_INT_EQ(run(m, &p, 1, NULL, &o, &err, 1), CQ_EINTERNAL);
	cq_model_free(m);
}

/* Monte Carlo passes differ from eval and from each other; eval ignores seeds. */
TEST(forward_dropout_modes)
{
	cq_model   *m = tiny(40);
	const int32_t s1[] = {5, 6, 7, 8, 9},
				t1[] = {8, 9, 10, 11};
	cq_pair		p = {s1, 5, t1, 4, 77};
	cq_dropout	eval_seeded = {CQ_DROPOUT_OFF, 5, 1},
				mc1 = {CQ_DROPOUT_MC, 5, 1},
				mc2 = {CQ_DROPOUT_MC, 5, 2};
	outputs		a,
				b,
				c,
				d;
	cq_error err;

	CHECK_INT_EQ(run(m, &p, 1, NULL, &a, &err, 0), CQ_OK);
	CHECK_INT_EQ(run(m, &p, 1, &eval_seeded, &b, &err, 0), CQ_OK);
	CHECK(memcmp(a.logp, b.logp, 5 * sizeof(float)) == 0);
	CHECK_INT_EQ(run(m, &p, 1, &mc1, &c, &err, 0), CQ_OK);
	CHECK_INT_EQ(run(m, &p, 1, &mc2, &d, &err, 0), CQ_OK);
	CHECK(memcmp(a.logp, c.logp, 5 * sizeof(float)) != 0);
	CHECK(memcmp(c.logp, d.logp, 5 * sizeof(float)) != 0);
	CHECK_INT_EQ(run(m, &p, 1, &mc1, &d, &err, 0), CQ_OK);
	CHECK(memcmp(c.logp, d.logp, 5 * sizeof(float)) == 0);
	p.key = 78;						/* another pair key, other masks */
	CHECK_INT_EQ(run(m, &p, 1, &mc1, &d, &err, 0), CQ_OK);
	CHECK(memcmp(c.logp, d.logp, 5 * sizeof(float)) != 0);
	cq_model_free(m);
}

/* n pairs of random ids (lengths 0 .. max_len, a fixed generator), keyed 1.. */
static cq_pair *
random_pairs(int n, int max_len, int vocab, int32_t *ids)
{
	cq_pair    *p = calloc(n, sizeof(cq_pair));
	unsigned	x = 12345;

	for (int i = 0; i < n; i++)
	{
		p[i].src_len = (x = x * 1103515245u + 12345u) >> 16 & 0x7fff;
		p[i].src_len %= max_len + 1;
		p[i].tgt_len = ((x = x * 1103515245u + 12345u) >> 16 & 0x7fff) % (max_len + 1);
		p[i].src = ids;
		p[i].tgt = ids;
		p[i].key = (uint64_t) i + 1;
	}
	for (int i = 0; i < max_len; i++)
		ids[i] = 4 + (int32_t) (((x = x * 1103515245u + 12345u) >> 16) % (unsigned) (vocab - 4));
	return p;
}

/* The outputs of a forward over pairs with threads (1: cq_forward itself). */
static void
forward_with(cq_model *m, const cq_pair *pairs, int n, const cq_dropout *dr, int threads,
			 float *logp, float *ent, double *sent)
{
	cq_batch_shape shape;
	cq_error	err;
	size_t		bytes;
	void	   *ws;
	float	   *pmax;
	int32_t    *arg;
	int		   *count = malloc(sizeof(int) * n);
	cq_forward_out o;

	CHECK_INT_EQ(cq_batch_shape_of(m, pairs, n, &shape, &err), CQ_OK);
	pmax = malloc(sizeof(float) * shape.tgt_positions);
	arg = malloc(sizeof(int32_t) * shape.tgt_positions);
	o = (cq_forward_out) {logp, pmax, ent, arg, sent, count};
	bytes = cq_forward_parallel_bytes(&m->cfg, pairs, n, threads);
	ws = malloc(bytes);
	CHECK_INT_EQ(cq_forward_parallel(m, pairs, n, dr, threads, ws, bytes, &o, &err), CQ_OK);
	if (threads > 1)
		CHECK_INT_EQ(cq_forward_parallel(m, pairs, n, dr, threads, ws, bytes - 1, &o, &err),
					 CQ_EINTERNAL);
	free(ws);
	free(pmax);
	free(arg);
	free(count);
}

/*
 * A batch shared out by pairs (cq_forward_parallel) gives every pair the
 * bits of the one-thread forward, float32 and int8, dropout off and Monte
 * Carlo, on 2, 3 and 5 threads, and on a batch small enough for one part.
 */
TEST(forward_parallel_same_bits)
{
	int32_t		ids[40];
	cq_pair    *pairs = random_pairs(48, 30, 40, ids);
	int			saved = cq_parallel_threads();
	cq_dropout	mc = {CQ_DROPOUT_MC, 9, 2};

	for (int int8 = 0; int8 <= 1; int8++)
	{
		cq_model_config c;
		cq_model   *m = NULL;
		cq_error	err;
		cq_batch_shape shape;

		CHECK_INT_EQ(cq_config_preset("tiny", 40, 45, &c, &err), CQ_OK);
		c.max_positions = 32;
		c.precision = int8 ? CQ_PRECISION_INT8 : CQ_PRECISION_FLOAT32;
		CHECK_INT_EQ(cq_model_new(&c, &m, &err), CQ_OK);
		cq_model_init_random(m, 3);
		CHECK_INT_EQ(cq_model_pack(m, &err), CQ_OK);
		CHECK_INT_EQ(cq_batch_shape_of(m, pairs, 48, &shape, &err), CQ_OK);
		/* one thread: the plain forward's workspace */
		CHECK_INT_EQ(cq_forward_parallel_bytes(&m->cfg, pairs, 48, 1),
					 cq_forward_workspace_bytes(&m->cfg, &shape));
		for (int d = 0; d <= 1; d++)
			for (int n = 2; n <= 48; n += 46)
			{
				long		rows = 0;
				float	   *l1,
						   *e1,
						   *l2,
						   *e2;
				double		s1[48],
							s2[48];

				for (int i = 0; i < n; i++)
					rows += pairs[i].tgt_len + 1;
				l1 = malloc(sizeof(float) * rows);
				e1 = malloc(sizeof(float) * rows);
				l2 = malloc(sizeof(float) * rows);
				e2 = malloc(sizeof(float) * rows);
				cq_parallel_set_threads(1);
				forward_with(m, pairs, n, d ? &mc : NULL, 1, l1, e1, s1);
				for (int t = 2; t <= 5; t += t == 2 ? 1 : 2)
				{
					cq_parallel_set_threads(t);
					memset(l2, 0, sizeof(float) * rows);
					forward_with(m, pairs, n, d ? &mc : NULL, t, l2, e2, s2);
					if (memcmp(l1, l2, sizeof(float) * rows) != 0 ||
						memcmp(e1, e2, sizeof(float) * rows) != 0 ||
						memcmp(s1, s2, sizeof(double) * n) != 0)
						unit_fail(__FILE__, __LINE__, "int8 %d, dropout %d, %d pairs: %d threads differ from 1",
								  int8, d, n, t);
				}
				free(l1);
				free(e1);
				free(l2);
				free(e2);
			}
		cq_model_free(m);
	}
	cq_parallel_set_threads(saved);
	free(pairs);
}
