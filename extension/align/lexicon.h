/*
 * A trained bilingual lexicon: the two fast_align directions over one pair of
 * vocabularies, and what UncSamp and the curation steps read from it.
 *
 * Scores of a sentence pair (src: n words, tgt: m words):
 *   fwd_score   = (1/m) sum_j ln sum_i p(a_j = i) t(tgt_j | src_i)   (s->t model)
 *   rev_score   = (1/n) sum_i ln sum_j p(a_i = j) t(src_i | tgt_j)   (t->s model)
 *   align_score = (fwd_score + rev_score) / 2
 *   coverage    = share of source positions with at least one link after
 *                 symmetrising both Viterbi alignments
 *   tgt_coverage = the same share of target positions (an appended or
 *                 untranslated stretch of the target lowers it, where the
 *                 source's coverage cannot see it)
 *   tgt_tail    = the mean of fwd_score's terms ln sum_i p(a_j = i) t(tgt_j | src_i)
 *                 over the target's last ceil(m/3) tokens minus their mean
 *                 over its other tokens (0 when m < 2); src_tail the same
 *                 for rev_score's terms over the source.  A translation is
 *                 explained about as well at its end as at its start; a
 *                 sentence appended to the target, or a source cut short,
 *                 leaves the target's end unexplained (tgt_tail well below
 *                 0), and the same for the source.  Averaged over the whole
 *                 side such a stretch is diluted; the alignment's links do
 *                 not see it at all (every token gets a link).
 * (fast_align's log-likelihood per generated token, without its length
 * model; words unseen in training get t = 1e-9).  An empty side gives NaN.
 */
#ifndef CQ_ALIGN_LEXICON_H
#define CQ_ALIGN_LEXICON_H

#include <stdint.h>

#include "align/fastalign.h"
#include "align/lexdict.h"
#include "align/symmetrize.h"

typedef struct cq_lexicon
{
	int32_t		src_vocab;
	int32_t		tgt_vocab;
	cq_fa_model fwd;			/* s->t: rows source ids, columns target ids */
	cq_fa_model rev;			/* t->s: rows target ids, columns source ids */
} cq_lexicon;

/* Moves the models out of a forward and a reverse trainer of one bitext. */
cq_code		cq_lexicon_from_trainers(cq_fa_trainer *fwd, cq_fa_trainer *rev,
									 cq_lexicon *out, cq_error *err);

typedef struct cq_pair_score
{
	double		align_score;
	double		fwd_score;
	double		rev_score;
	double		coverage;
	double		tgt_coverage;
	double		src_tail;
	double		tgt_tail;
	int			n_links;
} cq_pair_score;

/*
 * Force-aligns one pair with both models and symmetrises (mode); links (may
 * be NULL, else n + m entries) receives the links sorted by (s, t).
 */
cq_code		cq_lexicon_score_pair(const cq_lexicon *lx, const int32_t *src, int n,
								  const int32_t *tgt, int m, cq_sym_mode mode,
								  cq_link *links, cq_pair_score *out,
								  cq_error *err);

void		cq_lexicon_free(cq_lexicon *lx);

/*
 * UncSamp's dictionary over the trainers' bitext: each pair's Viterbi
 * alignments from the forward and reverse trainers (of the same bitext),
 * symmetrised with mode, counted into out.  The progress hook may stop it
 * (out is then empty).  Call before the models are taken.
 */
cq_code		cq_lexdict_from_trainers(const cq_fa_trainer *fwd,
									 const cq_fa_trainer *rev,
									 cq_sym_mode mode,
									 const cq_align_progress *progress,
									 cq_lexdict *out, cq_error *err);

#endif
