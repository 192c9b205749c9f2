/*
 * The reproducibility signature sacreBLEU prints for a metric's options
 * (Post, 2018), e.g. "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0".
 * The version is that of the sacreBLEU whose behaviour and test vectors
 * corpq reproduces (see test/ref/sacrebleu_vectors.json).
 */
#ifndef CQ_METRICS_SIGNATURE_H
#define CQ_METRICS_SIGNATURE_H

#include <stddef.h>

#include "metrics/bleu.h"
#include "metrics/chrf.h"

#define CQ_SACREBLEU_VERSION "2.6.0"

/* Write the signature into buf (NUL-ended, truncated to size); returns the
 * length it needs, like snprintf. */
int			cq_bleu_signature(const cq_bleu_options *o, int nrefs, char *buf, size_t size);
int			cq_chrf_signature(const cq_chrf_options *o, int nrefs, char *buf, size_t size);

#endif
