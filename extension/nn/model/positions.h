/* Position embeddings. */
#ifndef CQ_NN_POSITIONS_H
#define CQ_NN_POSITIONS_H

#include <stdbool.h>

/*
 * Sinusoids in [sin | cos] halves: with h = d/2 and
 * f_i = exp(-i ln(10000) / (h - 1)) (fairseq, native Marian; f_0 = 1 when
 * h = 1) or, with half, f_i = exp(-i ln(10000) / h) (Hugging Face Marian),
 *   table[p][i] = sin((p + offset) f_i),  table[p][h + i] = cos(...),
 * 0 <= i < h: row p is the position of token p of a sentence (fairseq's
 * offset is padding_idx + 1 = 2).  table is [n_positions, d]; d even.
 */
void		cq_sinusoid_table(float *table, int n_positions, int d, int offset, bool half);

#endif
