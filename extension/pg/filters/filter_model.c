/*
 * Model filters of a spec (dual_xent, embedding_cosine): the decision rule
 * and the batched scores it is taken on.  Every function that evaluates a
 * spec -- filter_stats() (so filter_report()), filter_keeps(),
 * filter_rejects(), and the predicate filter_predicate() writes, a
 * filter_keeps() call -- comes here, so they cannot disagree on a pair: the
 * score is the one the kind's function computes (corpq_dual_xent_score(),
 * corpq_embed_cosine_score(): the same bits alone or in a batch, and the
 * bits of the per-row SQL function) and the rule is the one below.
 *
 * A pair longer than a model accepts has no score (NaN here, NULL from
 * corpq.dual_xent() and corpq.embedding_cosine()), and the filter rejects
 * it: the filter keeps the pairs the models vouch for, and they cannot vouch
 * for a pair they could not read; it is the decision of WHERE
 * corpq.dual_xent(...) >= threshold, whose NULL drops the row.  The spec's
 * on_too_long "error" makes it an ERROR instead.
 */
#include "postgres.h"

#include <math.h>

#include "pg/filters/filters.h"

/* Keep a pair whose score reaches the threshold (>=, as the rule filters' ratios). */
bool
filter_model_keeps(const FilterSpec *s, double score)
{
	Assert(s->model);
	if (isnan(score))
		return false;			/* no score: rejected (above) */
	return score >= s->args.threshold;
}

/*
 * The kind's scores of n pairs; scorers live with the list (cxt): names
 * resolve once, vocabularies load once.  The parser pinned the names:
 * they resolve as pinned versions.
 */
static void
kind_scores(FilterSpec *s, MemoryContext cxt, const CorpqTextPair *texts, int n, double *out,
			bool *null)
{
	CorpqTooLong on_too_long = (CorpqTooLong) s->args.on_too_long;

	switch (s->model_kind)
	{
		case FILTER_MODEL_DUAL_XENT:
			if (s->dual_xent == NULL)
				s->dual_xent = corpq_dual_xent_create(cxt);
			corpq_dual_xent_score(s->dual_xent, s->args.forward, s->args.backward, true,
								  on_too_long, texts, n, out, null, NULL);
			break;
		case FILTER_MODEL_EMBEDDING_COSINE:
			if (s->embed_cosine == NULL)
				s->embed_cosine = corpq_embed_cosine_create(cxt);
			corpq_embed_cosine_score(s->embed_cosine, s->args.model, true, on_too_long,
									 texts, n, out, null);
			break;
		case FILTER_MODEL_NONE:
			elog(ERROR, "filter \"%s\" has no model", s->label);
	}
}

void
filter_model_scores(FilterList *list, int i, const cq_pair *pairs, int n, double *out)
{
	FilterSpec *s = &list->items[i];
	CorpqTextPair *texts;
	bool	   *null;

	Assert(s->model);
	if (n <= 0)
		return;
	texts = palloc(sizeof(CorpqTextPair) * n);
	null = palloc(sizeof(bool) * n);
	for (int j = 0; j < n; j++)
	{
		texts[j].src = pairs[j].src.s;
		texts[j].src_len = (int) pairs[j].src.bytes;
		texts[j].tgt = pairs[j].tgt.s;
		texts[j].tgt_len = (int) pairs[j].tgt.bytes;
	}
	kind_scores(s, list->cxt, texts, n, out, null);
	for (int j = 0; j < n; j++)
		if (null[j])
			out[j] = NAN;
	pfree(texts);
	pfree(null);
}

void
filter_list_release(FilterList *list)
{
	for (int i = 0; i < list->n; i++)
	{
		FilterSpec *s = &list->items[i];

		if (s->dual_xent)
			corpq_dual_xent_free(s->dual_xent);
		if (s->embed_cosine)
			corpq_embed_cosine_free(s->embed_cosine);
		s->dual_xent = NULL;
		s->embed_cosine = NULL;
	}
}
