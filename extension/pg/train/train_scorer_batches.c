/*
 * The dev and training pairs the multiuat and multidds updates look at
 * (train_scorer.h): a few consecutive pairs of each corpus, from a start
 * drawn from (seed, step, corpus), so that a resumed job sees the same ones.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"

#include "common/rng.h"
#include "pg/base/internal_sql.h"
#include "pg/model/model_session.h"
#include "pg/train/train_scorer.h"

static int *
label_index(TrainScorer *sc, const TrainCorpus *c, int label, int *count)
{
	int		   *idx = MemoryContextAlloc(GetMemoryChunkContext(sc), sizeof(int) * Max(1, c->n_pairs));

	*count = 0;
	for (long k = 0; k < c->n_pairs; k++)
		if (c->label[k] == label)
			idx[(*count)++] = (int) k;
	return idx;
}

/* About dev_tokens padded tokens of consecutive pairs of idx from a drawn start. */
static int
pick_batch(TrainScorer *sc, const TrainCorpus *c, const int *idx, int count, uint64 key,
		   cq_pair **pairs)
{
	int			start,
				n = 0,
				longest = 0;

	start = (int) (key % (uint64) count);

	*pairs = palloc(sizeof(cq_pair) * count);
	while (n < count)
	{
		long		k = idx[(start + n) % count];
		int			l = Max(longest, Max(c->src_len[k], c->tgt_len[k]) + 1);

		if (n > 0 && l * (n + 1) > sc->o.dev_tokens)
			break;
		train_corpus_pair(c, k, &(*pairs)[n]);
		longest = l;
		n++;
	}
	return n;
}

int
train_scorer_dev_batch(TrainSampler *s, const TrainSamplerView *view, int i, cq_pair **pairs)
{
	TrainScorer *sc = s->priv;

	if (sc->dev_index == NULL)
	{
		sc->dev_index = MemoryContextAlloc(GetMemoryChunkContext(sc), sizeof(int *) * sc->n);
		sc->dev_count = MemoryContextAlloc(GetMemoryChunkContext(sc), sizeof(int) * sc->n);
		for (int c = 0; c < sc->n; c++)
			sc->dev_index[c] = label_index(sc, view->dev, view->dev_label[c], &sc->dev_count[c]);
	}
	return pick_batch(sc, view->dev, sc->dev_index[i], sc->dev_count[i],
					  cq_mix64(s->seed ^ cq_mix64((uint64) view->step * 1000003 + i)), pairs);
}

int
train_scorer_train_batch(TrainSampler *s, const TrainSamplerView *view, int i, cq_pair **pairs)
{
	TrainScorer *sc = s->priv;

	if (sc->train_index == NULL)
	{
		sc->train_index = MemoryContextAlloc(GetMemoryChunkContext(sc), sizeof(int *) * sc->n);
		sc->train_count = MemoryContextAlloc(GetMemoryChunkContext(sc), sizeof(int) * sc->n);
		for (int c = 0; c < sc->n; c++)
			sc->train_index[c] = label_index(sc, view->corpus, c, &sc->train_count[c]);
	}
	return pick_batch(sc, view->corpus, sc->train_index[i], sc->train_count[i],
					  cq_mix64(s->seed ^ cq_mix64((uint64) view->step * 1000033 + i + 7777)), pairs);
}
