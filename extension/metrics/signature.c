#include "metrics/signature.h"

#include <stdio.h>

/* floor and add-k carry their value, formatted as Python's f'{v:.2f}'
 * (printf's %.2f rounds the same way: correctly, ties to even). */
int
cq_bleu_signature(const cq_bleu_options *o, int nrefs, char *buf, size_t size)
{
	char		smooth[64];

	if (o->smooth == CQ_SMOOTH_FLOOR || o->smooth == CQ_SMOOTH_ADD_K)
		snprintf(smooth, sizeof(smooth), "%s[%.2f]", cq_bleu_smooth_name(o->smooth), o->smooth_value);
	else
		snprintf(smooth, sizeof(smooth), "%s", cq_bleu_smooth_name(o->smooth));
	return snprintf(buf, size, "nrefs:%d|case:%s|eff:%s|tok:%s|smooth:%s|version:%s",
					nrefs, o->lowercase ? "lc" : "mixed", o->effective_order ? "yes" : "no",
					cq_tokenizer_name(o->tokenize), smooth, CQ_SACREBLEU_VERSION);
}

/* "eff" is yes when the effective order (not epsilon smoothing) is used. */
int
cq_chrf_signature(const cq_chrf_options *o, int nrefs, char *buf, size_t size)
{
	return snprintf(buf, size, "nrefs:%d|case:%s|eff:%s|nc:%d|nw:%d|space:%s|version:%s",
					nrefs, o->lowercase ? "lc" : "mixed", o->eps_smoothing ? "no" : "yes",
					o->char_order, o->word_order, o->whitespace ? "yes" : "no",
					CQ_SACREBLEU_VERSION);
}
