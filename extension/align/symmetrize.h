/*
 * Symmetrisation of two directional word alignments of one sentence pair,
 * following fast_align's atools (Koehn et al.'s grow-diag-final(-and)):
 *   start from the intersection; "grow-diag" repeatedly sweeps the union's
 *   remaining points in (s, t) order and adds a point when one of its 8
 *   neighbours is aligned and its source or its target word is still
 *   unaligned, until a sweep adds nothing; "final" then sweeps the forward
 *   alignment's points, then the reverse one's, adding a point whose source
 *   or target word is unaligned; "final-and" requires both to be unaligned.
 * Links are (source position, target position), 0-based, as Pharaoh i-j.
 */
#ifndef CQ_ALIGN_SYMMETRIZE_H
#define CQ_ALIGN_SYMMETRIZE_H

#include <stddef.h>
#include <stdint.h>

#include "align/progress.h"

typedef struct cq_link
{
	int32_t		s;
	int32_t		t;
} cq_link;

typedef enum cq_sym_mode
{
	CQ_SYM_INTERSECT,
	CQ_SYM_UNION,
	CQ_SYM_GROW_DIAG,
	CQ_SYM_GROW_DIAG_FINAL,
	CQ_SYM_GROW_DIAG_FINAL_AND,
} cq_sym_mode;

/*
 * Links of a Viterbi vector: a[x] is the position aligned to x or -1.
 * With target_indexed (s->t model, x = target position) links are (a[x], x),
 * otherwise (x, a[x]).  out needs len entries; returns the count.
 */
int			cq_links_from_viterbi(const int32_t *a, int len, bool target_indexed,
								  cq_link *out);

/* Bytes of work space cq_symmetrize needs for an n_src x n_tgt pair. */
size_t		cq_symmetrize_work_bytes(int n_src, int n_tgt);

/*
 * Symmetrises fwd (s->t) and rev (t->s) links; out needs n_fwd + n_rev
 * entries and receives the result sorted by (s, t), *n_out links.
 * CQ_EINVAL for a link outside the sentence.
 */
cq_code		cq_symmetrize(cq_sym_mode mode, int n_src, int n_tgt,
						  const cq_link *fwd, int n_fwd,
						  const cq_link *rev, int n_rev,
						  void *work, cq_link *out, int *n_out, cq_error *err);

/* Pharaoh "s-t s-t ..." text of links into buf (NUL-terminated, truncated to cap). */
size_t		cq_links_format(const cq_link *links, int n, char *buf, size_t cap);

#endif
