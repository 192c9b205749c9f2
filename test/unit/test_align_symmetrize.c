/* grow-diag-final(-and) and friends on hand-made alignments (atools' rules). */
#include "unit.h"

#include "align/symmetrize.h"

#include <stdlib.h>

static const char *
sym(cq_sym_mode mode, int ns, int nt, const cq_link *f, int nf,
	const cq_link *r, int nr)
{
	static char buf[256];
	cq_link		out[64];
	void	   *work = malloc(cq_symmetrize_work_bytes(ns, nt));
	int			n;
	cq_code		rc = cq_symmetrize(mode, ns, nt, f, nf, r, nr, work, out, &n, NULL);

	free(work);
	if (rc != CQ_OK)
		return "error";
	cq_links_format(out, n, buf, sizeof(buf));
	return buf;
}

/*
 * 3 source x 4 target words.  forward (s->t) 0-0 0-1 2-2, reverse 0-0 2-3.
 * intersection {0-0}; union adds 0-1, 2-2, 2-3.
 * grow-diag: 0-1 has its target unaligned and neighbour 0-0 -> added; 2-2 and
 *   2-3 have no aligned neighbour (1-1, 1-2, 1-3, 2-1 ... are all empty) -> stop.
 * final: forward's 2-2 (both words unaligned) added; then reverse's 2-3, whose
 *   target is unaligned -> added by "final", refused by "final-and" (its source
 *   is now aligned).
 */
TEST(symmetrize_final_versus_final_and)
{
	const cq_link f[] = {{0, 0}, {0, 1}, {2, 2}};
	const cq_link r[] = {{0, 0}, {2, 3}};

	CHECK_STR_EQ(sym(CQ_SYM_INTERSECT, 3, 4, f, 3, r, 2), "0-0");
	CHECK_STR_EQ(sym(CQ_SYM_UNION, 3, 4, f, 3, r, 2), "0-0 0-1 2-2 2-3");
	CHECK_STR_EQ(sym(CQ_SYM_GROW_DIAG, 3, 4, f, 3, r, 2), "0-0 0-1");
	CHECK_STR_EQ(sym(CQ_SYM_GROW_DIAG_FINAL, 3, 4, f, 3, r, 2), "0-0 0-1 2-2 2-3");
	CHECK_STR_EQ(sym(CQ_SYM_GROW_DIAG_FINAL_AND, 3, 4, f, 3, r, 2), "0-0 0-1 2-2");
}

/*
 * Growth runs backwards along a diagonal: intersection {3-3}, union adds
 * 0-0 1-1 2-2.  Sweep 1 (in (s,t) order) only finds 2-2 next to 3-3, sweep 2
 * adds 1-1, sweep 3 adds 0-0.
 */
TEST(symmetrize_grow_repeats_sweeps)
{
	const cq_link f[] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}};
	const cq_link r[] = {{3, 3}};

	CHECK_STR_EQ(sym(CQ_SYM_GROW_DIAG, 4, 4, f, 4, r, 1), "0-0 1-1 2-2 3-3");
	CHECK_STR_EQ(sym(CQ_SYM_INTERSECT, 4, 4, f, 4, r, 1), "3-3");
}

/*
 * A union point whose two words are both aligned already is never added:
 * forward 0-0 1-1, reverse 0-1 1-1; intersection {1-1}.  0-0 (source 0
 * unaligned, diagonal neighbour 1-1) is added; then 0-1 joins two aligned
 * words -> refused by grow and by both finals.
 */
TEST(symmetrize_grow_needs_an_unaligned_word)
{
	const cq_link f[] = {{0, 0}, {1, 1}};
	const cq_link r[] = {{0, 1}, {1, 1}};

	CHECK_STR_EQ(sym(CQ_SYM_GROW_DIAG, 2, 2, f, 2, r, 2), "0-0 1-1");
	CHECK_STR_EQ(sym(CQ_SYM_GROW_DIAG_FINAL, 2, 2, f, 2, r, 2), "0-0 1-1");
	CHECK_STR_EQ(sym(CQ_SYM_UNION, 2, 2, f, 2, r, 2), "0-0 0-1 1-1");
}

TEST(symmetrize_viterbi_links_and_errors)
{
	const int32_t fwd[] = {1, -1, 0};	/* target j -> source */
	const int32_t rev[] = {0, 0};		/* source i -> target */
	cq_link		lf[3],
				lr[2];
	int			nf = cq_links_from_viterbi(fwd, 3, true, lf);
	int			nr = cq_links_from_viterbi(rev, 2, false, lr);
	const cq_link bad[] = {{2, 0}};
	cq_error err = {0};
	cq_link		out[4];
	char		work[64];
	char		small[8];
	int			n = -1;

	CHECK_INT_EQ(nf, 2);
	CHECK_INT_EQ(nr, 2);
	CHECK_STR_EQ(sym(CQ_SYM_UNION, 2, 3, lf, nf, lr, nr), "0-0 0-2 1-0");
	CHECK_INT_EQ(cq_symmetrize(CQ_SYM_UNION, 2, 3, bad, 1, lr, nr, work, out, &n, &err),
				 CQ_EINVAL);
	CHECK_INT_EQ(n, 0);
	CHECK(strstr(err.msg, "outside") != NULL);
	cq_links_format(lf, nf, small, sizeof(small));
	CHECK_STR_EQ(small, "1-0 0-2");
	cq_links_format(lf, nf, small, 5);
	CHECK_STR_EQ(small, "1-0");
}
