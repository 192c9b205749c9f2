#include "align/fastalign.h"

#include <math.h>
#include <string.h>

#include "align/diagonal.h"
#include "common/mem.h"

double
cq_fa_prior(const cq_fa_params *par, int j1, int m, int n, double *w)
{
	double		p_null = par->use_null ? par->p0 : 0.0;

	if (par->favor_diagonal)
	{
		double		z = cq_diag_row(w, j1, m, n, par->tension);
		double		scale = (1.0 - p_null) / z;

		for (int i = 0; i < n; i++)
			w[i] *= scale;
		return p_null;
	}
	for (int i = 0; i < n; i++)
		w[i] = 1.0 / (n + par->use_null);
	return par->use_null ? 1.0 / (n + 1) : 0.0;
}

/* t(f|e) as the model sees it: flat before training, 1e-9 when unseen. */
static inline double
model_t(const cq_fa_model *md, int32_t e, int32_t f)
{
	if (!md->probs_ready || e < 0 || e > md->tt.n_e)
		return CQ_FA_UNSEEN_PROB;
	return cq_ttable_prob_or(&md->tt, e, f, CQ_FA_UNSEEN_PROB);
}

cq_code
cq_fa_model_align(const cq_fa_model *md, const int32_t *e, int n,
				  const int32_t *f, int m, int32_t *a, double *loglik,
				  double *token_ll, cq_error *err)
{
	double		stackbuf[256];
	double	   *w = stackbuf;
	double		ll = 0.0;

	if (n < 0 || m < 0)
		return cq_fail(err, CQ_EINVAL, "negative sentence length");
	if (n > 256 && !(w = cq_alloc((size_t) n * sizeof(double))))
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	for (int j = 0; j < m; j++)
	{
		double		p0 = n ? cq_fa_prior(&md->par, j + 1, m, n, w) :
			(md->par.use_null ? 1.0 : 0.0);
		double		best,
					sum;
		int32_t		arg = -1;

		best = md->par.use_null ? p0 * model_t(md, md->tt.n_e, f[j]) : -1.0;
		sum = md->par.use_null ? best : 0.0;
		for (int i = 0; i < n; i++)
		{
			/* an id outside the vocabulary must not reach the NULL row */
			int32_t		ei = (e[i] >= 0 && e[i] < md->tt.n_e) ? e[i] : -1;
			double		p = w[i] * model_t(md, ei, f[j]);

			sum += p;
			if (p > best)
			{
				best = p;
				arg = i;
			}
		}
		if (a)
			a[j] = arg;
		if (token_ll)
			token_ll[j] = log(sum);
		ll += log(sum);
	}
	if (w != stackbuf)
		cq_free(w);
	if (loglik)
		*loglik = ll;
	return CQ_OK;
}

void
cq_fa_model_free(cq_fa_model *md)
{
	cq_ttable_free(&md->tt);
}
