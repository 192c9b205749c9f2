/*
 * Validation of a training job: every dev pair scored teacher-forced with
 * dropout off (cq_forward, the scoring functions' pass), summed -log p per
 * target position (</s> included) per corpus label.  The dev loss is that
 * nll per token, not the label-smoothed training loss, so exp(loss) is the
 * perplexity sent_prob implies.
 *
 * An encoder model's dev figure is retrieval's miss rate, 1 - P@1: every
 * dev source and target embedded with dropout off (cq_encode, embed()'s
 * pass), and a pair missed unless its target is its source's nearest among
 * all the dev targets (nn/train/retrieval.h); "nll" counts the misses,
 * "tokens" the pairs, so lower is better as for the loss.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "nn/infer/encode.h"
#include "nn/infer/forward.h"
#include "nn/train/retrieval.h"
#include "pg/base/errors.h"
#include "pg/model/model.h"
#include "pg/train/train.h"

/* Pairs [from, to) of dev fitting about max_tokens padded positions. */
static long
chunk_end(const TrainCorpus *dev, long from, int max_tokens)
{
	int			longest = 0;
	long		i;

	for (i = from; i < dev->n_pairs; i++)
	{
		int			len = Max(dev->src_len[i], dev->tgt_len[i]) + 1;
		int			l = Max(longest, len);

		if (i > from && (long) l * (i - from + 1) > max_tokens)
			break;
		longest = l;
	}
	return i;
}

/* vecs[n_pairs, d] = one side of every dev pair, batches of about max_tokens positions. */
static void
embed_side(const cq_model *m, const TrainCorpus *dev, bool target, int max_tokens, float *vecs)
{
	cq_sentence *s = palloc(sizeof(cq_sentence) * dev->n_pairs);
	void	   *ws = NULL;
	size_t		ws_bytes = 0;
	long		to;

	for (long i = 0; i < dev->n_pairs; i++)
	{
		cq_pair		p;

		train_corpus_pair(dev, i, &p);
		s[i] = target ? (cq_sentence) {p.tgt, p.tgt_len, 0} : (cq_sentence) {p.src, p.src_len, 0};
	}
	for (long from = 0; from < dev->n_pairs; from = to)
	{
		long		positions = 0;
		size_t		need;
		cq_error err = {0};
		cq_code		st;

		for (to = from; to < dev->n_pairs && (to == from || positions + s[to].len + 2 <= max_tokens); to++)
			positions += s[to].len + 2;
		need = cq_encode_sentences_bytes(&m->cfg, s + from, (int) (to - from));
		if (need > ws_bytes)
		{
			if (ws)
				pfree(ws);
			ws = MemoryContextAllocHuge(CurrentMemoryContext, need);
			ws_bytes = need;
		}
		st = cq_encode(m, s + from, (int) (to - from), NULL, ws, ws_bytes,
					   vecs + from * m->cfg.d_model, &err);
		if (st != CQ_OK)
			corpq_core_error(&err, NULL, "could not embed the dev pairs");
		CHECK_FOR_INTERRUPTS();
	}
}

/* An encoder model's figures: misses of retrieval at 1 per label. */
static void
validate_encoder(const cq_model *m, const TrainCorpus *dev, int max_tokens, TrainDevFigures *f)
{
	long		n = dev->n_pairs,
				d = m->cfg.d_model;
	float	   *x = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(float) * n * d),
			   *y = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(float) * n * d),
			   *scratch = MemoryContextAllocHuge(CurrentMemoryContext,
												 sizeof(float) * cq_retrieval_scratch_floats((int) n));
	bool	   *hit = palloc(sizeof(bool) * n);
	double	   *pos = palloc(sizeof(double) * n),
			   *neg = palloc(sizeof(double) * n);

	embed_side(m, dev, false, max_tokens, x);
	embed_side(m, dev, true, max_tokens, y);
	cq_retrieval_figures(x, y, (int) n, (int) d, scratch, hit, pos, neg);
	f->encoder = true;
	for (long i = 0; i < n; i++)
	{
		int			l = dev->label[i];

		f->nll[l] += !hit[i];
		f->tokens[l]++;
		f->pos[l] += pos[i];
		f->neg[l] += neg[i];
		f->all_nll += !hit[i];
		f->all_tokens++;
		f->all_pos += pos[i];
		f->all_neg += neg[i];
	}
}

void
train_validate(CorpqJob *job, const cq_model *m, const TrainCorpus *dev,
			   int max_tokens, TrainDevFigures *f)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "corpq train validation",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	cq_dropout off = {CQ_DROPOUT_OFF, 0, 0};
	void	   *ws = NULL;
	size_t		ws_bytes = 0;
	long		to;

	f->all_nll = 0;
	f->all_tokens = 0;
	f->all_pos = 0;
	f->all_neg = 0;
	f->encoder = false;
	memset(f->nll, 0, sizeof(double) * f->n_labels);
	memset(f->tokens, 0, sizeof(long) * f->n_labels);
	memset(f->pos, 0, sizeof(double) * f->n_labels);
	memset(f->neg, 0, sizeof(double) * f->n_labels);
	if (m->cfg.kind == CQ_KIND_ENCODER)
		validate_encoder(m, dev, max_tokens, f);
	for (long from = 0; m->cfg.kind != CQ_KIND_ENCODER && from < dev->n_pairs; from = to)
	{
		int			n;
		cq_pair    *pairs;
		cq_batch_shape shape;
		cq_forward_out out;
		cq_error err = {0};
		cq_code s;
		size_t		need;

		to = chunk_end(dev, from, max_tokens);
		n = (int) (to - from);
		pairs = palloc(sizeof(cq_pair) * n);
		for (int i = 0; i < n; i++)
			train_corpus_pair(dev, from + i, &pairs[i]);
		if ((s = cq_batch_shape_of(m, pairs, n, &shape, &err)) != CQ_OK)
			corpq_core_error(&err, NULL, "could not score the dev pairs");
		need = cq_forward_workspace_bytes(&m->cfg, &shape);
		if (need > ws_bytes)
		{
			if (ws)
				pfree(ws);
			ws = MemoryContextAllocHuge(cxt, need);
			ws_bytes = need;
		}
		out.logp = palloc(sizeof(float) * shape.tgt_positions);
		out.p_max = palloc(sizeof(float) * shape.tgt_positions);
		out.entropy = palloc(sizeof(float) * shape.tgt_positions);
		out.argmax = NULL;
		out.sent_logp = palloc(sizeof(double) * n);
		out.sent_count = palloc(sizeof(int) * n);
		if ((s = cq_forward(m, pairs, n, &off, ws, ws_bytes, &out, &err)) != CQ_OK)
			corpq_core_error(&err, NULL, "could not score the dev pairs");
		for (int i = 0; i < n; i++)
		{
			int			l = dev->label[from + i];

			f->nll[l] -= out.sent_logp[i];
			f->tokens[l] += out.sent_count[i];
			f->all_nll -= out.sent_logp[i];
			f->all_tokens += out.sent_count[i];
		}
		pfree(out.logp);
		pfree(out.p_max);
		pfree(out.entropy);
		pfree(out.sent_logp);
		pfree(out.sent_count);
		pfree(pairs);
		/* no progress report: a phase change would restart the training rate */
		CHECK_FOR_INTERRUPTS();
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

double
train_dev_loss(const TrainDevFigures *f, int label)
{
	if (label < 0)
		return f->all_tokens > 0 ? f->all_nll / f->all_tokens : NAN;
	return f->tokens[label] > 0 ? f->nll[label] / f->tokens[label] : NAN;
}
