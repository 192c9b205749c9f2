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

/*
 * x[j] += row p of that table, j < d: the very float values the table holds
 * (one routine computes both), for positions past a model's table.
 */
void		cq_sinusoid_add(float *x, int p, int d, int offset, bool half);

/*
 * The most rows a model's sinusoid table holds (model.h): positions past
 * them are computed when a token is embedded (cq_sinusoid_add), so a
 * configuration's max_positions (up to 65536) costs no memory of its own.
 * 1024 rows: every sentence of usual length reads the table; the table is
 * 4 kB per unit of d_model (2 MB at d_model 512).
 */
#define CQ_SINUSOID_TABLE_ROWS 1024

#endif
