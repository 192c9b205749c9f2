/* Creating, inspecting and freeing a CAV accumulation state. */
#include "cav/state_impl.h"

#include "common/mem.h"
#include "common/utf8.h"

#include <string.h>

cq_code
cav_check_token(const char *s, size_t len, cq_error *err)
{
	if (len == 0)
		return cq_fail(err, CQ_EINVAL, "empty token");
	if (len > CAV_MAX_TOKEN_BYTES)
		return cq_fail(err, CQ_EINVAL, "token of %zu bytes, above the maximum of %d",
						len, CAV_MAX_TOKEN_BYTES);
	if (!cq_utf8_valid((const uint8_t *) s, len))
		return cq_fail(err, CQ_EINVAL, "token is not valid UTF-8 or contains NUL");
	return CQ_OK;
}

cq_code
cav_state_broken(cav_state *st, cq_code rc)
{
	if (rc != CQ_OK && rc != CQ_EINVAL)
		st->failed = rc;
	return rc;
}

cq_code
cav_state_new(const cav_options *opt, size_t byte_limit, cav_state **out,
			  cq_error *err)
{
	cav_state  *st;
	cq_code		rc;

	*out = NULL;
	if (opt == NULL || opt->l_max < 1 || opt->l_max > CAV_MAX_LMAX)
		return cq_fail(err, CQ_EINVAL, "l_max must be between 1 and %d",
						CAV_MAX_LMAX);
	if (opt->n_targets && (!opt->targets || !opt->target_lens))
		return cq_fail(err, CQ_EINVAL, "restricted target set without tokens");
	for (size_t i = 0; i < opt->n_targets; i++)
	{
		rc = cav_check_token(opt->targets[i], opt->target_lens[i], err);
		if (rc)
			return rc;
	}
	st = cq_alloc0(sizeof(cav_state));
	if (st == NULL)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	st->budget.limit = byte_limit;
	st->budget.bytes = st->budget.peak = sizeof(cav_state);
	st->l_max = opt->l_max;
	for (size_t i = 0; i < opt->n_targets; i++)
	{
		uint32_t	id;

		rc = cav_dict_intern(&st->res, &st->budget, opt->targets[i],
							 opt->target_lens[i], &id, NULL, err);
		if (rc)
		{
			cav_state_free(st);
			return rc;
		}
	}
	*out = st;
	return CQ_OK;
}

void
cav_state_free(cav_state *st)
{
	if (st == NULL)
		return;
	for (uint32_t i = 0; i < st->tgt.n; i++)
		cav_cells_free(&st->mats[i], &st->budget);
	cav_budget_release(&st->budget, st->mats, (size_t) st->mats_cap * sizeof(cav_cells));
	cav_budget_release(&st->budget, st->rows, st->rows_cap * sizeof(uint32_t));
	cav_dict_free(&st->src, &st->budget);
	cav_dict_free(&st->tgt, &st->budget);
	cav_dict_free(&st->res, &st->budget);
	cq_free(st);
}

cq_code
cav_state_intern_tgt(cav_state *st, const char *s, size_t len, uint32_t *id,
					 cq_error *err)
{
	bool		added;
	cq_code		rc;

	if (st->tgt.n == st->mats_cap)
	{
		uint32_t	cap = st->mats_cap ? st->mats_cap * 2 : 64;

		rc = cav_budget_resize(&st->budget, (void **) &st->mats,
							   (size_t) st->mats_cap * sizeof(cav_cells),
							   (size_t) cap * sizeof(cav_cells), err);
		if (rc)
			return rc;
		st->mats_cap = cap;
	}
	rc = cav_dict_intern(&st->tgt, &st->budget, s, len, id, &added, err);
	if (rc)
		return rc;
	if (added)
	{
		cav_cells  *m = &st->mats[*id];

		memset(m, 0, sizeof(*m));
		m->tracked = st->res.n == 0 || cav_dict_find(&st->res, s, len) != CAV_NO_ID;
	}
	return CQ_OK;
}

size_t
cav_state_bytes(const cav_state *st)
{
	return st->budget.bytes;
}

size_t
cav_state_peak_bytes(const cav_state *st)
{
	return st->budget.peak;
}

void
cav_state_stats(const cav_state *st, cav_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->n_pairs = st->n_pairs;
	out->n_src = st->src.n;
	out->n_tgt = st->tgt.n;
	for (uint32_t i = 0; i < st->tgt.n; i++)
		if (st->mats[i].occ)
		{
			out->n_matrices++;
			out->nnz += st->mats[i].n;
		}
}
