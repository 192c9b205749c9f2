/* A BPE model: interned symbols and the ranked merge table. */
#include "text/bpe.h"

#include <string.h>

#include "common/mem.h"

cq_code
cq_bpe_init(cq_bpe *bpe, int version)
{
	memset(bpe, 0, sizeof(*bpe));
	bpe->version = version;
	if (cq_strmap_init(&bpe->syms, 256) != CQ_OK ||
		cq_pairmap_init(&bpe->ranks, 256) != CQ_OK)
	{
		cq_bpe_free(bpe);
		return CQ_ENOMEM;
	}
	return CQ_OK;
}

void
cq_bpe_free(cq_bpe *bpe)
{
	cq_strmap_free(&bpe->syms);
	cq_pairmap_free(&bpe->ranks);
	cq_free(bpe->left);
	cq_free(bpe->right);
	cq_free(bpe->merged);
	memset(bpe, 0, sizeof(*bpe));
}

static int
valid_symbol(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] == ' ' || s[i] == '\n' || s[i] == '\0')
			return 0;
	return 1;
}

static cq_code
grow_merges(cq_bpe *bpe)
{
	int32_t		cap = bpe->cap_merges ? bpe->cap_merges * 2 : 256;
	int32_t    *l = cq_realloc(bpe->left, cap * sizeof(int32_t));

	if (!l)
		return CQ_ENOMEM;
	bpe->left = l;
	int32_t    *r = cq_realloc(bpe->right, cap * sizeof(int32_t));

	if (!r)
		return CQ_ENOMEM;
	bpe->right = r;
	int32_t    *m = cq_realloc(bpe->merged, cap * sizeof(int32_t));

	if (!m)
		return CQ_ENOMEM;
	bpe->merged = m;
	bpe->cap_merges = cap;
	return CQ_OK;
}

cq_code
cq_bpe_add_merge(cq_bpe *bpe, const char *left, size_t llen,
				 const char *right, size_t rlen, cq_error *err)
{
	if (!valid_symbol(left, llen) || !valid_symbol(right, rlen))
		return cq_fail(err, CQ_EINVAL,
							"merge %d has an empty symbol or one containing a space",
							bpe->n_merges + 1);
	if (bpe->n_merges == INT32_MAX - 1)
		return cq_fail(err, CQ_ERANGE, "too many merges");
	if (bpe->n_merges == bpe->cap_merges && grow_merges(bpe) != CQ_OK)
		return cq_fail(err, CQ_ENOMEM, "out of memory");

	char	   *cat = cq_alloc(llen + rlen);

	if (!cat)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	memcpy(cat, left, llen);
	memcpy(cat + llen, right, rlen);
	int64_t		l,
				r,
				m;
	cq_code		rc = cq_strmap_intern(&bpe->syms, left, llen, &l, NULL);

	if (rc == CQ_OK)
		rc = cq_strmap_intern(&bpe->syms, right, rlen, &r, NULL);
	if (rc == CQ_OK)
		rc = cq_strmap_intern(&bpe->syms, cat, llen + rlen, &m, NULL);
	cq_free(cat);
	if (rc == CQ_ENOMEM)
		return cq_fail(err, rc, "out of memory");
	if (rc != CQ_OK || m > INT32_MAX)
		return cq_fail(err, CQ_ELIMIT, "merge %d: too many symbols", bpe->n_merges + 1);
	/* a repeated pair keeps its first (lowest) rank, as in apply_bpe.py */
	if (cq_pairmap_put_new(&bpe->ranks, (int32_t) l, (int32_t) r, bpe->n_merges, NULL) != CQ_OK)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	bpe->left[bpe->n_merges] = (int32_t) l;
	bpe->right[bpe->n_merges] = (int32_t) r;
	bpe->merged[bpe->n_merges] = (int32_t) m;
	bpe->n_merges++;
	return CQ_OK;
}
