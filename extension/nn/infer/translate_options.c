/* Translation options: fairseq's defaults, range checks, max_len (translate.h). */
#include <math.h>
#include <string.h>

#include "nn/infer/translate.h"

void
cq_translate_options_default(cq_translate_options *o)
{
	memset(o, 0, sizeof(*o));
	o->search = CQ_SEARCH_BEAM;
	o->beam = 5;
	o->nbest = 1;
	o->lenpen = 1.0;
	o->max_len_a = 0.0;
	o->max_len_b = 200;
	o->min_len = 1;
	o->temperature = 1.0;
}

cq_code
cq_translate_options_check(const cq_translate_options *o,
						   const cq_model_config *cfg, cq_error *err)
{
	int			v = cfg->tgt_vocab_size;

	if (o->search != CQ_SEARCH_BEAM && o->search != CQ_SEARCH_SAMPLE)
		return cq_fail(err, CQ_EINVAL, "unknown search %d", (int) o->search);
	if (o->beam < 1)
		return cq_fail(err, CQ_EINVAL, "beam must be at least 1, not %d", o->beam);
	/* fairseq takes 2 beam candidates from beam * V - 1 (never <pad>) */
	if (o->beam > (v - 1) / 2)
		return cq_fail(err, CQ_EINVAL,
						  "beam %d is too large for a target vocabulary of %d tokens (at most %d)",
						  o->beam, v, (v - 1) / 2);
	if (o->nbest < 1 || o->nbest > o->beam)
		return cq_fail(err, CQ_EINVAL, "nbest must be between 1 and beam (%d), not %d",
						  o->beam, o->nbest);
	if (!isfinite(o->lenpen))
		return cq_fail(err, CQ_EINVAL, "lenpen must be finite");
	if (!isfinite(o->max_len_a))
		return cq_fail(err, CQ_EINVAL, "max_len_a must be finite");
	if (o->max_len_b < 0)
		return cq_fail(err, CQ_EINVAL, "max_len_b must not be negative, not %d",
						  o->max_len_b);
	if (o->min_len < 0)
		return cq_fail(err, CQ_EINVAL, "min_len must not be negative, not %d", o->min_len);
	if (o->no_repeat_ngram_size < 0)
		return cq_fail(err, CQ_EINVAL, "no_repeat_ngram_size must not be negative, not %d",
						  o->no_repeat_ngram_size);
	if (!isfinite(o->unk_penalty))
		return cq_fail(err, CQ_EINVAL, "unk_penalty must be finite");
	if (!(o->temperature >= CQ_TEMPERATURE_MIN && o->temperature <= CQ_TEMPERATURE_MAX))
		return cq_fail(err, CQ_EINVAL, "temperature must be between %g and %g, not %g",
						  CQ_TEMPERATURE_MIN, CQ_TEMPERATURE_MAX, o->temperature);
	if (o->topk < 0 || o->topk > v)
		return cq_fail(err, CQ_EINVAL,
						  "topk must be between 0 (off) and the target vocabulary size %d, not %d",
						  v, o->topk);
	if (!(o->topp >= 0.0 && o->topp <= 1.0))
		return cq_fail(err, CQ_EINVAL, "topp must be between 0 (off) and 1");
	if (o->topk > 0 && o->topp > 0.0)
		return cq_fail(err, CQ_EINVAL, "topk and topp cannot be combined");
	if (o->search != CQ_SEARCH_SAMPLE && (o->topk > 0 || o->topp > 0.0))
		return cq_fail(err, CQ_EINVAL, "topk and topp apply to sampling only");
	return CQ_OK;
}

int
cq_translate_max_len(const cq_translate_options *o, const cq_model_config *cfg,
					 int src_len)
{
	double		len;

	if (src_len == 0)
		return 0;
	len = trunc(o->max_len_a * (src_len + 1) + o->max_len_b);
	if (len > cfg->max_positions - 1)
		return cfg->max_positions - 1;
	return len < 0 ? 0 : (int) len;
}
