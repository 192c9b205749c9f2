#include "unit.h"

#include <stdlib.h>

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
