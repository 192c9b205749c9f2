/*
 * IBM Model 1 with a NULL source word, trained by EM exactly as NLTK's
 * nltk.translate.ibm1.IBMModel1 computes it:
 *   - t(f|e) starts uniform at 1 / (number of distinct target words);
 *   - E-step per pair: for target word f_j and source s in [NULL, e_1..e_n],
 *     c(f_j|s) += t(f_j|s) / Z_j with Z_j = sum_s t(f_j|s);
 *   - M-step: t(f|e) = max(c(f|e) / sum_f' c(f'|e), 1e-12).
 * NLTK keys Z by word, so a target word occurring r times in a pair gets
 * Z = r * sum_s t(f|s) and contributes one count per pair in total; with
 * nltk_repeats the core reproduces that (and NLTK's summation order, so the
 * tables agree to the last bit), without it every occurrence counts once
 * (the textbook model).
 * Viterbi: for each j, start from max(t(f_j|NULL), 1e-12) unaligned, and take
 * source position i when t(f_j|e_i) >= the best so far (ties go to the later
 * position), as NLTK's align() does.
 */
#ifndef CQ_ALIGN_IBM1_H
#define CQ_ALIGN_IBM1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "align/bitext.h"
#include "align/progress.h"
#include "align/ttable.h"

#define CQ_IBM1_MIN_PROB 1.0e-12

typedef struct cq_ibm1 cq_ibm1;

/* The bitext is borrowed until cq_ibm1_free.  max_index_bytes: see link_index.h. */
cq_code		cq_ibm1_create(const cq_bitext *b, bool nltk_repeats,
						   size_t max_index_bytes, cq_ibm1 **out, cq_error *err);

/* One EM iteration; CQ_STOPPED leaves the table as it was. */
cq_code		cq_ibm1_iterate(cq_ibm1 *m, const cq_align_progress *progress,
							cq_error *err);

int			cq_ibm1_iterations(const cq_ibm1 *m);

/* The table: rows are source words, row n_e is NULL, columns target words. */
const cq_ttable *cq_ibm1_table(const cq_ibm1 *m);

/*
 * out[j] = source position aligned to target position j of pair k, or -1.
 * Uses the model's scratch space: not for concurrent calls on one model.
 */
void		cq_ibm1_viterbi(const cq_ibm1 *m, int64_t k, int32_t *out);

/* Bytes of the table, the link index and scratch space. */
size_t		cq_ibm1_bytes(const cq_ibm1 *m);

void		cq_ibm1_free(cq_ibm1 *m);

#endif
