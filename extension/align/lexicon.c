#include "align/lexicon.h"

#include <math.h>
#include <string.h>

#include "common/mem.h"

cq_code
cq_lexicon_from_trainers(cq_fa_trainer *fwd, cq_fa_trainer *rev,
						 cq_lexicon *out, cq_error *err)
{
	memset(out, 0, sizeof(*out));
	if (cq_fa_trainer_reverse(fwd) || !cq_fa_trainer_reverse(rev))
		return cq_fail(err, CQ_EINVAL, "need a forward and a reverse trainer");
	cq_fa_trainer_take_model(fwd, &out->fwd);
	cq_fa_trainer_take_model(rev, &out->rev);
	out->src_vocab = out->fwd.tt.n_e;
	out->tgt_vocab = out->fwd.tt.n_f;
	if (out->rev.tt.n_e != out->tgt_vocab || out->rev.tt.n_f != out->src_vocab)
	{
		cq_lexicon_free(out);
		return cq_fail(err, CQ_EINVAL, "the trainers saw different vocabularies");
	}
	return CQ_OK;
}

/* Distinct source positions among links sorted by source position. */
static int
covered_sources(const cq_link *links, int n_links)
{
	int			covered = 0;

	for (int k = 0; k < n_links; k++)
		if (k == 0 || links[k].s != links[k - 1].s)
			covered++;
	return covered;
}

/* Distinct target positions among links; seen: m bytes of scratch. */
static int
covered_targets(const cq_link *links, int n_links, int m, uint8_t *seen)
{
	int			covered = 0;

	memset(seen, 0, (size_t) m);
	for (int k = 0; k < n_links; k++)
		if (!seen[links[k].t])
		{
			seen[links[k].t] = 1;
			covered++;
		}
	return covered;
}

/*
 * A side's tail against its head: the mean of the last ceil(len / 3) terms
 * of tl minus the mean of the others; 0 when len < 2 (no head).
 */
static double
tail_drop(const double *tl, int len)
{
	int			k = (len + 2) / 3,
				head = len - k;
	double		h = 0.0,
				t = 0.0;

	if (len < 2)
		return 0.0;
	for (int j = 0; j < head; j++)
		h += tl[j];
	for (int j = head; j < len; j++)
		t += tl[j];
	return t / k - h / head;
}

cq_code
cq_lexicon_score_pair(const cq_lexicon *lx, const int32_t *src, int n,
					  const int32_t *tgt, int m, cq_sym_mode mode,
					  cq_link *links, cq_pair_score *out, cq_error *err)
{
	int32_t    *a_f = NULL,
			   *a_r = NULL;
	cq_link    *lf = NULL,
			   *lr = NULL,
			   *ls = NULL;
	void	   *work = NULL;
	double	   *tl_f = NULL,
			   *tl_r = NULL;
	double		ll_f = 0.0,
				ll_r = 0.0;
	cq_code		rc;
	int			nf,
				nr,
				ns;

	memset(out, 0, sizeof(*out));
	if (n <= 0 || m <= 0)
	{
		out->align_score = out->fwd_score = out->rev_score = NAN;
		out->coverage = out->tgt_coverage = NAN;
		out->src_tail = out->tgt_tail = NAN;
		return n < 0 || m < 0 ? cq_fail(err, CQ_EINVAL, "negative sentence length") : CQ_OK;
	}
	a_f = cq_alloc((size_t) m * sizeof(int32_t));
	a_r = cq_alloc((size_t) n * sizeof(int32_t));
	lf = cq_alloc((size_t) m * sizeof(cq_link));
	lr = cq_alloc((size_t) n * sizeof(cq_link));
	ls = cq_alloc(((size_t) n + m) * sizeof(cq_link));
	work = cq_alloc(cq_symmetrize_work_bytes(n, m));
	tl_f = cq_alloc((size_t) m * sizeof(double));
	tl_r = cq_alloc((size_t) n * sizeof(double));
	if (!a_f || !a_r || !lf || !lr || !ls || !work || !tl_f || !tl_r)
	{
		rc = cq_fail(err, CQ_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = cq_fa_model_align(&lx->fwd, src, n, tgt, m, a_f, &ll_f, tl_f, err)) != CQ_OK ||
		(rc = cq_fa_model_align(&lx->rev, tgt, m, src, n, a_r, &ll_r, tl_r, err)) != CQ_OK)
		goto done;
	nf = cq_links_from_viterbi(a_f, m, true, lf);
	nr = cq_links_from_viterbi(a_r, n, false, lr);
	if ((rc = cq_symmetrize(mode, n, m, lf, nf, lr, nr, work, ls, &ns, err)) != CQ_OK)
		goto done;
	out->fwd_score = ll_f / m;
	out->rev_score = ll_r / n;
	out->align_score = 0.5 * (out->fwd_score + out->rev_score);
	out->n_links = ns;
	out->coverage = (double) covered_sources(ls, ns) / n;
	out->tgt_coverage = (double) covered_targets(ls, ns, m, (uint8_t *) work) / m;
	out->src_tail = tail_drop(tl_r, n);
	out->tgt_tail = tail_drop(tl_f, m);
	if (links)
		memcpy(links, ls, (size_t) ns * sizeof(cq_link));
	rc = CQ_OK;
done:
	cq_free(a_f);
	cq_free(a_r);
	cq_free(lf);
	cq_free(lr);
	cq_free(ls);
	cq_free(work);
	cq_free(tl_f);
	cq_free(tl_r);
	return rc;
}

void
cq_lexicon_free(cq_lexicon *lx)
{
	cq_fa_model_free(&lx->fwd);
	cq_fa_model_free(&lx->rev);
}

cq_code
cq_lexdict_from_trainers(const cq_fa_trainer *fwd, const cq_fa_trainer *rev,
						 cq_sym_mode mode,
						 const cq_align_progress *progress, cq_lexdict *out,
						 cq_error *err)
{
	cq_lexdict_builder *bld;
	int64_t		max_n = 1,
				max_m = 1;
	size_t		max_work = 1;
	int32_t    *a_f = NULL,
			   *a_r = NULL;
	cq_link    *lf = NULL,
			   *lr = NULL,
			   *ls = NULL;
	void	   *work = NULL;
	cq_code		rc;

	const cq_bitext_view *b = cq_fa_trainer_view(fwd),
			   *rb = cq_fa_trainer_view(rev);

	memset(out, 0, sizeof(*out));
	if (cq_fa_trainer_reverse(fwd) || !cq_fa_trainer_reverse(rev) ||
		b->e != rb->f || b->f != rb->e || b->n_pairs != rb->n_pairs ||
		b->e_off != rb->f_off || b->f_off != rb->e_off)
		return cq_fail(err, CQ_EINVAL, "need a forward and a reverse trainer of one bitext");
	if (cq_fa_trainer_model(fwd)->tt.row_off == NULL || cq_fa_trainer_model(rev)->tt.row_off == NULL)
		return cq_fail(err, CQ_EINVAL, "a trainer's model was already taken");
	for (int64_t k = 0; k < b->n_pairs; k++)
	{
		int64_t		n = b->e_off[k + 1] - b->e_off[k],
					m = b->f_off[k + 1] - b->f_off[k];

		max_n = n > max_n ? n : max_n;
		max_m = m > max_m ? m : max_m;
		/* the grid is per pair: size it by the largest pair, not max_n * max_m */
		if (cq_symmetrize_work_bytes((int) n, (int) m) > max_work)
			max_work = cq_symmetrize_work_bytes((int) n, (int) m);
	}
	if ((rc = cq_lexdict_builder_create(b->e_vocab, b->f_vocab, &bld, err)) != CQ_OK)
		return rc;
	a_f = cq_alloc((size_t) max_m * sizeof(int32_t));
	a_r = cq_alloc((size_t) max_n * sizeof(int32_t));
	lf = cq_alloc((size_t) max_m * sizeof(cq_link));
	lr = cq_alloc((size_t) max_n * sizeof(cq_link));
	ls = cq_alloc(((size_t) max_n + max_m) * sizeof(cq_link));
	work = cq_alloc(max_work);
	if (!a_f || !a_r || !lf || !lr || !ls || !work)
		rc = cq_fail(err, CQ_ENOMEM, "out of memory");
	for (int64_t k = 0; rc == CQ_OK && k < b->n_pairs; k++)
	{
		const int32_t *src = b->e + b->e_off[k],
				   *tgt = b->f + b->f_off[k];
		int			n = (int) (b->e_off[k + 1] - b->e_off[k]),
					m = (int) (b->f_off[k + 1] - b->f_off[k]);
		int			ns;

		cq_fa_viterbi(fwd, k, a_f);
		cq_fa_viterbi(rev, k, a_r);
		rc = cq_symmetrize(mode, n, m, lf, cq_links_from_viterbi(a_f, m, true, lf),
						   lr, cq_links_from_viterbi(a_r, n, false, lr), work, ls, &ns, err);
		if (rc == CQ_OK)
			rc = cq_lexdict_builder_add(bld, src, n, tgt, m, ls, ns, err);
		if (rc == CQ_OK && cq_align_progress_stop(progress, k + 1, b->n_pairs))
			rc = cq_fail(err, CQ_STOPPED, "stopped while counting links");
	}
	if (rc == CQ_OK)
		rc = cq_lexdict_builder_finish(bld, out, err);
	cq_lexdict_builder_free(bld);
	cq_free(a_f);
	cq_free(a_r);
	cq_free(lf);
	cq_free(lr);
	cq_free(ls);
	cq_free(work);
	return rc;
}
