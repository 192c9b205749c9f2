#include "align/bitext.h"

#include <stddef.h>

static cq_code
check_side(const char *name, const int32_t *tok, const int64_t *off,
		   int64_t n_pairs, int32_t vocab, cq_error *err)
{
	if (off == NULL || (tok == NULL && n_pairs > 0 && off[n_pairs] > 0))
		return cq_fail(err, CQ_EINVAL, "%s arrays are missing", name);
	if (off[0] != 0)
		return cq_fail(err, CQ_EINVAL, "%s offsets must start at 0", name);
	for (int64_t k = 0; k < n_pairs; k++)
		if (off[k + 1] < off[k])
			return cq_fail(err, CQ_EINVAL,
								 "%s offsets decrease at pair %lld", name, (long long) k);
	for (int64_t p = 0; p < off[n_pairs]; p++)
		if (tok[p] < 0 || tok[p] >= vocab)
			return cq_fail(err, CQ_EINVAL,
								 "%s token %lld has id %d outside vocabulary of %d",
								 name, (long long) p, tok[p], vocab);
	return CQ_OK;
}

cq_code
cq_bitext_validate(const cq_bitext *b, cq_error *err)
{
	cq_code		rc;

	if (b == NULL || b->n_pairs < 0 || b->src_vocab < 0 || b->tgt_vocab < 0)
		return cq_fail(err, CQ_EINVAL, "invalid bitext header");
	/* ids must fit the uint32 column type with room for the NULL row */
	if (b->src_vocab >= INT32_MAX - 1 || b->tgt_vocab >= INT32_MAX - 1)
		return cq_fail(err, CQ_EINVAL, "vocabulary too large");
	rc = check_side("source", b->src, b->src_off, b->n_pairs, b->src_vocab, err);
	if (rc == CQ_OK)
		rc = check_side("target", b->tgt, b->tgt_off, b->n_pairs, b->tgt_vocab, err);
	return rc;
}

cq_bitext_view
cq_bitext_direction(const cq_bitext *b, bool reverse)
{
	cq_bitext_view v;

	v.n_pairs = b->n_pairs;
	v.e = reverse ? b->tgt : b->src;
	v.e_off = reverse ? b->tgt_off : b->src_off;
	v.f = reverse ? b->src : b->tgt;
	v.f_off = reverse ? b->src_off : b->tgt_off;
	v.e_vocab = reverse ? b->tgt_vocab : b->src_vocab;
	v.f_vocab = reverse ? b->src_vocab : b->tgt_vocab;
	return v;
}
