#include "align/fastalign.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "align/diagonal.h"
#include "align/digamma.h"
#include "align/link_index.h"
#include "common/mem.h"

/* Pairs of equal lengths (m, n) share the prior; the tension step sums over them. */
typedef struct size_class
{
	int			m,
				n;
	int64_t		w_off;			/* into nonnull[]: m entries */
} size_class;

struct cq_fa_trainer
{
	cq_fa_options opt;
	cq_bitext_view v;
	cq_fa_model md;
	cq_link_index li;
	int32_t    *class_of;		/* [n_pairs] size class, -1 for skipped pairs */
	size_class *classes;
	int32_t		n_classes;
	double	   *nonnull;		/* [sum of m] non-NULL posterior mass per (class, j) */
	double	   *w;				/* [max n + 1] prior of one position */
	double	   *post;			/* [max n + 1] */
	uint32_t   *scratch;		/* see cq_link_index_pair, when the index is absent */
	cq_fa_stats st;
	bool		taken;
};

void
cq_fa_options_default(cq_fa_options *o)
{
	memset(o, 0, sizeof(*o));
	o->init.tension = 4.0;
	o->init.p0 = 0.08;
	o->init.favor_diagonal = true;
	o->init.use_null = true;
	o->iterations = 5;
	o->optimize_tension = true;
	o->alpha = 0.01;
	o->max_index_bytes = (size_t) 1 << 30;
}

typedef struct keyed
{
	int64_t		key;
	int64_t		k;
} keyed;

static int
cmp_keyed(const void *a, const void *b)
{
	const keyed *x = a,
			   *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->k > y->k) - (x->k < y->k);
}

/* Groups the trainable pairs by (m, n). */
static cq_code
build_classes(cq_fa_trainer *tr, cq_error *err)
{
	const cq_bitext_view *v = &tr->v;
	keyed	   *ks = cq_alloc(((size_t) v->n_pairs + 1) * sizeof(keyed));
	int64_t		nk = 0,
				w_total = 0;

	tr->class_of = cq_alloc(((size_t) v->n_pairs + 1) * sizeof(int32_t));
	tr->classes = cq_alloc(((size_t) v->n_pairs + 1) * sizeof(size_class));
	if (!ks || !tr->class_of || !tr->classes)
	{
		cq_free(ks);
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	}
	for (int64_t k = 0; k < v->n_pairs; k++)
	{
		int64_t		n = v->e_off[k + 1] - v->e_off[k];
		int64_t		m = v->f_off[k + 1] - v->f_off[k];

		tr->class_of[k] = -1;
		if (n == 0 || m == 0)
		{
			tr->st.skipped_pairs++;
			continue;
		}
		if (n > INT32_MAX / 2 || m > INT32_MAX / 2)
		{
			cq_free(ks);
			return cq_fail(err, CQ_EINVAL, "sentence of pair %lld too long", (long long) k);
		}
		ks[nk].key = (m << 32) | n;
		ks[nk++].k = k;
		tr->st.n_tokens += (double) m;
	}
	qsort(ks, nk, sizeof(keyed), cmp_keyed);
	tr->n_classes = 0;
	for (int64_t q = 0; q < nk; q++)
	{
		if (q == 0 || ks[q].key != ks[q - 1].key)
		{
			size_class *c = &tr->classes[tr->n_classes++];

			c->m = (int) (ks[q].key >> 32);
			c->n = (int) (ks[q].key & 0xffffffff);
			c->w_off = w_total;
			w_total += c->m;
		}
		tr->class_of[ks[q].k] = tr->n_classes - 1;
	}
	cq_free(ks);
	tr->nonnull = cq_alloc(((size_t) w_total + 1) * sizeof(double));
	if (!tr->nonnull)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	return CQ_OK;
}

cq_code
cq_fa_trainer_create(const cq_bitext *b, const cq_fa_options *o,
					 cq_fa_trainer **out, cq_error *err)
{
	cq_fa_trainer *tr;
	int64_t		max_n = 0;
	cq_code		rc;

	*out = NULL;
	if ((rc = cq_bitext_validate(b, err)) != CQ_OK)
		return rc;
	if (!(o->init.p0 >= 0.0 && o->init.p0 < 1.0) || !(o->alpha > 0.0) ||
		!(o->init.tension > 0.0 && o->init.tension <= CQ_FA_MAX_TENSION) ||
		o->iterations < 1)
		return cq_fail(err, CQ_EINVAL, "invalid fast_align options");
	tr = cq_alloc0(sizeof(*tr));
	if (!tr)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	tr->opt = *o;
	tr->md.par = o->init;
	tr->v = cq_bitext_direction(b, o->reverse);
	if ((rc = cq_ttable_build_indexed(&tr->md.tt, &tr->li, &tr->v, o->max_index_bytes, err)) != CQ_OK ||
		(rc = build_classes(tr, err)) != CQ_OK)
		goto fail;
	for (int64_t k = 0; k < b->n_pairs; k++)
		if (tr->v.e_off[k + 1] - tr->v.e_off[k] > max_n)
			max_n = tr->v.e_off[k + 1] - tr->v.e_off[k];
	tr->w = cq_alloc(((size_t) max_n + 1) * sizeof(double));
	tr->post = cq_alloc(((size_t) max_n + 1) * sizeof(double));
	/* search scratch, only without the index */
	tr->scratch = cq_alloc((tr->li.idx ? 1 : (size_t) cq_link_index_max_pair(&tr->v) + 1) *
						   sizeof(uint32_t));
	if (!tr->w || !tr->post || !tr->scratch)
	{
		rc = cq_fail(err, CQ_ENOMEM, "out of memory");
		goto fail;
	}
	*out = tr;
	return CQ_OK;
fail:
	cq_fa_trainer_free(tr);
	return rc;
}

/* E-step over one pair; adds to counts and the pass's accumulators. */
static void
estep_pair(cq_fa_trainer *tr, int64_t k, double *ll, double *c0, double *emp)
{
	const cq_bitext_view *v = &tr->v;
	cq_ttable  *t = &tr->md.tt;
	const cq_fa_params *par = &tr->md.par;
	int			n = (int) (v->e_off[k + 1] - v->e_off[k]);
	int			m = (int) (v->f_off[k + 1] - v->f_off[k]);
	const uint32_t *L = cq_link_index_pair(&tr->li, t, v, k, tr->scratch);
	double	   *nonnull = tr->nonnull + tr->classes[tr->class_of[k]].w_off;
	double	   *w = tr->w,
			   *post = tr->post;
	bool		ready = tr->md.probs_ready;
	bool		authors = tr->opt.tension_rule == CQ_FA_TENSION_FAST_ALIGN;

	for (int j = 0; j < m; j++)
	{
		const uint32_t *row = L + (int64_t) j * (n + 1);
		int			jh = authors ? j : j + 1;	/* their feature uses 0-based j */
		double		w0 = cq_fa_prior(par, j + 1, m, n, w);
		double		p0 = par->use_null ? w0 * (ready ? t->prob[row[0]] : CQ_FA_UNSEEN_PROB) : 0.0;
		double		sum = p0,
					inv;

		for (int i = 0; i < n; i++)
		{
			post[i] = w[i] * (ready ? t->prob[row[i + 1]] : CQ_FA_UNSEEN_PROB);
			sum += post[i];
		}
		inv = 1.0 / sum;
		if (par->use_null)
		{
			t->count[row[0]] += p0 * inv;
			*c0 += p0 * inv;
		}
		for (int i = 0; i < n; i++)
		{
			double		p = post[i] * inv;

			t->count[row[i + 1]] += p;
			if (par->favor_diagonal)
				*emp += p * cq_diag_feature(i + 1, jh, m, n);
		}
		nonnull[j] += authors ? 1.0 : 1.0 - p0 * inv;
		*ll += log(sum);
	}
}

/* Gradient steps on lambda (see fastalign.h); emp is sum_tokens E_post[h]. */
static void
optimize_tension(cq_fa_trainer *tr, double emp)
{
	double	   *u = tr->w;
	double	   *lambda = &tr->md.par.tension;

	for (int step = 0; step < 8; step++)
	{
		double		mod = 0.0;

		for (int32_t c = 0; c < tr->n_classes; c++)
		{
			const size_class *sc = &tr->classes[c];

			for (int j = 0; j < sc->m; j++)
				if (tr->nonnull[sc->w_off + j] != 0.0)
					mod += tr->nonnull[sc->w_off + j] *
						(tr->opt.tension_rule == CQ_FA_TENSION_FAST_ALIGN ?
						 cq_diag_authors_feature(u, j + 1, sc->m, sc->n, *lambda) :
						 cq_diag_expected_feature(u, j + 1, sc->m, sc->n, *lambda));
		}
		*lambda += 20.0 * (emp - mod) / tr->st.n_tokens;
		if (*lambda < 0.1)
			*lambda = 0.1;
		if (*lambda > 14.0)
			*lambda = 14.0;
	}
}

/* M-step, row by row: maximum likelihood or variational Bayes. */
static void
mstep(cq_fa_trainer *tr)
{
	cq_ttable  *t = &tr->md.tt;
	bool		vb = tr->opt.variational_bayes;
	double		alpha = tr->opt.alpha;

	for (int32_t r = 0; r <= t->n_e; r++)
	{
		int64_t		lo = t->row_off[r],
					hi = t->row_off[r + 1];
		double		tot = 0.0;

		for (int64_t q = lo; q < hi; q++)
			tot += t->count[q] + (vb ? alpha : 0.0);
		if (tot == 0.0)
			tot = 1.0;
		if (vb)
		{
			double		dg = cq_digamma(tot);

			for (int64_t q = lo; q < hi; q++)
				t->prob[q] = exp(cq_digamma(t->count[q] + alpha) - dg);
		}
		else
			for (int64_t q = lo; q < hi; q++)
				t->prob[q] = t->count[q] / tot;
	}
	tr->md.probs_ready = true;
}

cq_code
cq_fa_iterate(cq_fa_trainer *tr, const cq_align_progress *progress,
			  cq_error *err)
{
	const cq_bitext_view *v = &tr->v;
	cq_ttable  *t = &tr->md.tt;
	double		ll = 0.0,
				c0 = 0.0,
				emp = 0.0;
	int64_t		w_total = tr->n_classes ? tr->classes[tr->n_classes - 1].w_off +
		tr->classes[tr->n_classes - 1].m : 0;

	if (tr->taken)
		return cq_fail(err, CQ_EINVAL, "the model was taken from this trainer");
	memset(t->count, 0, (size_t) t->nnz * sizeof(double));
	memset(tr->nonnull, 0, ((size_t) w_total + 1) * sizeof(double));
	for (int64_t k = 0; k < v->n_pairs; k++)
	{
		if (tr->class_of[k] >= 0)
			estep_pair(tr, k, &ll, &c0, &emp);
		if (cq_align_progress_stop(progress, k + 1, v->n_pairs))
			return cq_fail(err, CQ_STOPPED, "stopped during pass %d",
								 tr->st.passes + 1);
	}
	if (v->n_pairs == 0 && cq_align_progress_stop(progress, 0, 0))
		return cq_fail(err, CQ_STOPPED, "stopped");
	/* the first pass saw a flat t, so its posteriors say nothing about lambda */
	if (tr->md.par.favor_diagonal && tr->opt.optimize_tension &&
		tr->md.probs_ready && tr->st.n_tokens > 0)
		optimize_tension(tr, emp);
	mstep(tr);
	tr->st.passes++;
	tr->st.loglik = ll;
	tr->st.posterior_p0 = tr->st.n_tokens > 0 ? c0 / tr->st.n_tokens : 0.0;
	tr->st.emp_feat = tr->st.n_tokens > 0 ? emp / tr->st.n_tokens : 0.0;
	return CQ_OK;
}

cq_code
cq_fa_train(cq_fa_trainer *tr, const cq_align_progress *progress,
			cq_error *err)
{
	while (tr->st.passes < tr->opt.iterations - 1)
	{
		cq_code		rc = cq_fa_iterate(tr, progress, err);

		if (rc != CQ_OK)
			return rc;
	}
	return CQ_OK;
}

const cq_fa_model *
cq_fa_trainer_model(const cq_fa_trainer *tr)
{
	return &tr->md;
}

void
cq_fa_trainer_stats(const cq_fa_trainer *tr, cq_fa_stats *out)
{
	*out = tr->st;
	out->bytes = cq_ttable_bytes(&tr->md.tt) +
		cq_link_index_bytes(&tr->li, tr->v.n_pairs) +
		((size_t) tr->v.n_pairs + 1) * sizeof(int32_t) +
		(size_t) tr->n_classes * sizeof(size_class);
}

bool
cq_fa_trainer_reverse(const cq_fa_trainer *tr)
{
	return tr->opt.reverse;
}

const cq_bitext_view *
cq_fa_trainer_view(const cq_fa_trainer *tr)
{
	return &tr->v;
}

void
cq_fa_viterbi(const cq_fa_trainer *tr, int64_t k, int32_t *a)
{
	const cq_bitext_view *v = &tr->v;
	const cq_ttable *t = &tr->md.tt;
	const cq_fa_params *par = &tr->md.par;
	int			n = (int) (v->e_off[k + 1] - v->e_off[k]);
	int			m = (int) (v->f_off[k + 1] - v->f_off[k]);
	const uint32_t *L;
	bool		ready = tr->md.probs_ready;

	if (n == 0 || m == 0 || tr->taken)
	{
		for (int j = 0; j < m; j++)
			a[j] = -1;
		return;
	}
	L = cq_link_index_pair(&tr->li, t, v, k, tr->scratch);
	for (int j = 0; j < m; j++)
	{
		const uint32_t *row = L + (int64_t) j * (n + 1);
		double		w0 = cq_fa_prior(par, j + 1, m, n, tr->w);
		double		best = par->use_null ? w0 * (ready ? t->prob[row[0]] : CQ_FA_UNSEEN_PROB) : -1.0;

		a[j] = -1;
		for (int i = 0; i < n; i++)
		{
			double		p = tr->w[i] * (ready ? t->prob[row[i + 1]] : CQ_FA_UNSEEN_PROB);

			if (p > best)
			{
				best = p;
				a[j] = i;
			}
		}
	}
}

void
cq_fa_trainer_take_model(cq_fa_trainer *tr, cq_fa_model *out)
{
	*out = tr->md;
	cq_free(out->tt.count);
	out->tt.count = NULL;
	memset(&tr->md.tt, 0, sizeof(tr->md.tt));
	tr->taken = true;
}

void
cq_fa_trainer_free(cq_fa_trainer *tr)
{
	if (!tr)
		return;
	cq_fa_model_free(&tr->md);
	cq_link_index_free(&tr->li);
	cq_free(tr->class_of);
	cq_free(tr->classes);
	cq_free(tr->nonnull);
	cq_free(tr->w);
	cq_free(tr->post);
	cq_free(tr->scratch);
	cq_free(tr);
}
