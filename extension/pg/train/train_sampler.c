/*
 * The strategy table and the seeded corpus draw of training jobs.
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "common/rng.h"
#include "pg/train/train_sampler.h"
#include "pg/train/train_scorer.h"

const TrainStrategy train_strategies[] = {
	{"proportional", false, train_strategy_proportional_init, NULL},
	{"temperature", true, train_strategy_temperature_init, NULL},
	{"uniform", true, train_strategy_uniform_init, NULL},
	{"multiuat", true, train_strategy_multiuat_init, train_strategy_multiuat_update,
	train_scorer_check, train_scorer_save, train_scorer_load, train_scorer_log, train_scorer_result},
	{"multidds", true, train_strategy_multidds_init, train_strategy_multidds_update,
	train_scorer_check, train_scorer_save, train_scorer_load, train_scorer_log, train_scorer_result},
	{NULL, false, NULL, NULL}
};

const TrainStrategy *
train_strategy_find(const char *name)
{
	for (const TrainStrategy *s = train_strategies; s->name; s++)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

TrainSampler *
train_sampler_new(const TrainStrategy *strategy, const TrainOptions *o, int n,
				  const char *const *names, const long *size)
{
	TrainSampler *s = palloc0(sizeof(TrainSampler));

	s->strategy = strategy;
	s->n = n;
	s->names = names;
	s->size = size;
	s->prob = palloc0(sizeof(double) * n);
	s->draws = palloc0(sizeof(int64) * n);
	s->seed = (uint64) o->seed;
	strategy->init(s, o);
	return s;
}

/* A uniform double in [0, 1) with 53 random bits, from (seed, step, micro). */
static double
draw_uniform(uint64 seed, int64 step, int micro)
{
	cq_philox_key key = cq_philox_key_from_seed(cq_mix64(seed ^ UINT64CONST(0x73616d706c6572)));
	cq_philox_ctr ctr = {{(uint32) step, (uint32) ((uint64) step >> 32), (uint32) micro, 0x5A4D}};
	cq_philox_ctr r = cq_philox4x32(ctr, key);
	uint64		bits = ((uint64) r.c[0] << 21) ^ ((uint64) r.c[1] >> 11);

	return (double) (bits & ((UINT64CONST(1) << 53) - 1)) / 9007199254740992.0;
}

int
train_sampler_pick(const TrainSampler *s, int64 step, int micro)
{
	double		u = draw_uniform(s->seed, step, micro);
	double		acc = 0;
	int			last = -1;

	/* inverse CDF; rounding can leave u above the total: the last corpus with mass */
	for (int i = 0; i < s->n; i++)
	{
		if (s->prob[i] <= 0)
			continue;
		last = i;
		acc += s->prob[i];
		if (u < acc)
			return i;
	}
	return last;
}
