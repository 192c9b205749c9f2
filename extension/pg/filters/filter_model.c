/*
 * Model filters of a spec (dual_xent): the decision rule and the batched
 * scores it is taken on.  Every function that evaluates a spec --
 * filter_stats() (so filter_report()), filter_keeps(), filter_rejects(), and
 * the predicate filter_predicate() writes, a filter_keeps() call -- comes
 * here, so they cannot disagree on a pair: the score is the one
 * corpq_dual_xent_score() computes (the same bits alone or in a batch) and
 * the rule is the one below.
 *
 * A pair longer than a model accepts has no score (NaN here, NULL from
 * corpq.dual_xent()), and the filter rejects it: the filter keeps the pairs
 * the models vouch for, and they cannot vouch for a pair they could not
 * read; it is the decision of WHERE corpq.dual_xent(...) >= threshold,
 * whose NULL drops the row.  The spec's on_too_long "error" makes it an
 * ERROR instead.
 */
#include "postgres.h"

#include <math.h>

#include "pg/filters/filter_spec.h"

/* Keep a pair whose score reaches the threshold (>=, as the rule filters' ratios). */
bool
filter_model_keeps(const FilterSpec *s, double score)
{
	Assert(s->model);
	if (isnan(score))
		return false;			/* no score: rejected (above) */
	return score >= s->args.threshold;
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
	/* scorers live with the list: names resolve once, vocabularies load once */
	if (s->scorer == NULL)
		s->scorer = corpq_dual_xent_create(list->cxt);
	texts = palloc(sizeof(CorpqTextPair) * n);
	null = palloc(sizeof(bool) * n);
	for (int j = 0; j < n; j++)
	{
		texts[j].src = pairs[j].src.s;
		texts[j].src_len = (int) pairs[j].src.bytes;
		texts[j].tgt = pairs[j].tgt.s;
		texts[j].tgt_len = (int) pairs[j].tgt.bytes;
	}
	/* the parser pinned the names: resolve them as pinned versions */
	corpq_dual_xent_score(s->scorer, s->args.forward, s->args.backward, true,
						  (CorpqTooLong) s->args.on_too_long, texts, n, out, null, NULL);
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
		if (list->items[i].scorer)
		{
			corpq_dual_xent_free(list->items[i].scorer);
			list->items[i].scorer = NULL;
		}
}
