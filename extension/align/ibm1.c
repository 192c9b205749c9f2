#include "align/ibm1.h"

#include <string.h>

#include "align/link_index.h"
#include "common/mem.h"

struct cq_ibm1
{
	cq_bitext_view v;
	bool		nltk_repeats;
	int			iterations;
	cq_ttable	tt;
	cq_link_index li;
	double	   *row_total;		/* [n_e + 1] sum_f c(f|e) */
	double	   *z;				/* [max target length] per-position Z_j */
	uint32_t   *scratch;		/* see cq_link_index_pair, when the index is absent */
};

cq_code
cq_ibm1_create(const cq_bitext *b, bool nltk_repeats, size_t max_index_bytes,
			   cq_ibm1 **out, cq_error *err)
{
	cq_ibm1    *m;
	int64_t		max_m = 0;
	cq_code		rc;

	*out = NULL;
	if ((rc = cq_bitext_validate(b, err)) != CQ_OK)
		return rc;
	m = cq_alloc0(sizeof(*m));
	if (!m)
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	m->v = cq_bitext_direction(b, false);
	m->nltk_repeats = nltk_repeats;
	if ((rc = cq_ttable_build_indexed(&m->tt, &m->li, &m->v, max_index_bytes, err)) != CQ_OK)
		goto fail;
	for (int64_t k = 0; k < b->n_pairs; k++)
		if (m->v.f_off[k + 1] - m->v.f_off[k] > max_m)
			max_m = m->v.f_off[k + 1] - m->v.f_off[k];
	m->row_total = cq_alloc(((size_t) m->tt.n_e + 1) * sizeof(double));
	m->z = cq_alloc(((size_t) max_m + 1) * sizeof(double));
	/* search scratch, only without the index */
	m->scratch = cq_alloc((m->li.idx ? 1 : (size_t) cq_link_index_max_pair(&m->v) + 1) *
						   sizeof(uint32_t));
	if (!m->row_total || !m->z || !m->scratch)
	{
		rc = cq_fail(err, CQ_ENOMEM, "out of memory");
		goto fail;
	}
	/* uniform over the distinct target words, i.e. the NULL row's length */
	{
		int64_t		n_tgt = m->tt.row_off[m->tt.n_e + 1] - m->tt.row_off[m->tt.n_e];
		double		init = n_tgt ? 1.0 / (double) n_tgt : 0.0;

		for (int64_t q = 0; q < m->tt.nnz; q++)
			m->tt.prob[q] = init;
	}
	*out = m;
	return CQ_OK;
fail:
	cq_ibm1_free(m);
	return rc;
}

/*
 * Z_j for each target position of a pair whose positions are L (m*(n+1)).
 * With nltk_repeats, positions sharing a word share one Z accumulated over all
 * of them in position order, as NLTK's dict keyed by word does.
 */
static void
pair_normalisers(const cq_ibm1 *m, const int32_t *f, int64_t n_f, int64_t n_e,
				 const uint32_t *L, double *z)
{
	const double *prob = m->tt.prob;
	int64_t		w = n_e + 1;

	for (int64_t j = 0; j < n_f; j++)
	{
		double		sum = 0.0;
		int64_t		first = j;

		if (m->nltk_repeats)
		{
			for (int64_t jj = 0; jj < j; jj++)
				if (f[jj] == f[j])
				{
					first = jj;
					break;
				}
			if (first < j)
			{
				z[j] = z[first];
				continue;
			}
			for (int64_t jj = j; jj < n_f; jj++)
				if (f[jj] == f[j])
					for (int64_t s = 0; s < w; s++)
						sum += prob[L[jj * w + s]];
		}
		else
			for (int64_t s = 0; s < w; s++)
				sum += prob[L[j * w + s]];
		z[j] = sum;
	}
}

cq_code
cq_ibm1_iterate(cq_ibm1 *m, const cq_align_progress *progress,
				cq_error *err)
{
	cq_ttable  *t = &m->tt;
	const cq_bitext_view *v = &m->v;

	memset(t->count, 0, (size_t) t->nnz * sizeof(double));
	memset(m->row_total, 0, ((size_t) t->n_e + 1) * sizeof(double));
	for (int64_t k = 0; k < v->n_pairs; k++)
	{
		const int32_t *e = v->e + v->e_off[k];
		const int32_t *f = v->f + v->f_off[k];
		int64_t		n_e = v->e_off[k + 1] - v->e_off[k];
		int64_t		n_f = v->f_off[k + 1] - v->f_off[k];
		const uint32_t *L = cq_link_index_pair(&m->li, t, v, k, m->scratch);

		pair_normalisers(m, f, n_f, n_e, L, m->z);
		for (int64_t j = 0; j < n_f; j++)
			for (int64_t s = 0; s <= n_e; s++)
			{
				uint32_t	q = L[j * (n_e + 1) + s];
				double		c = t->prob[q] / m->z[j];

				t->count[q] += c;
				m->row_total[s == 0 ? t->n_e : e[s - 1]] += c;
			}
		if (cq_align_progress_stop(progress, k + 1, v->n_pairs))
			return cq_fail(err, CQ_STOPPED, "stopped during iteration %d",
								 m->iterations + 1);
	}
	for (int32_t r = 0; r <= t->n_e; r++)
		for (int64_t q = t->row_off[r]; q < t->row_off[r + 1]; q++)
		{
			double		est = t->count[q] / m->row_total[r];

			t->prob[q] = est > CQ_IBM1_MIN_PROB ? est : CQ_IBM1_MIN_PROB;
		}
	if (v->n_pairs == 0)
		cq_align_progress_stop(progress, 0, 0);
	m->iterations++;
	return CQ_OK;
}

int
cq_ibm1_iterations(const cq_ibm1 *m)
{
	return m->iterations;
}

const cq_ttable *
cq_ibm1_table(const cq_ibm1 *m)
{
	return &m->tt;
}

void
cq_ibm1_viterbi(const cq_ibm1 *m, int64_t k, int32_t *out)
{
	const cq_bitext_view *v = &m->v;
	int64_t		n_e = v->e_off[k + 1] - v->e_off[k];
	int64_t		n_f = v->f_off[k + 1] - v->f_off[k];
	const uint32_t *L = cq_link_index_pair(&m->li, &m->tt, v, k, m->scratch);

	for (int64_t j = 0; j < n_f; j++)
	{
		const uint32_t *row = L + j * (n_e + 1);
		double		best = m->tt.prob[row[0]];

		if (best < CQ_IBM1_MIN_PROB)
			best = CQ_IBM1_MIN_PROB;
		out[j] = -1;
		for (int64_t i = 0; i < n_e; i++)
			if (m->tt.prob[row[i + 1]] >= best)
			{
				best = m->tt.prob[row[i + 1]];
				out[j] = (int32_t) i;
			}
	}
}

size_t
cq_ibm1_bytes(const cq_ibm1 *m)
{
	return cq_ttable_bytes(&m->tt) + cq_link_index_bytes(&m->li, m->v.n_pairs) +
		((size_t) m->tt.n_e + 1) * sizeof(double) +
		(m->li.idx ? 0 : ((size_t) cq_link_index_max_pair(&m->v) + 1) * sizeof(uint32_t));
}

void
cq_ibm1_free(cq_ibm1 *m)
{
	if (!m)
		return;
	cq_ttable_free(&m->tt);
	cq_link_index_free(&m->li);
	cq_free(m->row_total);
	cq_free(m->z);
	cq_free(m->scratch);
	cq_free(m);
}
