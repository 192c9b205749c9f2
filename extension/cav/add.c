/* Adding one sentence pair to a CAV state (paper 002, Eq. 5). */
#include "cav/state_impl.h"

#include "common/mem.h"

static cq_code
reserve_rows(cav_state *st, size_t n, cq_error *err)
{
	size_t		cap = st->rows_cap ? st->rows_cap : 256;
	cq_code		rc;

	if (n <= st->rows_cap)
		return CQ_OK;
	while (cap < n)
		cap *= 2;
	rc = cav_budget_resize(&st->budget, (void **) &st->rows,
						   st->rows_cap * sizeof(uint32_t), cap * sizeof(uint32_t), err);
	if (rc == CQ_OK)
		st->rows_cap = cap;
	return rc;
}

/* rows[0 .. n_src+n_tgt): the state row of each token of concat(src, tgt). */
static cq_code
intern_pair(cav_state *st,
			const char *const *src, const size_t *src_lens, size_t n_src,
			const char *const *tgt, const size_t *tgt_lens, size_t n_tgt,
			cq_error *err)
{
	cq_code		rc = reserve_rows(st, n_src + n_tgt, err);

	for (size_t i = 0; rc == CQ_OK && i < n_src; i++)
		rc = cav_dict_intern(&st->src, &st->budget, src[i], src_lens[i],
							 &st->rows[i], NULL, err);
	for (size_t j = 0; rc == CQ_OK && j < n_tgt; j++)
	{
		uint32_t	id;

		rc = cav_state_intern_tgt(st, tgt[j], tgt_lens[j], &id, err);
		st->rows[n_src + j] = CAV_TGT_BIT | id;
	}
	return rc;
}

/*
 * For the occurrence of target token t at concat position n_src + j, every
 * position pos <= n_src + j at distance d = n_src + j - pos < l_max adds 1 at
 * (row of the token at pos, d); d = 0 is t itself.
 */
cq_code
cav_state_add(cav_state *st,
			  const char *const *src, const size_t *src_lens, size_t n_src,
			  const char *const *tgt, const size_t *tgt_lens, size_t n_tgt,
			  cq_error *err)
{
	cq_code		rc;

	if (st->failed)
		return cq_fail(err, CQ_EINTERNAL, "CAV state unusable after an earlier error");
	for (size_t i = 0; i < n_src + n_tgt; i++)
	{
		rc = i < n_src ? cav_check_token(src[i], src_lens[i], err)
			: cav_check_token(tgt[i - n_src], tgt_lens[i - n_src], err);
		if (rc)
			return rc;
	}
	rc = intern_pair(st, src, src_lens, n_src, tgt, tgt_lens, n_tgt, err);
	if (rc)
		return cav_state_broken(st, rc);
	st->n_pairs++;
	for (size_t j = 0; j < n_tgt; j++)
	{
		size_t		at = n_src + j;
		cav_cells  *m = &st->mats[st->rows[at] & ~CAV_TGT_BIT];
		uint32_t	span = at + 1 < st->l_max ? (uint32_t) (at + 1) : st->l_max;

		if (!m->tracked)
			continue;
		rc = cav_cells_reserve(m, &st->budget, span, err);
		if (rc)
			return cav_state_broken(st, rc);
		m->occ++;
		for (uint32_t d = 0; d < span; d++)
			cav_cells_add(m, cav_cell_key(st->rows[at - d], d), 1);
	}
	return CQ_OK;
}

static int
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static size_t
split(const char *s, size_t len, const char **tok, size_t *lens)
{
	size_t		n = 0;

	for (size_t i = 0; i < len;)
	{
		size_t		start;

		while (i < len && is_space(s[i]))
			i++;
		if (i == len)
			break;
		start = i;
		while (i < len && !is_space(s[i]))
			i++;
		if (tok)
		{
			tok[n] = s + start;
			lens[n] = i - start;
		}
		n++;
	}
	return n;
}

cq_code
cav_state_add_text(cav_state *st, const char *src, size_t src_len,
				   const char *tgt, size_t tgt_len, cq_error *err)
{
	size_t		ns = split(src, src_len, NULL, NULL);
	size_t		nt = split(tgt, tgt_len, NULL, NULL);
	const char **tok = cq_alloc((ns + nt) * sizeof(char *));
	size_t	   *lens = cq_alloc((ns + nt) * sizeof(size_t));
	cq_code		rc;

	if (!tok || !lens)
		rc = cq_fail(err, CQ_ENOMEM, "out of memory splitting a pair");
	else
	{
		split(src, src_len, tok, lens);
		split(tgt, tgt_len, tok + ns, lens + ns);
		rc = cav_state_add(st, tok, lens, ns, tok + ns, lens + ns, nt, err);
	}
	cq_free(tok);
	cq_free(lens);
	return rc;
}
