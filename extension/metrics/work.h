/*
 * Scratch memory of the metrics, reused from one sentence pair to the next
 * (an aggregate keeps one per query) so that a row costs no allocation once
 * the buffers have grown to the longest sentence seen.
 */
#ifndef CQ_METRICS_WORK_H
#define CQ_METRICS_WORK_H

#include "common/error.h"
#include "common/cptext.h"
#include "metrics/intern.h"
#include "metrics/ngram.h"
#include "metrics/tokenize.h"

typedef struct cq_metrics_work
{
	cq_cpbuf	raw,			/* decoded input */
				low,			/* lowercased */
				tmp;
	int			nseq;			/* room in the arrays below */
	cq_cpbuf   *text;			/* per sequence (hyp, refs): preprocessed */
	cq_cpbuf   *chars;			/* per sequence: chrF's characters */
	cq_spans   *spans;			/* per sequence: its tokens or words */
	cq_spans	split;			/* scratch */
	cq_cpbuf   *ids;			/* per sequence: token ids */
	cq_intern_work intern;
	cq_ngram_work ngram;
} cq_metrics_work;

/* A zeroed struct is an empty workspace; free releases everything. */
void		cq_metrics_work_free(cq_metrics_work *w);

/* Room for nseq sequences (1 + number of references). */
bool		cq_metrics_work_reserve(cq_metrics_work *w, int nseq);

/*
 * The longest text the metrics take, in bytes: positions are 32-bit, and
 * tokenization may triple a text.
 */
#define CQ_METRICS_MAX_TEXT ((size_t) 1 << 28)

/*
 * The checks every sentence metric makes on its texts: 1 .. CQ_NGRAM_MAX_REFS
 * references (CQ_EINVAL), none longer than CQ_METRICS_MAX_TEXT (CQ_ELIMIT).
 */
cq_code		cq_metrics_check_texts(size_t hyp_len, const size_t *ref_lens, int nrefs,
								   cq_error *err);

/* A metric's preprocessing of one text into sequence seq of w (false: no memory). */
typedef bool (*cq_metrics_prep_fn) (const void *opts, const char *s, size_t len,
									cq_metrics_work *w, int seq);

/*
 * Reserves w for the hypothesis and nrefs references (nrefs may be 0) and
 * preprocesses them into sequences 0 .. nrefs; CQ_ENOMEM on failure.
 */
cq_code		cq_metrics_prepare(cq_metrics_work *w, cq_metrics_prep_fn prep, const void *opts,
							   const char *hyp, size_t hyp_len, const char *const *refs,
							   const size_t *ref_lens, int nrefs, cq_error *err);

/*
 * Decode s into w->raw and lowercase it (str.lower()) if asked; returns the
 * result (w->raw or w->low), NULL when out of memory.
 */
const cq_cpbuf *cq_metrics_decode(cq_metrics_work *w, const char *s, size_t len, bool lowercase);

#endif
