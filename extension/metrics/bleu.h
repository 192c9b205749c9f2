/*
 * BLEU (Papineni et al., 2002) as sacreBLEU 2.x computes it (Post, 2018):
 * per sentence pair the sufficient statistics -- clipped n-gram matches and
 * n-gram totals for n = 1..4, hypothesis length and reference length -- which
 * add up over a corpus; from their sum the score, with the brevity penalty
 * and one of the smoothing methods of Chen & Cherry (2014).
 */
#ifndef CQ_METRICS_BLEU_H
#define CQ_METRICS_BLEU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "metrics/tokenize.h"
#include "metrics/work.h"

#define CQ_BLEU_MAX_ORDER 8
#define CQ_BLEU_ORDER 4			/* sacreBLEU's default max_ngram_order */

typedef enum cq_bleu_smooth
{
	CQ_SMOOTH_NONE,
	CQ_SMOOTH_FLOOR,			/* Chen & Cherry's method 1 */
	CQ_SMOOTH_ADD_K,			/* method 2 */
	CQ_SMOOTH_EXP				/* method 3, NIST's (mteval-v13a) */
} cq_bleu_smooth;

#define CQ_SMOOTH_COUNT 4

typedef struct cq_bleu_options
{
	cq_tokenizer tokenize;
	bool		lowercase;
	cq_bleu_smooth smooth;
	double		smooth_value;	/* floor and add-k only */
	bool		effective_order;	/* leave out orders with no n-gram */
	int			max_order;		/* 1 .. CQ_BLEU_MAX_ORDER */
} cq_bleu_options;

typedef struct cq_bleu_stats
{
	int64_t		hyp_len,
				ref_len,
				correct[CQ_BLEU_MAX_ORDER],
				total[CQ_BLEU_MAX_ORDER];
} cq_bleu_stats;

/* sacreBLEU's corpus defaults: 13a, mixed case, exp smoothing, 4-grams. */
void		cq_bleu_options_init(cq_bleu_options *o);

const char *cq_bleu_smooth_name(cq_bleu_smooth s);
bool		cq_bleu_smooth_from_name(const char *name, cq_bleu_smooth *s);

/* The value sacreBLEU uses when none is given: floor 0.1, add-k 1, else 0. */
double		cq_bleu_smooth_default(cq_bleu_smooth s);

/*
 * Statistics of one hypothesis against nrefs >= 1 references (n-gram counts
 * clipped by the most frequent occurrence in any reference; the reference
 * length closest to the hypothesis length, the shorter on a tie).  Texts are
 * UTF-8 of at most CQ_METRICS_MAX_TEXT bytes.  Errors: CQ_EINVAL (nrefs or
 * max_order out of range), CQ_ELIMIT (a text too long), CQ_ENOMEM.
 */
cq_code		cq_bleu_sentence_stats(const cq_bleu_options *o, const char *hyp, size_t hyp_len,
								   const char *const *refs, const size_t *ref_lens, int nrefs,
								   cq_metrics_work *w, cq_bleu_stats *out, cq_error *err);

void		cq_bleu_stats_add(cq_bleu_stats *acc, const cq_bleu_stats *s);

/* The score in [0, 100]; bp and precisions[0..max_order) if not NULL. */
double		cq_bleu_score(const cq_bleu_options *o, const cq_bleu_stats *s,
						  double *bp, double *precisions);

/*
 * The statistics as one flat row, sacreBLEU's order: hyp_len, ref_len,
 * correct[0..max_order), total[0..max_order) -- 2 + 2 max_order values.
 */
int			cq_bleu_nstats(const cq_bleu_options *o);
void		cq_bleu_stats_pack(const cq_bleu_options *o, const cq_bleu_stats *s, int64_t *row);
void		cq_bleu_stats_unpack(const cq_bleu_options *o, const int64_t *row, cq_bleu_stats *s);

/* cq_bleu_score of a flat row; options is a cq_bleu_options (a
 * cq_bootstrap_score_fn). */
double		cq_bleu_score_row(const int64_t *row, const void *options);

/* The tokenized, optionally lowercased string BLEU counts n-grams of, with
 * single spaces between tokens: *out is cq_alloc'd UTF-8 of *out_len bytes. */
cq_code		cq_bleu_tokenized(const cq_bleu_options *o, const char *s, size_t len,
							  cq_metrics_work *w, char **out, size_t *out_len, cq_error *err);

#endif
