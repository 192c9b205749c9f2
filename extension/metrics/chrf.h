/*
 * chrF (Popović, 2015) and chrF++ (Popović, 2017) as sacreBLEU 2.x computes
 * them: per sentence pair, for each character n-gram order 1..char_order
 * (whitespace removed unless asked) and word n-gram order 1..word_order, the
 * triple (hypothesis n-grams, reference n-grams, clipped matches); the
 * triples add up over a corpus, and the score is the F-beta of the averaged
 * precision and recall.
 */
#ifndef CQ_METRICS_CHRF_H
#define CQ_METRICS_CHRF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "metrics/work.h"

#define CQ_CHRF_MAX_CHAR_ORDER 16
#define CQ_CHRF_MAX_WORD_ORDER 8
#define CQ_CHRF_MAX_STATS (3 * (CQ_CHRF_MAX_CHAR_ORDER + CQ_CHRF_MAX_WORD_ORDER))

typedef struct cq_chrf_options
{
	int			char_order;		/* 1 .. CQ_CHRF_MAX_CHAR_ORDER, default 6 */
	int			word_order;		/* 0 .. CQ_CHRF_MAX_WORD_ORDER; 2 is chrF++ */
	double		beta;			/* recall weight, default 2 */
	bool		lowercase;
	bool		whitespace;		/* keep whitespace in character n-grams */
	bool		eps_smoothing;	/* chrF++.py's epsilon instead of effective order */
} cq_chrf_options;

/* sacreBLEU's defaults: chrF2, 6 character n-grams, no word n-grams. */
void		cq_chrf_options_init(cq_chrf_options *o);

/* Number of statistics: 3 per order, [hyp, ref, match] for each. */
int			cq_chrf_nstats(const cq_chrf_options *o);

/*
 * Statistics of one hypothesis against nrefs >= 1 references: those of the
 * reference giving the best sentence score (the first one on a tie).  stats
 * has room for cq_chrf_nstats(o).  Errors: CQ_EINVAL (nrefs or an order
 * out of range), CQ_ELIMIT (a text longer than CQ_METRICS_MAX_TEXT), CQ_ENOMEM.
 */
cq_code		cq_chrf_sentence_stats(const cq_chrf_options *o, const char *hyp, size_t hyp_len,
								   const char *const *refs, const size_t *ref_lens, int nrefs,
								   cq_metrics_work *w, int64_t *stats, cq_error *err);

/* The score in [0, 100] from (summed) statistics. */
double		cq_chrf_score(const cq_chrf_options *o, const int64_t *stats);

/* The same with the arguments of a cq_bootstrap_score_fn. */
double		cq_chrf_score_row(const int64_t *stats, const void *options);

#endif
