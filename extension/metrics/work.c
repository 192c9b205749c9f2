#include "metrics/work.h"

#include <string.h>

#include "common/mem.h"
#include "metrics/unicode.h"

void
cq_metrics_work_free(cq_metrics_work *w)
{
	cq_cpbuf_free(&w->raw);
	cq_cpbuf_free(&w->low);
	cq_cpbuf_free(&w->tmp);
	for (int i = 0; i < w->nseq; i++)
	{
		cq_cpbuf_free(&w->text[i]);
		cq_cpbuf_free(&w->chars[i]);
		cq_spans_free(&w->spans[i]);
		cq_cpbuf_free(&w->ids[i]);
	}
	cq_free(w->text);
	cq_free(w->chars);
	cq_spans_free(&w->split);
	cq_free(w->spans);
	cq_free(w->ids);
	cq_intern_work_free(&w->intern);
	cq_ngram_work_free(&w->ngram);
	memset(w, 0, sizeof(*w));
}

/* Grow one array of nseq zeroed structs of size sz to n. */
static bool
grow(void **arr, int old_n, int n, size_t sz)
{
	void	   *a = *arr ? cq_realloc(*arr, n * sz) : cq_alloc(n * sz);

	if (a == NULL)
		return false;
	memset((char *) a + old_n * sz, 0, (n - old_n) * sz);
	*arr = a;
	return true;
}

bool
cq_metrics_work_reserve(cq_metrics_work *w, int nseq)
{
	if (nseq <= w->nseq)
		return true;
	if (!grow((void **) &w->text, w->nseq, nseq, sizeof(cq_cpbuf)) ||
		!grow((void **) &w->chars, w->nseq, nseq, sizeof(cq_cpbuf)) ||
		!grow((void **) &w->ids, w->nseq, nseq, sizeof(cq_cpbuf)))
		return false;
	if (!grow((void **) &w->spans, w->nseq, nseq, sizeof(cq_spans)))
		return false;
	w->nseq = nseq;
	return true;
}

const cq_cpbuf *
cq_metrics_decode(cq_metrics_work *w, const char *s, size_t len, bool lowercase)
{
	if (!cq_cpbuf_from_utf8(&w->raw, s, len))
		return NULL;
	if (!lowercase)
		return &w->raw;
	if (!cq_uc_lower_cps(&w->low, w->raw.v, w->raw.n))
		return NULL;
	return &w->low;
}

cq_code
cq_metrics_check_texts(size_t hyp_len, const size_t *ref_lens, int nrefs, cq_error *err)
{
	if (nrefs < 1 || nrefs > CQ_NGRAM_MAX_REFS)
		return cq_fail(err, CQ_EINVAL, "the number of references must be between 1 and %d, not %d",
					   CQ_NGRAM_MAX_REFS, nrefs);
	for (int r = -1; r < nrefs; r++)
		if ((r < 0 ? hyp_len : ref_lens[r]) > CQ_METRICS_MAX_TEXT)
			return cq_fail(err, CQ_ELIMIT, "a text of %zu bytes is longer than the metrics take (%zu)",
						   r < 0 ? hyp_len : ref_lens[r], CQ_METRICS_MAX_TEXT);
	return CQ_OK;
}

cq_code
cq_metrics_prepare(cq_metrics_work *w, cq_metrics_prep_fn prep, const void *opts,
				   const char *hyp, size_t hyp_len, const char *const *refs,
				   const size_t *ref_lens, int nrefs, cq_error *err)
{
	if (!cq_metrics_work_reserve(w, nrefs + 1) || !prep(opts, hyp, hyp_len, w, 0))
		return cq_fail(err, CQ_ENOMEM, "out of memory");
	for (int r = 0; r < nrefs; r++)
		if (!prep(opts, refs[r], ref_lens[r], w, r + 1))
			return cq_fail(err, CQ_ENOMEM, "out of memory");
	return CQ_OK;
}
