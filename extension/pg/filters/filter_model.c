/*
 * Model filters of a spec (dual_xent, embedding_cosine, classifier): the decision rule
 * and the batched scores it is taken on.  Every function that evaluates a
 * spec -- filter_stats() (so filter_report()), filter_keeps(),
 * filter_rejects(), and the predicate filter_predicate() writes, a
 * filter_keeps() call -- comes here, so they cannot disagree on a pair: the
 * score is the one the kind's function computes (corpq_dual_xent_score(),
 * corpq_embed_cosine_score(): the same bits alone or in a batch, and the
 * bits of the per-row SQL function; classifier_scorer_prob(), pair by pair,
 * corpq.pair_quality()'s own computation) and the rule is the one below.
 *
 * A pair longer than a model accepts has no score (NaN here, NULL from
 * corpq.dual_xent() and corpq.embedding_cosine()), and the filter rejects
 * it: the filter keeps the pairs the models vouch for, and they cannot vouch
 * for a pair they could not read; it is the decision of WHERE
 * corpq.dual_xent(...) >= threshold, whose NULL drops the row.  The spec's
 * on_too_long "error" makes it an ERROR instead.  A classifier gives no
 * probability (NULL from corpq.pair_quality()) when a model feature is NULL:
 * rejected likewise, and filter_rejects() names that reason apart
 * (FILTER_NO_SCORE_SUFFIX).
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/builtins.h"

#include "filters/dedup.h"
#include "pg/base/errors.h"
#include "pg/classifier/classifier.h"
#include "pg/filters/filters.h"

bool
filter_rejects_copies(const FilterSpec *s)
{
	return s->model && s->model_kind == FILTER_MODEL_EMBEDDING_COSINE && s->args.reject_copies;
}

/*
 * Keep a pair whose score reaches the threshold (>=, as the rule filters'
 * ratios).  An embedding_cosine filter with reject_copies first rejects a
 * pair whose target is a copy of its source, by corpq's one definition of a
 * copy (curate()'s): an encoder gives a copy nearly the same vector on both
 * sides, so its cosine is above real translations' and no threshold alone
 * can reject it (docs/filters.md).
 */
FilterVerdict
filter_model_verdict(const FilterSpec *s, const cq_pair *p, double score)
{
	Assert(s->model);
	if (filter_rejects_copies(s))
	{
		bool		copy;
		cq_error	err;

		if (cq_dedup_is_copy(&p->src, &p->tgt, &copy, &err) != CQ_OK)
			corpq_core_error(&err, NULL, "could not compare the sides of a pair");
		if (copy)
			return FILTER_REJECT_COPY;
	}
	if (isnan(score))
		return FILTER_REJECT_NO_SCORE;	/* no score: rejected (above) */
	return score >= s->args.threshold ? FILTER_KEEP : FILTER_REJECT_SCORE;
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
		case FILTER_MODEL_CLASSIFIER:
			if (s->classifier == NULL)
				s->classifier = classifier_scorer_open(s->args.classifier, cxt);
			for (int j = 0; j < n; j++)
			{
				text	   *src = cstring_to_text_with_len(texts[j].src, texts[j].src_len);
				text	   *tgt = cstring_to_text_with_len(texts[j].tgt, texts[j].tgt_len);

				CHECK_FOR_INTERRUPTS();
				null[j] = !classifier_scorer_prob(s->classifier, src, tgt, &out[j]);
				pfree(src);
				pfree(tgt);
			}
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
		if (s->classifier)
			classifier_scorer_close(s->classifier);
		s->dual_xent = NULL;
		s->embed_cosine = NULL;
		s->classifier = NULL;
	}
}
