/*
 * Static corpus strategies: proportional (one stream over the union, so
 * prob is only reported), temperature (MultiUAT Eq. 4, the shares of
 * corpq.temperature_weights) and uniform (over non-empty corpora).
 */
#include "postgres.h"

#include <math.h>

#include "pg/train/train_sampler.h"

void
train_strategy_proportional_init(TrainSampler *s, const TrainOptions *o)
{
	double		total = 0;

	for (int i = 0; i < s->n; i++)
		total += s->size[i];
	for (int i = 0; i < s->n; i++)
		s->prob[i] = total > 0 ? s->size[i] / total : 0;
}

/*
 * q_tau(i) = size_i^(1/tau) / sum_j size_j^(1/tau), in log space relative to
 * the largest size as temperature_weights.c does (equal to its shares up to
 * rounding): every exponent is <= 0, so no tau overflows.
 */
void
train_strategy_temperature_init(TrainSampler *s, const TrainOptions *o)
{
	double		max = -INFINITY,
				sum = 0;

	for (int i = 0; i < s->n; i++)
		if (s->size[i] > 0)
			max = Max(max, log((double) s->size[i]));
	for (int i = 0; i < s->n; i++)
		s->prob[i] = s->size[i] > 0 ? exp((log((double) s->size[i]) - max) / o->tau) : 0;
	for (int i = 0; i < s->n; i++)
		sum += s->prob[i];
	for (int i = 0; i < s->n; i++)
		s->prob[i] /= sum;
}

void
train_strategy_uniform_init(TrainSampler *s, const TrainOptions *o)
{
	int			nonempty = 0;

	for (int i = 0; i < s->n; i++)
		nonempty += s->size[i] > 0;
	for (int i = 0; i < s->n; i++)
		s->prob[i] = s->size[i] > 0 ? 1.0 / nonempty : 0;
}
